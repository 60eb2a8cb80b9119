package redisstore

import "testing"

func TestSuccessor(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"a", "b", true},
		{"task:", "task;", true},
		{"a\xff", "b", true},
		{"\xff\xff", "", false},
		{"", "", false},
	} {
		got, ok := successor(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("successor(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

package rules

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestRecordPush(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	bob, dave, robert := User{ID: 2, Login: "bob"}, User{ID: 4, Login: "dave"}, User{ID: 2, Login: "robert"}
	push := func(by User, ref, after string, age time.Duration, commits ...string) Push {
		return Push{By: by, Ref: ref, After: after, Commits: commits, At: now.Add(-age)}
	}
	many := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("c%03d", i)
		}
		return out
	}
	cases := []struct {
		name    string
		have    []Push
		add     Push
		changed bool
		want    []string // after@by of what is kept, oldest first
		commits int      // commits kept of the push added (-1: not checked)
	}{
		{name: "first push", add: push(bob, "refs/heads/wip", "b", 0, "a", "b"), changed: true, want: []string{"b@bob"}, commits: 1},
		{name: "a copy: no commits, its tip", have: []Push{push(bob, "refs/heads/wip", "b", time.Hour, "a")},
			add: push(dave, "refs/heads/login", "b", 0), changed: true, want: []string{"b@bob", "b@dave"}, commits: 0},
		{name: "redelivered", have: []Push{push(bob, "refs/heads/wip", "b", time.Hour, "a")},
			add: push(bob, "refs/heads/wip", "b", 0, "a"), want: []string{"b@bob"}, commits: -1},
		{name: "the same account renamed, redelivered", have: []Push{push(bob, "refs/heads/wip", "b", time.Hour, "a")},
			add: push(robert, "refs/heads/wip", "b", 0, "a"), want: []string{"b@bob"}, commits: -1},
		{name: "the same tip to another ref", have: []Push{push(bob, "refs/heads/wip", "b", time.Hour)},
			add: push(bob, "refs/heads/wip2", "b", 0), changed: true, want: []string{"b@bob", "b@bob"}, commits: 0},
		{name: "by no one", add: push(User{}, "refs/heads/wip", "b", 0, "a"), commits: -1},
		{name: "a deletion", add: push(bob, "refs/heads/wip", "", 0), commits: -1},
		{name: "too many commits: the oldest kept", add: push(bob, "refs/heads/big", "tip", 0, many(MaxPushCommits+10)...),
			changed: true, want: []string{"tip@bob"}, commits: MaxPushCommits},
		{name: "expired dropped", have: []Push{push(bob, "refs/heads/old", "o", PushTTL+time.Hour), push(dave, "refs/heads/x", "x", PushTTL-time.Hour)},
			add: push(bob, "refs/heads/wip", "b", 0), changed: true, want: []string{"x@dave", "b@bob"}, commits: 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := fmt.Sprint(c.have)
			out, changed := RecordPush(c.have, c.add, now)
			var got []string
			for _, p := range out {
				got = append(got, p.After+"@"+p.By.Login)
			}
			if changed != c.changed || !slices.Equal(got, c.want) {
				t.Fatalf("changed %v, kept %v; want %v, %v", changed, got, c.changed, c.want)
			}
			if c.commits >= 0 && len(out[len(out)-1].Commits) != c.commits {
				t.Fatalf("%d commits kept of the push, want %d: %v", len(out[len(out)-1].Commits), c.commits, out[len(out)-1].Commits)
			}
			if c.commits == MaxPushCommits && out[0].Commits[0] != "c000" {
				t.Fatalf("the oldest commits are not the ones kept: %v", out[0].Commits[:3])
			}
			if fmt.Sprint(c.have) != before {
				t.Fatal("the pushes given were changed in place")
			}
		})
	}
}

// The bounds: at most MaxPushes pushes, MaxPushShas commit ids in all; the
// oldest go first, never the push just added.
func TestRecordPushBounds(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var pushes []Push
	for i := range MaxPushes + 5 {
		pushes, _ = RecordPush(pushes, Push{By: User{ID: int64(i + 1), Login: fmt.Sprint("u", i)}, After: fmt.Sprint("t", i), At: now}, now)
	}
	if len(pushes) != MaxPushes || pushes[0].After != "t5" || pushes[len(pushes)-1].After != fmt.Sprint("t", MaxPushes+4) {
		t.Fatalf("%d pushes kept, from %s to %s", len(pushes), pushes[0].After, pushes[len(pushes)-1].After)
	}
	commits := make([]string, MaxPushCommits)
	for i := range commits {
		commits[i] = fmt.Sprint("c", i)
	}
	for i := range MaxPushShas / MaxPushCommits * 2 {
		pushes, _ = RecordPush(pushes, Push{By: User{ID: 1, Login: "u"}, After: fmt.Sprint("big", i), Commits: commits, At: now}, now)
	}
	shas := 0
	for _, p := range pushes {
		shas += 1 + len(p.Commits)
	}
	if shas > MaxPushShas || pushes[len(pushes)-1].After != fmt.Sprint("big", MaxPushShas/MaxPushCommits*2-1) {
		t.Fatalf("%d commit ids kept (bound %d), newest %s", shas, MaxPushShas, pushes[len(pushes)-1].After)
	}
	// One push over every bound alone is kept.
	huge, _ := RecordPush(nil, Push{By: User{ID: 1, Login: "u"}, After: "h", Commits: commits, At: now}, now)
	if len(huge) != 1 {
		t.Fatalf("the push added was dropped: %v", huge)
	}
}

func TestPushersOf(t *testing.T) {
	bob, dave, erin := User{ID: 2, Login: "bob"}, User{ID: 4, Login: "dave"}, User{ID: 5, Login: "erin"}
	pushes := []Push{
		{By: bob, Ref: "refs/heads/wip", After: "b", Commits: []string{"a"}},
		{By: dave, Ref: "refs/heads/login", After: "b"},
		{By: erin, Ref: "refs/heads/docs", After: "d", Commits: []string{"c"}},
		{By: bob, Ref: "refs/heads/wip", After: "e"},
	}
	cases := []struct {
		carried []string
		want    []User
	}{
		{carried: []string{"a", "b", "x"}, want: []User{bob, dave}}, // tips and commits; bob once
		{carried: []string{"a", "x"}, want: []User{bob}},            // a commit of bob's push, not its tip
		{carried: []string{"c"}, want: []User{erin}},
		{carried: []string{"x"}},
		{},
	}
	for _, c := range cases {
		shas := map[string]bool{}
		for _, s := range c.carried {
			shas[s] = true
		}
		if got := PushersOf(pushes, shas); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("carrying %v: %v, want %v", c.carried, got, c.want)
		}
	}
}

// BenchmarkRecordPush is the cost of recording one push into a full record
// (MaxPushes pushes of two commits), with its JSON decoding and encoding, as
// each push webhook pays it (app/decide: recordPush).
func BenchmarkRecordPush(b *testing.B) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var pushes []Push
	for i := range MaxPushes {
		pushes = append(pushes, Push{By: User{ID: int64(10000000 + i), Login: fmt.Sprint("someone", i)}, Ref: "refs/heads/feature-" + fmt.Sprint(i),
			After: fmt.Sprintf("%040x", i), Commits: []string{fmt.Sprintf("%040x", i+1<<40)}, At: now})
	}
	raw, err := json.Marshal(pushes)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	b.ReportMetric(float64(len(raw)), "record-bytes")
	for i := range b.N {
		var have []Push
		if err := json.Unmarshal(raw, &have); err != nil {
			b.Fatal(err)
		}
		next, _ := RecordPush(have, Push{By: User{ID: 1, Login: "bob"}, After: fmt.Sprintf("%040x", 1<<50+i), At: now}, now)
		if _, err := json.Marshal(next); err != nil {
			b.Fatal(err)
		}
	}
}

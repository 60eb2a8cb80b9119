package mcpdemo

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestPlay(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := Play(ctx, &out, testing.Verbose()); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"alice → approve_task", "refused (still review): @alice built this task", "bob   → verify_task", "accepted: now verified", "The goal is verified"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the demo does not say %q:\n%s", want, out.String())
		}
	}
	t.Log(out.String())
}

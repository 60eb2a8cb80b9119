package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/app/store/bolt"
)

func TestDeadlettersListAndRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "countersign.db")
	s, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"d-1", "d-2"} {
		if _, err := s.Accept(ctx, store.Delivery{ID: id, Event: "issues", Key: "acme/widgets#" + id, Payload: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
		c, err := s.Claim(ctx, "test", time.Minute)
		if err != nil || c == nil {
			t.Fatalf("claim: %v %v", c, err)
		}
		if err := s.DeadLetter(ctx, c, "GitHub said no"); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()

	var out, errb bytes.Buffer
	if code := run([]string{"deadletters", "--data", path, "list"}, &out, &errb); code != 0 {
		t.Fatalf("list exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"ID", "d-1", "d-2", "acme/widgets#d-1", "GitHub said no"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("list output lacks %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	if code := run([]string{"deadletters", "--data", path, "retry", "d-2"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "requeued d-2") {
		t.Fatalf("retry d-2: exit %d, %q %q", code, out.String(), errb.String())
	}
	if code := run([]string{"deadletters", "--data", path, "retry", "nope"}, &out, &errb); code != 1 {
		t.Fatalf("retry of an unknown id exited %d, want 1", code)
	}
	out.Reset()
	if code := run([]string{"deadletters", "--data", path, "retry", "--all"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "requeued d-1") {
		t.Fatalf("retry --all: exit %d, %q", code, out.String())
	}

	s, err = bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.Stats(ctx)
	if err != nil || st.Queued != 2 || st.DeadLetters != 0 {
		t.Fatalf("after retry: %+v, %v", st, err)
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"deadletters", "--data", path}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "usage") {
		t.Fatalf("no verb: exit %d, %q", code, errb.String())
	}
}

package effects

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/countersign/countersign/app/store/bolt"
)

// Two replicas sharing a store write the check on one commit one at a time:
// while one holds the commit's write lock, the other cannot take it (its
// wait ends with its context), and takes it once the first lets go. Within
// one process, two writers of the same commit take turns in the same way.
func TestCheckWriteLock(t *testing.T) {
	st, err := bolt.Open(filepath.Join(t.TempDir(), "countersign.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	replica := func(owner string) *Executor {
		x := &Executor{store: st, log: log}
		x.SetOwner(owner)
		return x
	}
	a, b := replica("replica-a"), replica("replica-b")
	ctx := context.Background()
	const repo, sha = "acme/widgets", "0123456789abcdef0123456789abcdef01234567"

	for _, tc := range []struct {
		name   string
		holder *Executor
		other  *Executor
	}{
		{"another replica", a, b},
		{"the same process", a, a},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unlock, err := tc.holder.lockCheck(ctx, repo, sha)
			if err != nil {
				t.Fatal(err)
			}
			short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			_, err = tc.other.lockCheck(short, repo, sha)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("took the lock another writer holds (err %v)", err)
			}
			unlock()
			again, err := tc.other.lockCheck(ctx, repo, sha)
			if err != nil {
				t.Fatalf("the lock let go is not taken: %v", err)
			}
			again()
		})
	}
	// Another commit's lock is free meanwhile (unless it shares the stripe).
	unlock, err := a.lockCheck(ctx, repo, sha)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	for i := range 8 {
		other := sha[:39] + string(rune('0'+i))
		if stripeOf(repo, other) == stripeOf(repo, sha) {
			continue
		}
		free, err := b.lockCheck(ctx, repo, other)
		if err != nil {
			t.Fatal(err)
		}
		free()
		return
	}
	t.Fatal("no commit outside the first one's stripe")
}

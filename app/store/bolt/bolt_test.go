package bolt_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/app/store/bolt"
	"github.com/countersign/countersign/app/store/storetest"
)

func openBolt(t testing.TB, path string) *bolt.Store {
	t.Helper()
	s, err := bolt.Open(path)
	if err != nil {
		t.Fatalf("bolt.Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestBolt(t *testing.T) {
	t.Parallel()
	storetest.Run(t,
		func(t *testing.T) store.Store { return openBolt(t, filepath.Join(t.TempDir(), "store.db")) },
		storetest.WithReopen(func(t *testing.T) (store.Store, func(t *testing.T) store.Store) {
			path := filepath.Join(t.TempDir(), "store.db")
			return openBolt(t, path), func(t *testing.T) store.Store { return openBolt(t, path) }
		}),
	)
}

func TestBoltCreatesDirectory(t *testing.T) {
	t.Parallel()
	s := openBolt(t, filepath.Join(t.TempDir(), "a", "b", "store.db"))
	if err := s.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestBoltSecondOpenFails(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "store.db")
	openBolt(t, path)
	start := time.Now()
	s2, err := bolt.Open(path)
	if err == nil {
		s2.Close()
		t.Fatalf("second bolt.Open of a file in use succeeded")
	}
	if !strings.Contains(err.Error(), "locked") || time.Since(start) > 10*time.Second {
		t.Fatalf("second bolt.Open = %v after %s; want a quick 'locked' error", err, time.Since(start))
	}
}

// A restarted process owns the file exclusively, so the dead process's leases
// are dropped at once instead of after their ttl.
func TestBoltRestartReleasesLeases(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, id := range []string{"a", "b"} {
		if _, err := s.Accept(ctx, store.Delivery{ID: id, Key: "k-" + id}); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if c, err := s.Claim(ctx, "dead", time.Hour); err != nil || c == nil {
			t.Fatalf("Claim = %v, %v", c, err)
		}
	}
	if ok, err := s.Lease(ctx, "heal", "dead", time.Hour); err != nil || !ok {
		t.Fatalf("Lease = %v, %v", ok, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openBolt(t, path)
	for _, want := range []string{"k-a", "k-b"} {
		c, err := s.Claim(ctx, "new", time.Minute)
		if err != nil || c == nil || c.Key != want {
			t.Fatalf("Claim after restart = %+v, %v; want %s at once", c, err, want)
		}
	}
	if st, err := s.Stats(ctx); err != nil || st != (store.Stats{Queued: 2, Keys: 2}) {
		t.Fatalf("Stats = %+v, %v", st, err)
	}
	// Named leases too: the restarted process heals at once.
	if ok, err := s.Lease(ctx, "heal", "new", time.Minute); err != nil || !ok {
		t.Fatalf("Lease after restart = %v, %v; want it at once", ok, err)
	}
}

func TestBoltSeenIDsExpireAndArePurged(t *testing.T) {
	t.Parallel()
	s := openBolt(t, filepath.Join(t.TempDir(), "store.db"))
	bolt.SetSeenTTL(s, 3*time.Second) // long enough for 100 fsynced accepts on a loaded machine
	ctx := t.Context()
	accept := func(id string) bool {
		t.Helper()
		ok, err := s.Accept(ctx, store.Delivery{ID: id, Key: "k"})
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	count := func() int {
		t.Helper()
		n, m, err := bolt.SeenCount(s)
		if err != nil {
			t.Fatal(err)
		}
		if n != m {
			t.Fatalf("seen buckets disagree: %d ids, %d by time", n, m)
		}
		return n
	}
	for i := range 100 {
		if !accept("old-" + string(rune('A'+i%26)) + string(rune('a'+i/26))) {
			t.Fatal("new id refused")
		}
	}
	if accept("old-Aa") {
		t.Fatal("duplicate accepted within the ttl")
	}
	if n := count(); n != 100 {
		t.Fatalf("%d seen ids, want 100", n)
	}
	time.Sleep(3300 * time.Millisecond)
	if !accept("old-Aa") { // expired: accepted again (and purged a batch)
		t.Fatal("expired id refused")
	}
	if n := count(); n >= 100 {
		t.Fatalf("%d seen ids after a purge, want fewer than 100", n)
	}
	for i := range 5 {
		accept("new-" + string(rune('a'+i)))
	}
	if n := count(); n != 6 {
		t.Fatalf("%d seen ids, want 6 (old ones purged in bounded batches)", n)
	}
	if accept("old-Aa") {
		t.Fatal("re-accepted id is not remembered again")
	}
}

func TestBoltClosed(t *testing.T) {
	t.Parallel()
	s, err := bolt.Open(filepath.Join(t.TempDir(), "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Accept(ctx, store.Delivery{ID: "a", Key: "k"}); err != nil {
		t.Fatal(err)
	}
	c, err := s.Claim(ctx, "x", time.Minute)
	if err != nil || c == nil {
		t.Fatal(c, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Accept(ctx, store.Delivery{ID: "b", Key: "k"}); err == nil {
		t.Error("Accept after Close: err = nil")
	}
	if _, err := s.Claim(ctx, "x", time.Minute); err == nil {
		t.Error("Claim after Close: err = nil")
	}
	if err := s.Commit(ctx, c, store.Commit{}); err == nil {
		t.Error("Commit after Close: err = nil")
	}
	if _, err := s.Get(ctx, "r"); err == nil || errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get after Close = %v, want a closed error", err)
	}
	if _, err := s.Stats(ctx); err == nil {
		t.Error("Stats after Close: err = nil")
	}
	if err := s.Ping(ctx); err == nil {
		t.Error("Ping after Close: err = nil")
	}
}

func openBoltBench(b *testing.B) store.Store {
	return openBolt(b, filepath.Join(b.TempDir(), "store.db"))
}

func BenchmarkAcceptBolt(b *testing.B)      { storetest.BenchAccept(b, openBoltBench) }
func BenchmarkClaimCommitBolt(b *testing.B) { storetest.BenchClaimCommit(b, openBoltBench) }

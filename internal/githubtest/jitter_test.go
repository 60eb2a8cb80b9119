package githubtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// received records the X-GitHub-Delivery ids a receiver got, in arrival order.
type received struct {
	mu  sync.Mutex
	ids []string
}

func (r *received) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.ids = append(r.ids, req.Header.Get("X-GitHub-Delivery"))
	r.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

func sentIDs(s *Server) []string {
	var out []string
	for _, d := range s.Deliveries() {
		out = append(out, d.ID)
	}
	return out
}

// With jitter, every webhook is sent after its own delay: close ones arrive
// out of order, and WaitWebhooks waits for all of them.
func TestJitterSendsOutOfOrderAndWaitWaitsForAll(t *testing.T) {
	s := New(Options{})
	t.Cleanup(s.Close)
	rec := &received{}
	hook := httptest.NewServer(rec)
	t.Cleanup(hook.Close)
	s.AddRepo("acme/widgets", 7)
	s.SetWebhook(hook.URL, []byte("secret"))
	s.SetWebhookJitter(42, 200*time.Millisecond)
	for i := 0; i < 12; i++ {
		s.OpenIssue("acme/widgets", "carol", "task", "")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.WaitWebhooks(ctx); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	got := slices.Clone(rec.ids)
	rec.mu.Unlock()
	want := sentIDs(s)
	if len(got) != len(want) {
		t.Fatalf("WaitWebhooks returned with %d of %d webhooks received", len(got), len(want))
	}
	if slices.Equal(got, want) {
		t.Fatalf("12 jittered webhooks arrived in the order they were queued")
	}
	sorted, all := slices.Clone(got), slices.Clone(want)
	slices.Sort(sorted)
	slices.Sort(all)
	if !slices.Equal(sorted, all) {
		t.Fatalf("received %v, want each of %v once", got, want)
	}
}

// Held webhooks are let go in the order given.
func TestHeldWebhooksReordered(t *testing.T) {
	s := New(Options{})
	t.Cleanup(s.Close)
	rec := &received{}
	hook := httptest.NewServer(rec)
	t.Cleanup(hook.Close)
	s.AddRepo("acme/widgets", 7)
	s.SetWebhook(hook.URL, []byte("secret"))
	s.SetWebhookPaused(true)
	for i := 0; i < 3; i++ {
		s.OpenIssue("acme/widgets", "carol", "task", "")
	}
	held := s.HeldWebhooks()
	if len(held) != 3 {
		t.Fatalf("%d webhooks held, want 3", len(held))
	}
	if err := s.ReorderHeldWebhooks([]int{2, 2, 0}); err == nil {
		t.Fatal("an order that is no permutation was taken")
	}
	if err := s.ReorderHeldWebhooks([]int{2, 0, 1}); err != nil {
		t.Fatal(err)
	}
	s.SetWebhookPaused(false)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.WaitWebhooks(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{held[2].ID, held[0].ID, held[1].ID}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !slices.Equal(rec.ids, want) {
		t.Fatalf("received %v, want %v", rec.ids, want)
	}
}

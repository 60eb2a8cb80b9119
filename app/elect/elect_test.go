package elect_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/app/elect"
	"github.com/countersign/countersign/app/store/bolt"
)

// Two replicas on one store: only the lease holder works, at once and then
// every interval.
func TestOneReplicaWorks(t *testing.T) {
	st, err := bolt.Open(filepath.Join(t.TempDir(), "e.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	var runs [2]atomic.Int64
	var wg sync.WaitGroup
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			elect.Loop(ctx, st, log, "job", []string{"a", "b"}[i], 100*time.Millisecond, func(context.Context) { runs[i].Add(1) })
		}()
	}
	time.Sleep(time.Second)
	cancel()
	wg.Wait()
	a, b := runs[0].Load(), runs[1].Load()
	if (a == 0) == (b == 0) || a+b < 5 {
		t.Fatalf("runs %d and %d; want one replica working about every 100ms", a, b)
	}
}

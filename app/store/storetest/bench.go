package storetest

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/app/store"
)

var benchPayload = []byte(`{"action":"opened","issue":{"number":12,"title":"a typical small webhook payload","body":"` +
	"lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore" + `"}}`)

func benchDelivery(id string, key int) store.Delivery {
	return store.Delivery{
		ID:      id,
		Event:   "issues",
		Key:     fmt.Sprintf("owner/repo#%d", key),
		Payload: benchPayload,
	}
}

// BenchAccept measures Accept, sequentially and from parallel goroutines.
func BenchAccept(b *testing.B, open func(b *testing.B) store.Store) {
	b.Run("sequential", func(b *testing.B) {
		s := open(b)
		ctx := b.Context()
		b.ResetTimer()
		for i := range b.N {
			if ok, err := s.Accept(ctx, benchDelivery(fmt.Sprintf("seq-%d", i), i%512)); err != nil || !ok {
				b.Fatalf("Accept = %v, %v", ok, err)
			}
		}
		reportRate(b)
	})
	b.Run("parallel", func(b *testing.B) {
		s := open(b)
		ctx := b.Context()
		var n atomic.Int64
		b.SetParallelism(8) // 8 × GOMAXPROCS goroutines, like concurrent webhook requests
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := n.Add(1)
				if ok, err := s.Accept(ctx, benchDelivery(fmt.Sprintf("par-%d", i), int(i%512))); err != nil || !ok {
					b.Errorf("Accept = %v, %v", ok, err)
					return
				}
			}
		})
		reportRate(b)
	})
}

// seed queues n deliveries over keys keys, quickly: as derived deliveries of a
// few Commits. The seed deliveries are accepted first so that they are claimed
// before any seeded key.
func seed(b *testing.B, s store.Store, n, keys int) {
	ctx := b.Context()
	const batch = 2000
	for i := 0; i*batch < n; i++ {
		if _, err := s.Accept(ctx, store.Delivery{ID: fmt.Sprintf("seed-%d", i), Key: fmt.Sprintf("seed-%d", i), Event: "seed"}); err != nil {
			b.Fatal(err)
		}
	}
	for done := 0; done < n; done += batch {
		c, err := s.Claim(ctx, "seed", time.Minute)
		if err != nil || c == nil || c.Key != fmt.Sprintf("seed-%d", done/batch) {
			b.Fatalf("seed claim = %+v, %v", c, err)
		}
		w := store.Commit{Enqueue: make([]store.Delivery, min(n-done, batch))}
		for i := range w.Enqueue {
			w.Enqueue[i] = benchDelivery(fmt.Sprintf("d-%d", done+i), (done+i)%keys)
		}
		if err := s.Commit(ctx, c, w); err != nil {
			b.Fatal(err)
		}
		if err := s.Release(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
}

// process claims, commits (one record, one effect), applies the effect and
// releases one delivery.
func process(b *testing.B, s store.Store, owner string) bool {
	ctx := b.Context()
	c, err := s.Claim(ctx, owner, time.Minute)
	if err != nil {
		b.Error(err)
		return false
	}
	if c == nil {
		return false
	}
	if c.Delivery != nil {
		err = s.Commit(ctx, c, store.Commit{
			Records: map[string][]byte{"task:" + c.Key: c.Delivery.Payload},
			Effects: [][]byte{[]byte(`{"comment":"` + c.Delivery.ID + `"}`)},
		})
		if err != nil {
			b.Error(err)
			return false
		}
	}
	if err := s.PopEffect(ctx, c); err != nil {
		b.Error(err)
		return false
	}
	if err := s.Release(ctx, c); err != nil {
		b.Error(err)
		return false
	}
	return true
}

// BenchClaimCommit measures the processing of one delivery (Claim, Commit,
// PopEffect, Release).
func BenchClaimCommit(b *testing.B, open func(b *testing.B) store.Store) {
	b.Run("sequential", func(b *testing.B) {
		s := open(b)
		seed(b, s, b.N, 256)
		b.ResetTimer()
		for range b.N {
			if !process(b, s, "bench") {
				b.Fatal("nothing to claim")
			}
		}
		reportRate(b)
	})
	b.Run("parallel", func(b *testing.B) {
		s := open(b)
		seed(b, s, b.N, 256)
		b.SetParallelism(4)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				for !process(b, s, "bench") {
					if b.Failed() {
						return
					}
					time.Sleep(100 * time.Microsecond) // all ready keys are held by others
				}
			}
		})
		reportRate(b)
	})
}

func reportRate(b *testing.B) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, "deliveries/s")
	}
}

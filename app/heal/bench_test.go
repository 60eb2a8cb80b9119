package heal_test

import (
	"context"
	"testing"
	"time"

	"github.com/countersign/countersign/app/heal"
)

// The requests a heal pass costs when the log holds n deliveries it has not
// seen (none failed), and again when it has seen them all.
//
//	go test -run '^$' -bench HealPass -benchtime 5x ./app/heal/
func BenchmarkHealPass(b *testing.B) {
	for _, n := range []int{0, 1000} {
		b.Run(map[int]string{0: "empty-log", 1000: "1000-deliveries"}[n], func(b *testing.B) {
			r := newBenchRig(b)
			if n > 0 {
				r.comments(n - 1) // the issue and n-1 comments
			}
			var first, again heal.Result
			for i := 0; i < b.N; i++ {
				h := r.healer(heal.Config{})
				if err := r.store.Put(context.Background(), "heal/state", []byte(`{}`)); err != nil {
					b.Fatal(err)
				}
				var err error
				if first, err = h.Pass(context.Background()); err != nil {
					b.Fatal(err)
				}
				if again, err = h.Pass(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(first.Requests), "requests/first-pass")
			b.ReportMetric(float64(again.Requests), "requests/next-pass")
			b.ReportMetric(float64(first.Scanned), "deliveries-read")
		})
	}
}

// The time from the first heal pass to 100 missed deliveries taken in again
// (redelivered by GitHub and accepted by the receiver's store).
//
//	go test -run '^$' -bench Heal100Missed -benchtime 5x ./app/heal/
func BenchmarkHeal100Missed(b *testing.B) {
	var total time.Duration
	var requests int
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		r := newBenchRig(b)
		r.gh.SetBotDown(true)
		r.comments(99)
		r.gh.SetBotDown(false)
		h := r.healer(heal.Config{})
		b.StartTimer()
		start := time.Now()
		res, err := h.Pass(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		for {
			if g, _ := r.receivedCounts(); g == 100 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		total += time.Since(start)
		requests += res.Requests
		b.StopTimer()
		if res.Redelivered != 100 {
			b.Fatalf("redelivered %d; want 100", res.Redelivered)
		}
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/100-healed")
	b.ReportMetric(float64(requests)/float64(b.N), "requests/100-healed")
}

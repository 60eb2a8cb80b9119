package app_test

import (
	"bytes"
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/app/store/bolt"
	"github.com/countersign/countersign/internal/githubtest"
)

// BenchmarkWebhookTo202 measures the time from sending a signed issue_comment
// delivery to receiving the bot's 202 (the delivery durably queued), over real
// HTTP, and reports p50 and p99 besides the mean.
func BenchmarkWebhookTo202(b *testing.B) {
	b.Run("bolt", func(b *testing.B) {
		benchIntake(b, func(b *testing.B) store.Store {
			s, err := bolt.Open(filepath.Join(b.TempDir(), "bench.db"))
			if err != nil {
				b.Fatal(err)
			}
			return s
		})
	})
}

func benchIntake(b *testing.B, open func(*testing.B) store.Store) {
	gh := newGitHub(githubtest.Options{})
	defer gh.Close()
	h := startHarness(b, gh, open(b))
	payload := fixture(b, "issue_comment/created.payload.json")
	sig := signature(payload, testSecret)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req, _ := http.NewRequest(http.MethodPost, h.url+"/webhook", bytes.NewReader(payload))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "issue_comment")
		req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("bench-%d-%d", b.N, i))
		req.Header.Set("X-Hub-Signature-256", sig)
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		lat = append(lat, time.Since(start))
		if resp.StatusCode != http.StatusAccepted {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

package app_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/app/store/bolt"
	"github.com/countersign/countersign/app/store/redistest"
	"github.com/countersign/countersign/internal/githubtest"
)

// memTasks is how many issues BenchmarkMemory10kTasks drives through the bot.
const memTasks = 10000

// BenchmarkMemory10kTasks opens memTasks issues on the fake GitHub, lets one
// bot (tpWorkers workers, Info-level logging) turn every one into a tracked
// task (state:pending and a card), then measures the process's memory. It does
// the whole run once whatever b.N is: run it with -benchtime 1x, e.g.
//
//	go test -run '^$' -bench 'Memory10kTasks' -benchtime 1x -timeout 30m ./app/
//
// The fake GitHub lives in the same process and keeps every issue, comment,
// webhook payload and API request it saw, so the process figures are split by
// shutting the bot down (closing its store) and measuring again:
//
//	rss-MB, rss-anon-MB, rss-file-MB  VmRSS, RssAnon, RssFile of /proc/self/status
//	                                  with the 10k tasks tracked (whole process)
//	heap-MB                           runtime HeapInuse then (whole process; spans
//	                                  in use, fragmentation included)
//	live-MB                           runtime HeapAlloc then: bytes of live objects
//	base-rss-MB, base-heap-MB         the same before the fake and the bot started
//	bot-rss-MB, bot-heap-MB,          what shutting the bot down gave back: the bot's
//	bot-live-MB                       share (RSS includes its bolt file's mapped pages)
//	fake-heap-MB, fake-live-MB        heap left after that, minus the base: the fake's share
//	db-MB                             bolt: the database file's size
//	redis-MB                          redis: redis-server's used_memory (another process)
//	issues/s                          how fast the 10k issues were processed
//
// Every figure is taken after runtime.GC and debug.FreeOSMemory, so RSS is not
// inflated by garbage the runtime had not yet returned. Set
// MEM10K_HEAPPROFILE=/path to also write a heap profile with the tasks tracked
// (one file per store, suffixed .bolt or .redis).
func BenchmarkMemory10kTasks(b *testing.B) {
	b.Run("bolt", func(b *testing.B) { memTasksBench(b, "bolt") })
	b.Run("redis", func(b *testing.B) { memTasksBench(b, "redis") })
}

type memSample struct {
	rss, anon, file uint64 // bytes
	heapInuse       uint64 // spans in use, fragmentation included
	heapLive        uint64 // HeapAlloc: bytes of live objects
}

// memRead collects garbage, returns freed memory to the OS and samples.
func memRead(tb testing.TB) memSample {
	tb.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	out := memSample{heapInuse: ms.HeapInuse, heapLive: ms.HeapAlloc}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v) // "12345 kB"
		if len(f) != 2 || f[1] != "kB" {
			continue
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmRSS":
			out.rss = kb << 10
		case "RssAnon":
			out.anon = kb << 10
		case "RssFile":
			out.file = kb << 10
		}
	}
	return out
}

func mb(n uint64) float64 { return float64(n) / (1 << 20) }

// mbDiff is a-b in MiB, negative when b is larger.
func mbDiff(a, b uint64) float64 { return mb(a) - mb(b) }

func memTasksBench(b *testing.B, kind string) {
	base := memRead(b)
	gh := newGitHub(githubtest.Options{})
	b.Cleanup(gh.Close)
	gh.AddRepo(testRepo, testInstallation)

	var s store.Store
	var dbPath, redisURL string
	switch kind {
	case "bolt":
		dbPath = filepath.Join(b.TempDir(), "countersign.db")
		var err error
		if s, err = bolt.Open(dbPath); err != nil {
			b.Fatal(err)
		}
	case "redis":
		redisURL = redistest.Start(b)
		s = tpOpenRedis(b, redisURL)
	}
	h := tpStartBot(b, gh, s, tpWithWorkers(tpWorkers))
	s = nil

	start := time.Now()
	tpWaitIssues(b, gh, tpOpenIssues(gh, memTasks, 4, "memory"), 20*time.Minute)
	elapsed := time.Since(start)
	tpSettle(b, gh, h)
	b.StopTimer()

	tasks, err := h.store.Scan(context.Background(), "task/")
	if err != nil {
		b.Fatal(err)
	}
	if len(tasks) != memTasks {
		b.Fatalf("%d task records, want %d", len(tasks), memTasks)
	}
	loaded := memRead(b)
	if p := os.Getenv("MEM10K_HEAPPROFILE"); p != "" {
		f, err := os.Create(p + "." + kind)
		if err != nil {
			b.Fatal(err)
		}
		if err := pprof.WriteHeapProfile(f); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	var redisUsed float64
	if redisURL != "" {
		redisUsed = tpRedisInfo(b, redisURL, "memory")["used_memory"]
	}

	// Shut the bot down and drop it; what is left is the fake and the test.
	h.shutdown()
	h.srv, h.store = nil, nil
	botGone := memRead(b)

	b.ReportMetric(mb(loaded.rss), "rss-MB")
	b.ReportMetric(mb(loaded.anon), "rss-anon-MB")
	b.ReportMetric(mb(loaded.file), "rss-file-MB")
	b.ReportMetric(mb(loaded.heapInuse), "heap-MB")
	b.ReportMetric(mb(base.rss), "base-rss-MB")
	b.ReportMetric(mb(base.heapInuse), "base-heap-MB")
	b.ReportMetric(mbDiff(loaded.rss, botGone.rss), "bot-rss-MB")
	b.ReportMetric(mbDiff(loaded.heapInuse, botGone.heapInuse), "bot-heap-MB")
	b.ReportMetric(mbDiff(botGone.heapInuse, base.heapInuse), "fake-heap-MB")
	b.ReportMetric(mb(loaded.heapLive), "live-MB")
	b.ReportMetric(mbDiff(loaded.heapLive, botGone.heapLive), "bot-live-MB")
	b.ReportMetric(mbDiff(botGone.heapLive, base.heapLive), "fake-live-MB")
	b.ReportMetric(float64(memTasks)/elapsed.Seconds(), "issues/s")
	if dbPath != "" {
		if fi, err := os.Stat(dbPath); err == nil {
			b.ReportMetric(mb(uint64(fi.Size())), "db-MB")
		}
	}
	if redisURL != "" {
		b.ReportMetric(redisUsed/(1<<20), "redis-MB")
	}
}

// Package metrics holds the Prometheus metrics the bot exports on /metrics.
package metrics

import (
	"github.com/countersign/countersign/app/buildinfo"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics are the Prometheus metrics the bot exports on /metrics. Each server
// has its own registry, so tests can run several.
type Metrics struct {
	Registry *prometheus.Registry

	Deliveries      *prometheus.CounterVec   // webhook deliveries by event and intake outcome
	Processed       *prometheus.CounterVec   // deliveries processed by event and outcome
	ProcessLatency  *prometheus.HistogramVec // from receipt to effects applied, by event
	IntakeLatency   prometheus.Histogram     // from request to response on /webhook
	APICalls        *prometheus.CounterVec   // GitHub API calls by method and status code
	APIRetries      *prometheus.CounterVec   // GitHub API retries by reason
	RateLimitRemain *prometheus.GaugeVec     // X-RateLimit-Remaining of the last API answer, by installation ("app": the App's own calls)
	WriteWait       prometheus.Histogram     // time a write waited for its turn under the write pacing
	WritesDeferred  prometheus.Counter       // writes whose turn was too far: their delivery waits, no attempt used
	QueueDepth      prometheus.GaugeFunc
	DeadLetters     prometheus.GaugeFunc
	BuildInfo       *prometheus.GaugeVec // 1, labeled with the binary's version and commit
	// Echoes counts webhooks recognised at intake as countersign's own
	// writes coming back (answered 202, not queued), by event.
	Echoes *prometheus.CounterVec
	// RepliesHeld counts replies not posted because their person had had
	// their share (DESIGN §5), by notice kind.
	RepliesHeld *prometheus.CounterVec
}

// New creates the metrics; stats reports the store's depths.
func New(stats func() (queued, dead int)) *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		Deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_webhook_deliveries_total",
			Help: "Webhook deliveries received, by event and intake outcome (accepted, duplicate, ignored, ping, bad_signature, too_large, timeout, malformed, unqueueable, error, echo).",
		}, []string{"event", "outcome"}),
		Processed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_deliveries_processed_total",
			Help: "Queued deliveries processed, by event and outcome (done, retried, waiting: for GitHub, no attempt used; dead_lettered).",
		}, []string{"event", "outcome"}),
		ProcessLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "countersign_processing_seconds",
			Help:    "Time from a delivery's receipt to its effects applied on GitHub.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}, []string{"event"}),
		IntakeLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "countersign_webhook_response_seconds",
			Help:    "Time to answer a webhook delivery.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		APICalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_github_api_requests_total",
			Help: "GitHub API requests, by method and status code (0: no answer).",
		}, []string{"method", "code"}),
		APIRetries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_github_api_retries_total",
			Help: "GitHub API requests retried, by reason (server_error, rate_limited, network).",
		}, []string{"reason"}),
		Echoes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_webhooks_echo_total",
			Help: "Webhooks recognised as countersign's own writes coming back (its bot's label, card, notice, goal issue or check run, as recorded): answered 202 and not queued, by event.",
		}, []string{"event"}),
		RepliesHeld: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_replies_held_total",
			Help: "Replies not posted because their person already had 3 on that issue or pull request within the hour, by notice kind.",
		}, []string{"kind"}),
		RateLimitRemain: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "countersign_github_rate_limit_remaining",
			Help: "X-RateLimit-Remaining of the latest GitHub API answer, for the App's own calls (\"app\") and the 20 installations with the fewest left; no series until an answer came.",
		}, []string{"installation"}),
		WriteWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "countersign_github_write_wait_seconds",
			Help:    "Time a GitHub write (POST, PATCH, PUT, DELETE) waited for its turn under the installation's write pacing.",
			Buckets: []float64{0.001, 0.01, 0.1, 0.5, 1, 2.5, 5, 10, 15},
		}),
		WritesDeferred: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "countersign_github_writes_deferred_total",
			Help: "Groups of GitHub writes whose turns under the write pacing were more than a second (a sixtieth of the pacing minute) away: their key keeps its turns and waits for them (no attempt used, nothing read again).",
		}),
	}
	m.QueueDepth = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "countersign_queue_depth",
		Help: "Deliveries accepted and not yet processed.",
	}, func() float64 { q, _ := stats(); return float64(q) })
	m.DeadLetters = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "countersign_dead_letters",
		Help: "Deliveries that failed every attempt and wait for `countersign deadletters retry`.",
	}, func() float64 { _, d := stats(); return float64(d) })
	m.BuildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "countersign_build_info",
		Help: "Always 1; the labels say which build is running (module version, commit, Go version).",
	}, []string{"version", "revision", "goversion"})
	bi := buildinfo.Read()
	m.BuildInfo.WithLabelValues(bi.Version, bi.Commit, bi.GoVersion).Set(1)
	m.Registry.MustRegister(m.BuildInfo, m.Deliveries, m.Processed, m.ProcessLatency, m.IntakeLatency, m.APICalls,
		m.APIRetries, m.RateLimitRemain, m.WriteWait, m.WritesDeferred, m.QueueDepth, m.DeadLetters, m.RepliesHeld, m.Echoes,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

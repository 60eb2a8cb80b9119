package mergequeue

import "github.com/prometheus/client_golang/prometheus"

// Kinds of forged gate (Metrics.Forged).
const (
	ForgedStatus   = "status"    // a commit status named countersign/verification
	ForgedCheckRun = "check_run" // a check run of that name from another App
)

// Metrics count what the gate saw.
type Metrics struct {
	// Forged counts statuses and other Apps' check runs named
	// countersign/verification: they change nothing, and are shown on the
	// cards of the tasks of the pull requests at that commit.
	Forged *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{Forged: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "countersign_forged_gate_total",
		Help: "Commit statuses (kind=status) and other Apps' check runs (kind=check_run) named countersign/verification: ignored, and shown on the cards of the tasks at that commit.",
	}, []string{"kind"})}
	for _, k := range []string{ForgedStatus, ForgedCheckRun} {
		m.Forged.WithLabelValues(k)
	}
	reg.MustRegister(m.Forged)
	return m
}

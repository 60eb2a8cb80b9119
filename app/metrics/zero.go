package metrics

// Outcomes of a webhook delivery at intake (countersign_webhook_deliveries_total).
var intakeOutcomes = []string{"accepted", "duplicate", "ignored", "ping", "bad_signature", "too_large", "timeout", "malformed", "unqueueable", "error", "echo"}

// Outcomes of a processed delivery (countersign_deliveries_processed_total).
var processOutcomes = []string{"done", "retried", "waiting", "dead_lettered"}

// apiMethods and apiCodes are the GitHub API requests' series made at start:
// every method countersign uses, with the answers an alert watches for (0:
// no answer; 401: the App's key; 403 and 429: rate limits; 5xx: GitHub
// failing). Other codes get their series when they first come.
var (
	apiMethods = []string{"GET", "POST", "PATCH", "PUT", "DELETE"}
	apiCodes   = []string{"0", "200", "401", "403", "429", "500", "502", "503"}
)

// retryReasons are the reasons of countersign_github_api_retries_total.
var retryReasons = []string{"server_error", "rate_limited", "network"}

// Zero gives every labelled counter and histogram a series at 0 for each
// label value it is known to take, so every documented family is on /metrics
// from the start and an alert on increase() sees the first event (a series
// that appears at 1 shows no increase). events are the metric's event label
// values (deliveries.MetricEvents), noticeKinds those of replies held.
func (m *Metrics) Zero(events, noticeKinds []string) {
	for _, e := range events {
		for _, o := range intakeOutcomes {
			m.Deliveries.WithLabelValues(e, o)
		}
		for _, o := range processOutcomes {
			m.Processed.WithLabelValues(e, o)
		}
		m.ProcessLatency.WithLabelValues(e)
		m.Echoes.WithLabelValues(e)
	}
	for _, meth := range apiMethods {
		for _, c := range apiCodes {
			m.APICalls.WithLabelValues(meth, c)
		}
	}
	for _, r := range retryReasons {
		m.APIRetries.WithLabelValues(r)
	}
	for _, k := range noticeKinds {
		m.RepliesHeld.WithLabelValues(k)
	}
}

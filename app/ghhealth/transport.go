package ghhealth

import (
	"fmt"
	"net/http"
)

// Transport gates and watches the requests of every scope: while GitHub is
// away for a request's scope it is not sent (an *AwayError), unless it is a
// probe; an exchange that finds GitHub away marks its scope away. Requests
// without a scope pass through. Put it below the retrying transport (so
// each attempt is watched, and the installation-token request too) and
// scope requests above (ScopeTransport).
type Transport struct {
	Next   http.RoundTripper
	Health *Health
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	s, scoped := ScopeOf(ctx)
	if !scoped {
		return t.Next.RoundTrip(req)
	}
	probe := IsProbe(ctx)
	if !probe {
		if err := t.Health.Gate(s); err != nil {
			if req.Body != nil {
				req.Body.Close() // a RoundTripper closes the body, even on error
			}
			note(ctx, s)
			return nil, err
		}
	}
	resp, err := t.Next.RoundTrip(req)
	if hint, away := Classify(ctx, resp, err, t.Health.cfg.Clock.Now()); away && !probe {
		t.Health.MarkAway(s, hint, cause(req, resp, err))
		note(ctx, s)
	}
	return resp, err
}

func cause(req *http.Request, resp *http.Response, err error) string {
	if err != nil {
		return fmt.Sprintf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	return fmt.Sprintf("%s %s: %s", req.Method, req.URL.Path, resp.Status)
}

// Stop reports whether a retrying transport should stop retrying req: it is
// a probe (one request each), or GitHub is away for its scope (the next
// attempt would not be sent; the probe says when to try again).
func (h *Health) Stop(req *http.Request) bool {
	if IsProbe(req.Context()) {
		return true
	}
	s, ok := ScopeOf(req.Context())
	return ok && h.Away(s)
}

// ScopeTransport marks each request as its scope's. With Health set, a
// request of a scope GitHub is away for fails here already, before the
// transports below it (a write's turn under the pacing, say) are spent on it.
type ScopeTransport struct {
	Next   http.RoundTripper
	Scope  Scope
	Health *Health
}

// RoundTrip implements http.RoundTripper.
func (t ScopeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := WithScope(req.Context(), t.Scope)
	if t.Health != nil && !IsProbe(ctx) {
		if err := t.Health.Gate(t.Scope); err != nil {
			if req.Body != nil {
				req.Body.Close()
			}
			note(ctx, t.Scope)
			return nil, err
		}
	}
	return t.Next.RoundTrip(req.WithContext(ctx))
}

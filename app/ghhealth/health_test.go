package ghhealth_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/app/clock/clocktest"
	"github.com/countersign/countersign/app/ghhealth"
)

// stillAway is a probe answer saying GitHub is still away, after hint.
type stillAway struct{ hint time.Duration }

func (e stillAway) Error() string { return fmt.Sprintf("still away (hint %s)", e.hint) }

func waiting(err error, _ time.Time) (time.Duration, bool) {
	var s stillAway
	if errors.As(err, &s) {
		return s.hint, true
	}
	return 0, false
}

// rig is a Health on a fake clock whose probes answer from a script and
// whose wakes are recorded.
type rig struct {
	clock *clocktest.Fake
	h     *ghhealth.Health

	mu      sync.Mutex
	answers []error
	probed  []time.Duration // when each probe came, from the start
	woken   [][]string
	wakeErr []error
	start   time.Time
	done    chan struct{}
}

func newRig(t *testing.T, answers ...error) *rig {
	r := &rig{clock: clocktest.New(), answers: answers, done: make(chan struct{}, 16)}
	r.start = r.clock.Now()
	r.h = ghhealth.New(ghhealth.Config{
		Clock:   r.clock,
		Waiting: waiting,
		Probe: func(ctx context.Context, s ghhealth.Scope) error {
			if !ghhealth.IsProbe(ctx) {
				t.Error("probe without the probe mark")
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			r.probed = append(r.probed, r.clock.Now().Sub(r.start))
			if len(r.answers) == 0 {
				return nil
			}
			a := r.answers[0]
			r.answers = r.answers[1:]
			return a
		},
		Wake: func(_ context.Context, keys ...string) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			if len(r.wakeErr) > 0 {
				err := r.wakeErr[0]
				r.wakeErr = r.wakeErr[1:]
				return err
			}
			r.woken = append(r.woken, keys)
			r.done <- struct{}{}
			return nil
		},
	})
	t.Cleanup(r.h.Close)
	return r
}

// runUntilWoken advances the clock timer by timer until the keys are woken.
func (r *rig) runUntilWoken(t *testing.T) {
	t.Helper()
	for {
		select {
		case <-r.done:
			return
		default:
		}
		d, ok := r.clock.Next()
		if !ok {
			select {
			case <-r.done:
				return
			case <-time.After(5 * time.Millisecond):
				continue
			}
		}
		r.clock.Advance(d)
		time.Sleep(time.Millisecond) // let the prober run
	}
}

func TestOutageThenBack(t *testing.T) {
	const s = ghhealth.Scope(7)
	for _, tc := range []struct {
		name    string
		hint    time.Duration // the hint of the answer that found GitHub away
		answers []error
		probed  []time.Duration // when the probes come
	}{
		{name: "backoff doubles to the cap", answers: []error{stillAway{}, stillAway{}, stillAway{}, stillAway{}},
			probed: []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 12 * time.Second}},
		{name: "Retry-After honoured", hint: 30 * time.Second,
			probed: []time.Duration{30 * time.Second}},
		{name: "rate limit reset read by the probe", answers: []error{stillAway{hint: 10 * time.Minute}, stillAway{}},
			probed: []time.Duration{1 * time.Second, 601 * time.Second, 603 * time.Second}},
		{name: "an answer that is no wait means back", answers: []error{errors.New("404 Not Found")},
			probed: []time.Duration{1 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.answers...)
			r.h.MarkAway(s, tc.hint, "GET /x: 503")
			r.h.MarkAway(s, 0, "GET /y: 503") // one prober only
			err := r.h.Gate(s)
			var away *ghhealth.AwayError
			if !errors.As(err, &away) || away.Scope != s || away.Cause != "GET /x: 503" {
				t.Fatalf("Gate = %v, want an AwayError for %d found by GET /x", err, s)
			}
			if r.h.Gate(8) != nil {
				t.Fatal("another installation is gated")
			}
			ctx := t.Context()
			for _, k := range []string{"k1", "k2", "k1", "k3"} {
				if err := r.h.Park(ctx, s, k); err != nil {
					t.Fatal(err)
				}
			}
			if st := r.h.State(); len(st) != 1 || st[0].Parked != 3 || st[0].Scope != s {
				t.Fatalf("State = %+v, want scope 7 with 3 keys", st)
			}
			r.runUntilWoken(t)
			r.mu.Lock()
			defer r.mu.Unlock()
			if !slices.Equal(r.probed, tc.probed) {
				t.Errorf("probes at %v, want %v", r.probed, tc.probed)
			}
			if len(r.woken) != 1 || !slices.Equal(r.woken[0], []string{"k1", "k2", "k3"}) {
				t.Errorf("woken %v, want [[k1 k2 k3]] (in turn)", r.woken)
			}
			if r.h.Gate(s) != nil || len(r.h.State()) != 0 {
				t.Errorf("still away after the probe succeeded: %+v", r.h.State())
			}
			if r.h.Probes() != len(tc.probed) {
				t.Errorf("Probes = %d, want %d", r.h.Probes(), len(tc.probed))
			}
		})
	}
}

// A hint found while away postpones the next probe.
func TestLaterHintPostponesProbe(t *testing.T) {
	r := newRig(t)
	r.h.MarkAway(3, 0, "503")
	r.clock.WaitTimers(t, 1)
	r.h.MarkAway(3, 20*time.Second, "403 rate limited")
	if err := r.h.Park(t.Context(), 3, "k"); err != nil {
		t.Fatal(err)
	}
	r.runUntilWoken(t)
	if want := []time.Duration{20 * time.Second}; !slices.Equal(r.probed, want) {
		t.Fatalf("probes at %v, want %v", r.probed, want)
	}
}

// A key parked on a scope that is back (GitHub returned between the failed
// request and the park) is woken at once.
func TestParkWhenBackWakesNow(t *testing.T) {
	r := newRig(t)
	if err := r.h.Park(t.Context(), 5, "k"); err != nil {
		t.Fatal(err)
	}
	if len(r.woken) != 1 || r.woken[0][0] != "k" {
		t.Fatalf("woken %v, want [[k]]", r.woken)
	}
	if r.h.Probes() != 0 {
		t.Fatal("probed a scope that is not away")
	}
}

// A store that cannot wake the keys is asked again until it can.
func TestWakeRetried(t *testing.T) {
	r := newRig(t)
	r.wakeErr = []error{errors.New("connection refused"), errors.New("connection refused")}
	r.h.MarkAway(2, 0, "503")
	if err := r.h.Park(t.Context(), 2, "k"); err != nil {
		t.Fatal(err)
	}
	r.runUntilWoken(t)
	if len(r.woken) != 1 || len(r.wakeErr) != 0 {
		t.Fatalf("woken %v with %d errors left", r.woken, len(r.wakeErr))
	}
}

// The transport sends nothing while a scope is away (but its probe), marks
// a scope away on a 503 or a rate limit, and records what it found in a
// tracked context.
func TestTransport(t *testing.T) {
	var mu sync.Mutex
	status := http.StatusServiceUnavailable
	sent := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		sent++
		if status == http.StatusForbidden {
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.Header().Set("Retry-After", "42")
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()
	r := newRig(t)
	h := r.h
	client := &http.Client{Transport: ghhealth.ScopeTransport{Scope: 9, Next: &ghhealth.Transport{Next: http.DefaultTransport, Health: h}}}
	get := func(ctx context.Context) (int, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	ctx, seen := ghhealth.Track(t.Context())
	if code, err := get(ctx); err != nil || code != http.StatusServiceUnavailable {
		t.Fatalf("first request: %d, %v", code, err)
	}
	for range 5 {
		if _, err := get(ctx); !ghhealth.IsAway(err) {
			t.Fatalf("request while away: %v, want an AwayError", err)
		}
	}
	if sent != 1 {
		t.Fatalf("%d requests sent, want 1 (the rest failed fast)", sent)
	}
	if got := seen.Scopes(); !slices.Equal(got, []ghhealth.Scope{9}) {
		t.Fatalf("seen %v, want [9]", got)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
	if !h.Stop(req.WithContext(ghhealth.WithScope(req.Context(), 9))) {
		t.Fatal("Stop = false while away")
	}
	if code, err := get(ghhealth.WithProbe(t.Context())); err != nil || code != http.StatusServiceUnavailable || sent != 2 {
		t.Fatalf("probe: %d, %v, %d sent; want it sent", code, err, sent)
	}
	gated := &http.Client{Transport: ghhealth.ScopeTransport{Scope: 9, Health: h, Next: http.DefaultTransport}}
	req, _ = http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, nil)
	if _, err := gated.Do(req); !ghhealth.IsAway(err) || sent != 2 {
		t.Fatalf("gated at the top: %v, %d sent; want an AwayError and nothing sent", err, sent)
	}

	// Rate limited: marked away with GitHub's hint.
	r2 := newRig(t)
	client.Transport = ghhealth.ScopeTransport{Scope: 9, Next: &ghhealth.Transport{Next: http.DefaultTransport, Health: r2.h}}
	mu.Lock()
	status = http.StatusForbidden
	mu.Unlock()
	if code, err := get(t.Context()); err != nil || code != http.StatusForbidden {
		t.Fatalf("rate-limited request: %d, %v", code, err)
	}
	if st := r2.h.State(); len(st) != 1 || st[0].NextProbe.Sub(r2.start) != 42*time.Second {
		t.Fatalf("State = %+v, want the probe 42 s later (Retry-After)", st)
	}
	// A refusal is not GitHub being away.
	r3 := newRig(t)
	client.Transport = ghhealth.ScopeTransport{Scope: 9, Next: &ghhealth.Transport{Next: http.DefaultTransport, Health: r3.h}}
	mu.Lock()
	status = http.StatusNotFound
	mu.Unlock()
	if _, err := get(t.Context()); err != nil || r3.h.Away(9) {
		t.Fatalf("a 404 marked the installation away (err %v)", err)
	}
}

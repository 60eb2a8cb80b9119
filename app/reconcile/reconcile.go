// Package reconcile finds drift between GitHub and the task records: a state
// label (or escalated, unverified, forced) that a person changed while the
// bot was down, or whose event never arrived. The records are the truth: each
// task must carry exactly the owned labels the rules say its record has
// (rules.Task.Labels()).
//
// A resync of a repository is an internal delivery (ResyncEvent) under the
// repository's own key, queued at start-up, on a schedule, on installation
// events and by `countersign resync`. Processing it lists the repository's
// issues updated since its last resync (a page of 100 per request), compares
// each tracked task's owned labels with its record, and queues a repair
// (RepairEvent) under each drifted task's key, so that the repair is decided
// one at a time with the task's other events, and applied by the effect
// executor like any label change.
package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
	"github.com/prometheus/client_golang/prometheus"
)

// The internal events.
const (
	ResyncEvent = "countersign.resync"
	RepairEvent = "countersign.drift"
)

// Limits.
const (
	// MaxPages bounds the issue pages one resync reads (100 issues each).
	MaxPages = 20
	// StartupWindow is how far back a start-up resync looks at a repository
	// never reconciled before: the tasks touched recently.
	StartupWindow = 24 * time.Hour
	// reserve is the share of an installation's rate limit a resync leaves
	// alone: below it, the resync stops and tries again later.
	reserve = 10 // 1/10
)

// Resync is the payload of a ResyncEvent delivery.
type Resync struct {
	Installation int64     `json:"installation,omitempty"` // 0: looked up
	Repo         string    `json:"repo,omitempty"`
	All          bool      `json:"all,omitempty"`   // every tracked repository (Repo empty)
	Since        time.Time `json:"since,omitempty"` // zero: every issue
	Page         int       `json:"page,omitempty"`  // continue a resync cut at MaxPages
	Labels       bool      `json:"labels,omitempty"`
	Why          string    `json:"why"`
}

// Repair is the payload of a RepairEvent delivery.
type Repair struct {
	Installation int64    `json:"installation"`
	Repo         string   `json:"repo"`
	Number       int      `json:"number"`
	Had          []string `json:"had"` // the owned labels found on GitHub
	// Strip is a label to take off the task besides: the name an owned label
	// was renamed to, in case renaming it back fails (its name was taken).
	Strip string `json:"strip,omitempty"`
	Why   string `json:"why,omitempty"`
}

// RepoRecord is what is known of a tracked repository.
type RepoRecord struct {
	Installation int64     `json:"installation"`
	ReconciledAt time.Time `json:"reconciled_at,omitempty"`
}

// RepoKey is the record key of a repository's RepoRecord.
func RepoKey(repo string) string { return "repo/" + repo }

// Key is the ordering key of a repository's resyncs.
func Key(repo string) string {
	if repo == "" {
		return "resync/*"
	}
	return "resync/" + repo
}

// NewResync is the delivery that asks for r.
func NewResync(r Resync, now time.Time) store.Delivery {
	b, _ := json.Marshal(r) // strings, numbers and a time: cannot fail
	target := r.Repo
	if r.All {
		target = "*"
	}
	return store.Delivery{ID: fmt.Sprintf("resync/%s/%s/%d", target, r.Why, now.UnixNano()), Event: ResyncEvent,
		Key: Key(r.Repo), Payload: b, ReceivedAt: now.UTC()}
}

// NewRepair is the delivery that repairs task n's labels, caused by resync id.
func NewRepair(r Repair, id string, now time.Time) store.Delivery {
	b, _ := json.Marshal(r)
	return store.Delivery{ID: fmt.Sprintf("repair/%s#%d/%s", r.Repo, r.Number, id), Event: RepairEvent,
		Key: rules.TaskKey(r.Repo, r.Number), Payload: b, ReceivedAt: now.UTC()}
}

// TrackedRepos are the repositories with task records or a RepoRecord, sorted.
func TrackedRepos(ctx context.Context, st store.Store) ([]string, error) {
	seen := map[string]bool{}
	for _, prefix := range []string{"task/", "repo/"} {
		keys, err := st.Scan(ctx, prefix)
		if err != nil {
			return nil, fmt.Errorf("list tracked repositories: %w", err)
		}
		for _, k := range keys {
			repo := strings.TrimPrefix(k, prefix)
			if i := strings.LastIndexByte(repo, '#'); i >= 0 {
				repo = repo[:i]
			}
			if strings.Count(repo, "/") == 1 {
				seen[repo] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for r := range seen {
		out = append(out, r)
	}
	sort.Strings(out)
	return out, nil
}

// LoadRepo reads a repository's record (zero if none).
func LoadRepo(ctx context.Context, st store.Store, repo string) (RepoRecord, error) {
	var rec RepoRecord
	b, err := st.Get(ctx, RepoKey(repo))
	if errors.Is(err, store.ErrNotFound) {
		return rec, nil
	}
	if err != nil {
		return rec, fmt.Errorf("read %s: %w", RepoKey(repo), err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return RepoRecord{}, nil // rebuilt by the next resync
	}
	return rec, nil
}

// Schedule queues a resync of every tracked repository, each since its last
// one (a repository never reconciled: since window ago), all at once. It
// returns how many.
func Schedule(ctx context.Context, st store.Store, why string, window time.Duration, now time.Time) (int, error) {
	return SchedulePaced(ctx, st, why, window, now, Pacing{})
}

// PassRate is how many repositories a second a reconciliation pass queues
// at most (a pass that would not end within Pacing.Within goes faster): a
// resync reads GitHub at least once, and a process serving a thousand
// installations of five repositories each must not send those 5,000 reads
// (and mint 1,000 tokens) in one burst at start-up.
const PassRate = 10

// Pacing spreads a pass over time (the zero Pacing queues it at once).
type Pacing struct {
	// Rate is the repositories queued a second (0: all at once); Within is
	// the longest the pass may take (0: no bound): the rate is raised to
	// end it in time.
	Rate   float64
	Within time.Duration
	// Keep is asked about every KeepEvery while the pass waits (nil:
	// always): false stops the pass (this replica lost its lease).
	Keep      func(ctx context.Context) bool
	KeepEvery time.Duration
	// Queued is called after each resync queued (nil: nothing), so the
	// workers take it at once.
	Queued func()
	// Sleep waits d or until ctx ends (nil: a timer); tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
}

// gap is the wait between two resyncs of a pass of n.
func (p Pacing) gap(n int) time.Duration {
	if p.Rate <= 0 || n <= 1 {
		return 0
	}
	gap := time.Duration(float64(time.Second) / p.Rate)
	if p.Within > 0 {
		gap = min(gap, p.Within/time.Duration(n))
	}
	return gap
}

func (p Pacing) sleep(ctx context.Context, d time.Duration) error {
	if p.Sleep != nil {
		return p.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// SchedulePaced is Schedule with the resyncs queued one every p's gap: a
// bounded background pass, whatever the number of repositories. It returns
// how many it queued (fewer when Keep stopped it).
func SchedulePaced(ctx context.Context, st store.Store, why string, window time.Duration, now time.Time, p Pacing) (int, error) {
	repos, err := TrackedRepos(ctx, st)
	if err != nil {
		return 0, err
	}
	gap := p.gap(len(repos))
	keepEvery := p.KeepEvery
	if keepEvery <= 0 {
		keepEvery = 10 * time.Second
	}
	n := 0
	var waited time.Duration
	for i, repo := range repos {
		if i > 0 && gap > 0 {
			if err := p.sleep(ctx, gap); err != nil {
				return n, err
			}
			if waited += gap; waited >= keepEvery {
				waited = 0
				if p.Keep != nil && !p.Keep(ctx) {
					return n, nil
				}
			}
		}
		rec, err := LoadRepo(ctx, st, repo)
		if err != nil {
			return n, err
		}
		since := rec.ReconciledAt.Add(-time.Minute) // GitHub's updated_at and our clock may differ a little
		if rec.ReconciledAt.IsZero() {
			since = now.Add(-window)
		}
		if _, err := st.Accept(ctx, NewResync(Resync{Installation: rec.Installation, Repo: repo, Since: since, Why: why}, now)); err != nil {
			return n, fmt.Errorf("queue the resync of %s: %w", repo, err)
		}
		n++
		if p.Queued != nil {
			p.Queued()
		}
	}
	return n, nil
}

// Drift is a task whose owned labels on GitHub differ from its record's.
type Drift struct {
	Number    int
	Want, Had []string
}

// Scan is one resync's reading of a repository.
type Scan struct {
	Checked   int // tracked tasks compared
	Requests  int
	Drifts    []Drift
	NextPage  int  // > 0: cut at MaxPages, continue from this page
	LowBudget bool // stopped to leave the installation's rate limit alone
}

// Client is what Compare reads of GitHub.
type Client interface {
	ListIssuesByRepo(ctx context.Context, owner string, repo string, opts *github.IssueListByRepoOptions) ([]*github.Issue, *github.Response, error)
}

// Compare lists repo's issues updated since (zero: all), from page (0: the
// first), and reports the tracked tasks whose owned labels differ from what
// want says (tracked false: not a task).
func Compare(ctx context.Context, c Client, repo string, since time.Time, page int,
	want func(ctx context.Context, n int) (labels []string, tracked bool, err error)) (Scan, error) {
	var sc Scan
	owner, name, _ := strings.Cut(repo, "/")
	opt := &github.IssueListByRepoOptions{State: "all", Sort: "updated", Direction: "desc", Since: since,
		ListOptions: github.ListOptions{PerPage: 100, Page: page}}
	for pages := 0; ; pages++ {
		if pages == MaxPages {
			sc.NextPage = opt.Page
			return sc, nil
		}
		issues, resp, err := c.ListIssuesByRepo(ctx, owner, name, opt)
		sc.Requests++
		if err != nil {
			return sc, fmt.Errorf("list the issues of %s: %w", repo, err)
		}
		for _, is := range issues {
			if is.IsPullRequest() {
				continue
			}
			labels, tracked, err := want(ctx, is.GetNumber())
			if err != nil {
				return sc, err
			}
			if !tracked {
				continue
			}
			sc.Checked++
			var had []string
			for _, l := range is.Labels {
				if rules.TaskOwned(l.GetName()) {
					had = append(had, l.GetName())
				}
			}
			sort.Strings(had)
			want := slices.Clone(labels)
			sort.Strings(want)
			if !slices.Equal(had, want) {
				sc.Drifts = append(sc.Drifts, Drift{Number: is.GetNumber(), Want: want, Had: had})
			}
		}
		if resp.NextPage == 0 {
			return sc, nil
		}
		if resp.Rate.Limit > 0 && resp.Rate.Remaining < resp.Rate.Limit/reserve {
			sc.LowBudget, sc.NextPage = true, resp.NextPage
			return sc, nil
		}
		opt.Page = resp.NextPage
	}
}

// Metrics are reconciliation's Prometheus metrics.
type Metrics struct {
	Resyncs *prometheus.CounterVec // by why
	Checked prometheus.Counter
	Repairs *prometheus.CounterVec // by kind
}

// NewMetrics registers reconciliation's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Resyncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_reconcile_resyncs_total",
			Help: "Repository resyncs done, by why (start-up, schedule, installation, command).",
		}, []string{"why"}),
		Checked: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "countersign_reconcile_tasks_checked_total",
			Help: "Tracked tasks whose labels a resync compared with their records.",
		}),
		Repairs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_reconcile_repairs_total",
			Help: "Drift repaired, by kind (labels: a task's owned labels differed from its record).",
		}, []string{"kind"}),
	}
	reg.MustRegister(m.Resyncs, m.Checked, m.Repairs)
	for _, why := range []string{"start-up", "schedule", "installation", "command"} {
		m.Resyncs.WithLabelValues(why)
	}
	m.Repairs.WithLabelValues("labels")
	return m
}

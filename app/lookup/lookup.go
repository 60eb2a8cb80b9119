// Package lookup is what several decisions read of a repository: its
// configuration (cached in the store for a while), the CI results on a
// commit, and the files a pull request changes. It reads GitHub and writes
// only its cache of the configuration.
package lookup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/gh"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

// Client is what lookup reads of GitHub.
type Client interface {
	gh.UserReader
	GetContents(ctx context.Context, owner, repo, path string, opts *github.RepositoryContentGetOptions) (fileContent *github.RepositoryContent, directoryContent []*github.RepositoryContent, resp *github.Response, err error)
	ListCheckRunsForRef(ctx context.Context, owner, repo, ref string, opts *github.ListCheckRunsOptions) (*github.ListCheckRunsResults, *github.Response, error)
	ListCheckSuitesForRef(ctx context.Context, owner, repo, ref string, opts *github.ListOptions) (*gh.CheckSuites, *github.Response, error)
	ListWorkflowRunsForHead(ctx context.Context, owner, repo, sha string, opts *github.ListOptions) (*github.WorkflowRuns, *github.Response, error)
	ListWorkflowJobsAll(ctx context.Context, owner, repo string, runID int64, opts *github.ListOptions) (*github.Jobs, *github.Response, error)
	ListStatuses(ctx context.Context, owner, repo, ref string, opts *github.ListOptions) ([]*github.RepoStatus, *github.Response, error)
	ListPullRequestFiles(ctx context.Context, owner string, repo string, number int, opts *github.ListOptions) ([]*github.CommitFile, *github.Response, error)
}

// Lookup reads repositories through GitHub, and caches their configuration in
// the store.
type Lookup struct {
	store store.Store
	gh    *gh.GitHub
}

// New is the lookup reading GitHub through g and caching in st.
func New(st store.Store, g *gh.GitHub) *Lookup { return &Lookup{store: st, gh: g} }

// configTTL is how long a repository's configuration is used before it is
// read again (a push to the default branch that changes it re-reads it at once).
const configTTL = 10 * time.Minute

// Limits on what is read of a pull request.
const (
	maxFilePages = 3 // 300 changed files
	// maxChangePages is every page GitHub lists of a pull request's files
	// (3,000 at most): what it merges is judged on all of them.
	maxChangePages = 30
	maxRunPages    = 3 // 300 check runs
)

// Config is repo's configuration: the cached one while fresh, else read again.
func (p *Lookup) Config(ctx context.Context, c Client, repo string, log *slog.Logger) (rules.Config, error) {
	var rec records.Config
	ok, err := records.Load(ctx, p.store, records.ConfigKey(repo), &rec)
	if err != nil {
		return rules.Config{}, err
	}
	if ok && time.Since(rec.ReadAt) < configTTL {
		return rec.Config, nil
	}
	var prev *records.Config
	if ok {
		prev = &rec
	}
	fresh, err := p.ReadConfig(ctx, c, repo, prev, log)
	if err != nil {
		if prev != nil {
			log.Warn("configuration not re-read; using the last one", "repo", repo, "error", err)
			return prev.Config, nil
		}
		return rules.Config{}, err
	}
	return fresh.Config, nil
}

// ReadConfig reads .github/countersign.yml from the default branch and caches
// it. An invalid file keeps the last good configuration (or the defaults)
// and records the error.
func (p *Lookup) ReadConfig(ctx context.Context, c Client, repo string, prev *records.Config, log *slog.Logger) (records.Config, error) {
	rec := records.Config{Config: rules.DefaultConfig(), ReadAt: time.Now().UTC()}
	if prev != nil && prev.Error == "" {
		rec.Config = prev.Config
	}
	file, _, _, err := c.GetContents(ctx, gh.OwnerOf(repo), gh.NameOf(repo), rules.ConfigPath, nil)
	switch {
	case fault.IsStatus(err, http.StatusNotFound):
		rec.Config, rec.Absent = rules.DefaultConfig(), true
	case err != nil:
		return rec, fmt.Errorf("read %s: %w", rules.ConfigPath, err)
	case file == nil: // a directory: GitHub lists it
		rec.Error = rules.ConfigPath + " is a directory, not a file"
		if prev != nil {
			rec.Config = prev.Config
		}
		log.Warn("invalid repository configuration; keeping the last good one", "repo", repo, "error", rec.Error)
	default:
		var cfg rules.Config
		text, err := ConfigText(file)
		if err == nil {
			cfg, err = rules.ParseConfig([]byte(text))
		}
		if err == nil {
			if err = p.UnknownPilots(ctx, c, []byte(text), cfg); err != nil && !isConfigError(err) {
				return rec, err
			}
		}
		var ce *rules.ConfigError
		switch {
		case errors.As(err, &ce):
			rec.Error, rec.Line = err.Error(), ce.Line // every mistake, one a line; the first's line
			if prev != nil {
				rec.Config = prev.Config
			}
			log.Warn("invalid repository configuration; keeping the last good one", "repo", repo, "mistakes", len(rules.Problems(err)), "first", ce.Error())
		case err != nil:
			rec.Error = err.Error()
			if prev != nil {
				rec.Config = prev.Config
			}
		default:
			rec.Config = cfg
		}
	}
	var prevPins map[string]int64
	if prev != nil {
		prevPins = prev.Config.Pins
	}
	if rec.Config.Pins, err = p.pins(ctx, c, rec.Config, prevPins); err != nil {
		return rec, err
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return rec, fmt.Errorf("encode configuration: %w", err)
	}
	if err := p.store.Put(ctx, records.ConfigKey(repo), b); err != nil {
		return rec, fmt.Errorf("cache configuration: %w", err)
	}
	return rec, nil
}

// UnknownPilots is rules.UnknownPilots of configuration file data (read as
// cfg), with the accounts GitHub knows (one request per login not seen
// lately): a *rules.ConfigError when a pilot is no account, another error
// when GitHub could not say.
func (p *Lookup) UnknownPilots(ctx context.Context, c Client, data []byte, cfg rules.Config) error {
	known := map[string]bool{}
	for _, pilot := range cfg.Agents {
		u, err := p.gh.Account(ctx, c, pilot)
		if err != nil {
			return err
		}
		known[strings.ToLower(pilot)] = u.ID != 0
	}
	return rules.UnknownPilots(data, cfg, func(login string) bool { return known[strings.ToLower(login)] })
}

func isConfigError(err error) bool {
	var ce *rules.ConfigError
	return errors.As(err, &ce)
}

// ConfigText is the text of configuration file f as the contents API gave
// it. A file GitHub does not serve the content of (over 1 MB: encoding
// "none") or cannot be decoded is a mistake of the file (*rules.ConfigError),
// reported as any other: never a failure to retry.
func ConfigText(f *github.RepositoryContent) (string, error) {
	if f.GetEncoding() == "none" {
		return "", rules.TooLargeConfig()
	}
	text, err := f.GetContent()
	if err != nil {
		return "", &rules.ConfigError{Msg: "cannot decode the file: " + err.Error()}
	}
	return text, nil
}

// pins are the accounts of the logins cfg names (rules.Config.Pins): the pin
// a login already had is kept, whoever holds the login now; a login named for
// the first time is pinned to the account that holds it now (GET
// /users/{login}, one request per new login). A login GitHub does not know is
// not pinned (it matches no account anyway).
func (p *Lookup) pins(ctx context.Context, c Client, cfg rules.Config, prev map[string]int64) (map[string]int64, error) {
	out := map[string]int64{}
	for _, login := range cfg.NamedLogins() {
		if id := prev[login]; id != 0 {
			out[login] = id
			continue
		}
		u, err := p.gh.Account(ctx, c, login)
		if err != nil {
			return nil, err
		}
		if u.ID != 0 {
			out[login] = u.ID
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// CIRuns reads the CI results on sha: the latest check run of each name in
// each check suite (but this App's own) and the latest status of each
// context. Every check run is listed (filter=all) and the latest of each
// name in each suite kept (rules.MergeRun): what filter=latest keeps of two
// workflows' jobs of one name is not for countersign to guess, and which of
// them counts is decided by workflow (rules.CountedRuns). A result named
// countersign/verification that is not this App's is forged: no CI result.
func (p *Lookup) CIRuns(ctx context.Context, c Client, repo, sha string) ([]rules.CIRun, error) {
	owner, name := gh.OwnerOf(repo), gh.NameOf(repo)
	var runs []rules.CIRun
	opt := &github.ListCheckRunsOptions{Filter: github.String("all"), ListOptions: github.ListOptions{PerPage: 100}}
	for page := 0; page < maxRunPages; page++ {
		res, resp, err := c.ListCheckRunsForRef(ctx, owner, name, sha, opt)
		if err != nil {
			return nil, fmt.Errorf("list check runs on %s: %w", sha, err)
		}
		for _, cr := range res.CheckRuns {
			if !p.gh.OwnApp(cr.GetApp()) && cr.GetName() != rules.CheckName { // another App's of that name is forged: no CI result
				runs, _ = rules.MergeRun(runs, CheckRunOf(cr))
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	// The statuses list, unlike the combined status, names each status's
	// creator (a builder's own statuses count for nothing); newest first, so
	// the first page holds the latest of each context.
	sopt := &github.ListOptions{PerPage: 100}
	for page := 0; page < maxRunPages; page++ {
		sts, resp, err := c.ListStatuses(ctx, owner, name, sha, sopt)
		if err != nil {
			return nil, fmt.Errorf("list statuses of %s: %w", sha, err)
		}
		for _, s := range sts {
			if s.GetContext() == rules.CheckName {
				continue // forged: no CI result
			}
			runs, _ = rules.MergeRun(runs, rules.CIRun{Name: s.GetContext(), Status: true, ID: s.GetID(), State: s.GetState(),
				URL: s.GetTargetURL(), At: s.GetUpdatedAt().UTC(), Creator: gh.User(s.GetCreator())})
		}
		if resp.NextPage == 0 {
			break
		}
		sopt.Page = resp.NextPage
	}
	return runs, nil
}

// Limits on the check suites and workflow runs read on a commit: 100 a
// page (one request in all but rare cases), at most maxSuitePages pages.
const (
	perSuitePage  = 100
	maxSuitePages = 10
)

// Head is whose head a commit is: a pull request's head repository
// ("owner/name") and branch. A workflow run on the commit for another head
// counts for nothing on that pull request (rules.OtherHead).
type Head struct {
	Repo, Ref string
}

// Whose says when CISuites reads the workflow runs on a commit to learn
// whose each suite of github-actions is (and which workflow it runs).
type Whose int

const (
	// WhoseNone reads them only to tell a waiting workflow run from an
	// empty suite: a pull request that closes no task does not pay for more.
	WhoseNone Whose = iota
	// WhoseFailed reads them too when a workflow run completed without
	// passing while a suite is not known (rules.WhoseFailed): a workflow
	// run held for approval, or failed to start, blocks the whole CI only if
	// it is the pull request's own and its workflow has not run again since.
	WhoseFailed
	// WhoseAll reads them when any suite is not known.
	WhoseAll
)

// WhoseFor is what a decision reads of the workflow runs: all when
// rules.CIReadDue says whose they are is due, and those of the suites that
// failed when the pull request closes a task (tracked).
func WhoseFor(due rules.CIRead, tracked bool) Whose {
	switch {
	case due.Whose:
		return WhoseAll
	case tracked:
		return WhoseFailed
	}
	return WhoseNone
}

// CISuites reads the check suites on sha (but this App's own), paging
// through them: for GitHub Actions, one per workflow run, in_progress until
// its last job ends. What known (the suites last read for head) says of
// whose each suite of github-actions is stands. The workflow runs on sha
// are read too (GET .../actions/runs?head_sha=, one request in all but rare
// cases) when a suite of github-actions is queued with no run (github-actions'
// empty suite on a push, or a workflow run waiting in its concurrency
// group: only the workflow run tells them apart), or as whose says when a
// suite of github-actions is not known to be head's or another's
// (rules.CISuite.Known): when a workflow run completed without passing
// (WhoseFailed), or always (WhoseAll). Each suite then learns its
// workflow run, that run's status and workflow, and whether it is for
// another head than head (rules.OtherHead). Without the Actions
// permission (403) they are not: each suite counts as it is listed.
func (p *Lookup) CISuites(ctx context.Context, c Client, repo, sha string, head Head, known []rules.CISuite, whose Whose) ([]rules.CISuite, error) {
	owner, name := gh.OwnerOf(repo), gh.NameOf(repo)
	var out []rules.CISuite
	opt := &github.ListOptions{PerPage: perSuitePage}
	for page := 0; page < maxSuitePages; page++ {
		res, resp, err := c.ListCheckSuitesForRef(ctx, owner, name, sha, opt)
		if err != nil {
			return nil, fmt.Errorf("list check suites on %s: %w", sha, err)
		}
		for _, cs := range res.CheckSuites {
			if cs == nil || p.gh.OwnApp(cs.GetApp()) {
				continue
			}
			out = append(out, rules.CISuite{ID: cs.GetID(), App: cs.GetApp().GetSlug(), Status: cs.GetStatus(),
				Conclusion: cs.GetConclusion(), Runs: cs.LatestCheckRunsCount})
		}
		if resp == nil || resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	read := false
	for i := range out {
		s := &out[i]
		if s.App != rules.ActionsApp {
			continue
		}
		if s.Runs == 0 && s.Status == "queued" {
			read = true
			continue
		}
		if j := slices.IndexFunc(known, func(k rules.CISuite) bool { return k.ID == s.ID && k.Known() }); j >= 0 {
			s.Workflow, s.WorkflowStatus, s.WorkflowID, s.Head = known[j].Workflow, known[j].WorkflowStatus, known[j].WorkflowID, known[j].Head
		} else if whose == WhoseAll {
			read = true
		}
	}
	if whose == WhoseFailed && rules.WhoseFailed(out) {
		read = true
	}
	if read {
		if err := p.workflowRuns(ctx, c, repo, sha, head, out); err != nil {
			return nil, err
		}
	}
	return rules.TrimSuites(out), nil
}

// workflowRuns reads the workflow runs on sha and sets, on each suite of
// github-actions among suites, its workflow run, that run's status, and
// whose it is: head's (or no workflow run's), or another head's.
func (p *Lookup) workflowRuns(ctx context.Context, c Client, repo, sha string, head Head, suites []rules.CISuite) error {
	runs := map[int64]*github.WorkflowRun{}
	opt := &github.ListOptions{PerPage: perSuitePage}
	for page := 0; page < maxSuitePages; page++ {
		res, resp, err := c.ListWorkflowRunsForHead(ctx, gh.OwnerOf(repo), gh.NameOf(repo), sha, opt)
		var ge *github.ErrorResponse
		if errors.As(err, &ge) && ge.Response != nil && ge.Response.StatusCode == http.StatusForbidden {
			for i := range suites { // no Actions permission: the suites count as listed
				if suites[i].App == rules.ActionsApp {
					suites[i].Unreadable = true
				}
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("list workflow runs on %s: %w", sha, err)
		}
		for _, r := range res.WorkflowRuns {
			if r.GetHeadSHA() == sha && r.GetCheckSuiteID() != 0 {
				runs[r.GetCheckSuiteID()] = r
			}
		}
		if resp == nil || resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	for i := range suites {
		s := &suites[i]
		if s.App != rules.ActionsApp {
			continue
		}
		s.Workflow, s.WorkflowStatus, s.WorkflowID, s.Head = 0, "", 0, rules.SuiteOwn
		r := runs[s.ID]
		if r == nil {
			continue
		}
		s.Workflow, s.WorkflowStatus, s.WorkflowID = r.GetID(), r.GetStatus(), r.GetWorkflowID()
		if rules.OtherHead(head.Repo, head.Ref, r.GetHeadRepository().GetFullName(), r.GetHeadBranch()) {
			s.Head = rules.SuiteOther
		}
	}
	return nil
}

// Jobs are runs with how each check run of GitHub Actions not known yet was
// made (rules.CIRun.Made), and suites with whose each is (read, as CISuites
// reads it, when a suite holding such a run is not known yet; runs then
// lose another head's): the jobs of each own workflow run holding one are
// read (GET
// .../actions/runs/{run_id}/jobs?filter=all, one request per workflow run in
// all but rare cases); a run among them is a job's, any other run of its
// suite was created through the Checks API (a workflow's token can). A run
// of a github-actions suite that is no workflow run is no job's, and costs
// nothing to know. Without the Actions permission (the workflow runs or the
// jobs answer 403) it is unchecked: it counts as listed. A run whose suite
// was not read stays unknown. runs is not modified.
func (p *Lookup) Jobs(ctx context.Context, c Client, repo, sha string, head Head, runs []rules.CIRun, suites []rules.CISuite) ([]rules.CIRun, []rules.CISuite, error) {
	out := slices.Clone(runs)
	// Whose each workflow run is, when a suite of a run to tell is not
	// known yet (one request: the workflow runs on sha).
	for _, r := range out {
		if r.Status || r.App != rules.ActionsApp || r.Made != "" {
			continue
		}
		if slices.ContainsFunc(suites, func(s rules.CISuite) bool {
			return s.ID == r.Suite && s.App == rules.ActionsApp && s.Head == "" && !s.Unreadable
		}) {
			suites = slices.Clone(suites)
			if err := p.workflowRuns(ctx, c, repo, sha, head, suites); err != nil {
				return nil, nil, err
			}
			suites = rules.TrimSuites(suites)
			out = rules.OwnRuns(out, suites)
			break
		}
	}
	read := map[int64]map[int64]bool{} // workflow run: its jobs' ids; nil when unreadable
	for i := range out {
		r := &out[i]
		if r.Status || r.App != rules.ActionsApp || r.Made != "" {
			continue
		}
		j := slices.IndexFunc(suites, func(s rules.CISuite) bool { return s.ID == r.Suite && s.App == rules.ActionsApp })
		if j < 0 {
			continue
		}
		s := suites[j]
		switch {
		case s.Unreadable:
			r.Made = rules.MadeUnchecked
			continue
		case s.Head == "" || s.Other():
			continue
		case s.Workflow == 0:
			r.Made = rules.MadeByToken // no workflow run: no job
			continue
		}
		jobs, ok := read[s.Workflow]
		if !ok {
			var err error
			if jobs, err = workflowJobs(ctx, c, repo, s.Workflow); err != nil {
				return nil, nil, err
			}
			read[s.Workflow] = jobs
		}
		switch {
		case jobs == nil:
			r.Made = rules.MadeUnchecked
		case jobs[r.ID]:
			r.Made = rules.MadeByJob
		default:
			r.Made = rules.MadeByToken
		}
	}
	return out, suites, nil
}

// workflowJobs are the ids of the jobs of workflow run id (each attempt's):
// nil without the Actions permission.
func workflowJobs(ctx context.Context, c Client, repo string, id int64) (map[int64]bool, error) {
	jobs := map[int64]bool{}
	opt := &github.ListOptions{PerPage: perSuitePage}
	for page := 0; page < maxSuitePages; page++ {
		res, resp, err := c.ListWorkflowJobsAll(ctx, gh.OwnerOf(repo), gh.NameOf(repo), id, opt)
		var ge *github.ErrorResponse
		if errors.As(err, &ge) && ge.Response != nil && ge.Response.StatusCode == http.StatusForbidden {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list the jobs of workflow run %d: %w", id, err)
		}
		for _, j := range res.Jobs {
			jobs[j.GetID()] = true
		}
		if resp == nil || resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	return jobs, nil
}

// CheckRunOf is a check run as rules sees it: a result, the App that created
// it, and its suite.
func CheckRunOf(cr *github.CheckRun) rules.CIRun {
	return rules.CIRun{Name: cr.GetName(), ID: cr.GetID(), State: cr.GetStatus(), Conclusion: cr.GetConclusion(),
		URL: firstOf(cr.GetHTMLURL(), cr.GetDetailsURL()), At: cr.GetStartedAt().UTC(), App: cr.GetApp().GetSlug(),
		Suite: cr.GetCheckSuite().GetID()}
}

func firstOf(s ...string) string {
	for _, v := range s {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}

// ChangedFiles are the paths pull request n changes (at most 300: GitHub
// lists up to 3,000, and the first 300 say well enough what it touches).
func ChangedFiles(ctx context.Context, c Client, repo string, n int) ([]string, error) {
	out := []string{}
	opt := &github.ListOptions{PerPage: 100}
	for page := 0; page < maxFilePages; page++ {
		files, resp, err := c.ListPullRequestFiles(ctx, gh.OwnerOf(repo), gh.NameOf(repo), n, opt)
		if err != nil {
			return nil, fmt.Errorf("list files of #%d: %w", n, err)
		}
		for _, f := range files {
			out = append(out, f.GetFilename())
			if prev := f.GetPreviousFilename(); prev != "" { // renamed: the old name is changed too
				out = append(out, prev)
			}
		}
		if opt.Page = nextPage(resp, len(files), page, opt.PerPage); opt.Page == 0 {
			break
		}
	}
	return out, nil
}

// nextPage is the page to read after page (0-based) that listed n items of
// perPage, 0 when it was the last. A full page is never taken as the last on
// the word of its Link header alone: a page answered from the ETag cache
// (304) keeps the Link header of when it was cached, which says nothing of
// the items added since behind it. One more request then, when the list
// ends on a full page.
func nextPage(resp *github.Response, n, page, perPage int) int {
	if resp != nil && resp.NextPage != 0 {
		return resp.NextPage
	}
	if n < perPage {
		return 0
	}
	return page + 2
}

// CutOff is the entry Changes adds when GitHub lists no more of a pull
// request's files (it lists 3,000 at most) though it changes more: its
// fingerprint is new at every read, so a list cut short never matches what
// was approved and never excuses (DESIGN §2).
const CutOff = "\x00cut-off"

// cutOffs numbers the reads cut short, so no two share a fingerprint.
var cutOffs atomic.Int64

// Changes are the files pull request n changes (as ChangedFiles) and, for
// each, a fingerprint of its change (rules.MergeEntry): one paginated read of
// every page of its files GitHub lists (up to 30 requests of 100 files). If
// GitHub lists them all, the changes are complete; otherwise entries holds
// CutOff with a fingerprint no other read has.
func Changes(ctx context.Context, c Client, repo string, n int) ([]string, map[string]string, error) {
	out, entries := []string{}, map[string]string{}
	opt := &github.ListOptions{PerPage: 100}
	for page := 0; ; page++ {
		if page == maxChangePages {
			entries[CutOff] = fmt.Sprintf("cut-off %d", cutOffs.Add(1))
			break
		}
		files, resp, err := c.ListPullRequestFiles(ctx, gh.OwnerOf(repo), gh.NameOf(repo), n, opt)
		if err != nil {
			return nil, nil, fmt.Errorf("list files of #%d: %w", n, err)
		}
		for _, f := range files {
			out = append(out, f.GetFilename())
			if prev := f.GetPreviousFilename(); prev != "" { // renamed: the old name is changed too
				out = append(out, prev)
			}
			entries[f.GetFilename()] = rules.MergeEntry(f.GetStatus(), f.GetPreviousFilename(), f.GetSHA(), f.Patch)
		}
		opt.Page = nextPage(resp, len(files), page, opt.PerPage)
		if opt.Page == 0 {
			break
		}
	}
	return out, entries, nil
}

package decide

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/countersign/countersign/app/deliveries"
	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/gh"
	"github.com/countersign/countersign/app/lookup"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

// onPush records who pushed which commits (pushes.go), reads again whether a
// pushed branch still holds what excused the changes of the pull requests on
// it (retarget.go), and re-reads the configuration when a push to the
// default branch changes it.
func (p *Decider) onPush(ctx context.Context, d *store.Delivery, e *github.PushEvent, log *slog.Logger) (store.Commit, error) {
	recs, err := p.recordPush(ctx, d, e, log)
	if err != nil {
		return store.Commit{}, err
	}
	moved, err := p.basePushed(ctx, d, e)
	if err != nil {
		return store.Commit{}, err
	}
	w, err := p.configPush(ctx, d, e, log)
	if err != nil {
		return w, err
	}
	w.Enqueue = append(w.Enqueue, moved...)
	if len(recs) == 0 {
		return w, nil
	}
	if w.Records == nil {
		w.Records = map[string][]byte{}
	}
	maps.Copy(w.Records, recs)
	return w, nil
}

// configPush re-reads the configuration when a push to the default branch
// changes it, and reports the result on the pushed commit as the check run
// countersign/config, where the file's author sees it.
func (p *Decider) configPush(ctx context.Context, d *store.Delivery, e *github.PushEvent, log *slog.Logger) (store.Commit, error) {
	inst, repo := e.GetInstallation().GetID(), e.GetRepo().GetFullName()
	if inst == 0 || repo == "" || e.GetRef() != "refs/heads/"+e.GetRepo().GetDefaultBranch() || e.GetDeleted() || !touchesConfig(e) {
		return store.Commit{}, nil
	}
	c, err := p.clients(inst)
	if err != nil {
		return store.Commit{}, fault.Permanent(err)
	}
	var prev *records.Config
	var old records.Config
	if ok, err := records.Load(ctx, p.store, records.ConfigKey(repo), &old); err != nil {
		return store.Commit{}, err
	} else if ok {
		prev = &old
	}
	rec, err := p.look.ReadConfig(ctx, c, repo, prev, log)
	if err != nil {
		return store.Commit{}, err
	}
	log.Info("repository configuration re-read", "repo", repo, "valid", rec.Error == "")
	check := rules.Effect{Kind: rules.EffectConfigCheck, Repo: repo, SHA: e.GetAfter(), Problem: rec.Error, Line: rec.Line}
	if rec.Absent {
		check.Removed = true
		check.Note = "This push removes " + rules.ConfigPath + ": countersign uses the defaults from now on " + defaultsNote + "."
	}
	reach, err := p.boardReach(ctx, inst, d, prev, rec, &check)
	if err != nil {
		return store.Commit{}, err
	}
	w, err := records.CommitFor(inst, d, nil, []rules.Effect{check})
	if err != nil {
		return w, err
	}
	w.Records, w.Enqueue = reach.Records, reach.Enqueue
	if prev != nil && sameGate(prev.Config.Gate, rec.Config.Gate) {
		return w, nil
	}
	// gate: changed: the open pull requests that close no task are answered
	// again under it (tightened, one that passed must not pass any more).
	regate, err := p.untrackedOpen(ctx, repo)
	if err != nil {
		return store.Commit{}, err
	}
	for _, n := range regate {
		w.Enqueue = append(w.Enqueue, deliveries.Derived(fmt.Sprintf("%s/check/%d", d.ID, n), deliveries.Check, rules.TaskKey(repo, n),
			deliveries.CheckPayload{Installation: inst, Repo: repo, Number: n}))
	}
	log.Info("gate configuration changed: pull requests that close no task answered again", "repo", repo, "pulls", len(regate))
	return w, nil
}

// sameGate reports whether a and b answer every pull request that closes no
// task alike.
func sameGate(a, b rules.GateConfig) bool {
	return a.Untracked == b.Untracked && slices.EqualFunc(a.Exempt, b.Exempt, rules.SameLogin)
}

// untrackedOpen are the open pull requests of repo countersign has a record
// of that close no task.
func (p *Decider) untrackedOpen(ctx context.Context, repo string) ([]int, error) {
	ns, err := records.ScanNumbers(ctx, p.store, strings.TrimSuffix(records.PRKey(repo, 0), "0"))
	if err != nil {
		return nil, err
	}
	var out []int
	for _, n := range ns {
		pr, err := records.LoadPR(ctx, p.store, repo, n)
		if err != nil {
			return nil, err
		}
		if pr != nil && pr.Open && pr.Head != "" && len(pr.Links) == 0 {
			out = append(out, n)
		}
	}
	return out, nil
}

// defaultsNote says what the defaults are, for a check on a change that
// removes the configuration file.
const defaultsNote = "(leads: people with admin or maintain permission; anyone with write permission may verify; separation: auto; " +
	"every CI run on the head counts; a pull request that closes no task does not pass)"

func touchesConfig(e *github.PushEvent) bool {
	commits := e.Commits
	if e.HeadCommit != nil {
		commits = append(commits, e.HeadCommit)
	}
	for _, cm := range commits {
		for _, files := range [][]string{cm.Added, cm.Modified, cm.Removed} {
			if slices.Contains(files, rules.ConfigPath) {
				return true
			}
		}
	}
	return false
}

// pullConfigCheck validates the configuration file a pull request proposes,
// when its head moved (or it is first seen) and it changes the file: the
// countersign/config check run on its head says whether the file it would
// merge is valid, before anyone merges it. The changed files are those read
// for the task's contract when they are of this head, else read once.
func (p *Decider) pullConfigCheck(ctx context.Context, c Client, old, cur *rules.PullRequest, log *slog.Logger) (*rules.Effect, error) {
	if !cur.Open || cur.Head == "" || (old != nil && old.Head == cur.Head) {
		return nil, nil
	}
	files := cur.Files
	if cur.CommittersHead != cur.Head {
		var err error
		if files, err = lookup.ChangedFiles(ctx, c, cur.Repo, cur.Number); err != nil {
			return nil, err
		}
	}
	if !slices.Contains(files, rules.ConfigPath) {
		return nil, nil
	}
	e := &rules.Effect{Kind: rules.EffectConfigCheck, Repo: cur.Repo, Number: cur.Number, SHA: cur.Head}
	file, _, _, err := c.GetContents(ctx, gh.OwnerOf(cur.Repo), gh.NameOf(cur.Repo), rules.ConfigPath,
		&github.RepositoryContentGetOptions{Ref: cur.Head})
	switch {
	case fault.IsStatus(err, http.StatusNotFound):
		// The pull request removes (or renames) the file: valid, but say what
		// that means.
		e.Removed = true
		e.Note = "This pull request removes " + rules.ConfigPath + ": once it is merged, countersign uses the defaults " + defaultsNote + "."
		return e, nil
	case err != nil:
		return nil, fmt.Errorf("read %s of #%d: %w", rules.ConfigPath, cur.Number, err)
	case file == nil: // a directory
		e.Problem = rules.ConfigPath + " is a directory, not a file"
		return e, nil
	}
	var next rules.Config
	text, err := lookup.ConfigText(file)
	if err == nil {
		next, err = rules.ParseConfig([]byte(text))
	}
	if err == nil {
		if err = p.look.UnknownPilots(ctx, c, []byte(text), next); err != nil && !errors.As(err, new(*rules.ConfigError)) {
			return nil, err
		}
	}
	if err != nil {
		e.Problem = err.Error()
		var ce *rules.ConfigError
		if errors.As(err, &ce) {
			e.Line = ce.Line
		}
		return e, nil
	}
	// Valid: say how it lowers the gate, if it does, so that no one weakens
	// it silently.
	was, err := p.look.Config(ctx, c, cur.Repo, log)
	if err != nil {
		return nil, err
	}
	if relaxed := rules.Relaxations(was, next); len(relaxed) > 0 {
		e.Note = "Merged, this configuration lowers the gate:\n\n- " + strings.Join(relaxed, "\n- ")
	}
	return e, nil
}

package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

// configTTL is how long a repository's configuration is used before it is
// read again (a push to the default branch that changes it re-reads it at once).
const configTTL = 10 * time.Minute

// configRecord is a repository's configuration as last read.
type configRecord struct {
	Config rules.Config `json:"config"`
	Error  string       `json:"error,omitempty"` // the file's problem: Config is the last good one
	Line   int          `json:"line,omitempty"`
	ReadAt time.Time    `json:"read_at"`
}

func configKey(repo string) string { return "config/" + repo }

// config is repo's configuration: the cached one while fresh, else read again.
func (p *Processor) config(ctx context.Context, c *github.Client, repo string, log *slog.Logger) (rules.Config, error) {
	var rec configRecord
	ok, err := loadRecord(ctx, p.store, configKey(repo), &rec)
	if err != nil {
		return rules.Config{}, err
	}
	if ok && time.Since(rec.ReadAt) < configTTL {
		return rec.Config, nil
	}
	var prev *configRecord
	if ok {
		prev = &rec
	}
	fresh, err := p.readConfig(ctx, c, repo, prev, log)
	if err != nil {
		if prev != nil {
			log.Warn("configuration not re-read; using the last one", "repo", repo, "error", err)
			return prev.Config, nil
		}
		return rules.Config{}, err
	}
	return fresh.Config, nil
}

// pins are the accounts of the logins cfg names (rules.Config.Pins): the pin
// a login already had is kept, whoever holds the login now; a login named for
// the first time is pinned to the account that holds it now (GET
// /users/{login}, one request per new login). A login GitHub does not know is
// not pinned (it matches no account anyway).
func (p *Processor) pins(ctx context.Context, c *github.Client, cfg rules.Config, prev map[string]int64) (map[string]int64, error) {
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

// readConfig reads .github/countersign.yml from the default branch and caches
// it. An invalid file keeps the last good configuration (or the defaults)
// and records the error.
func (p *Processor) readConfig(ctx context.Context, c *github.Client, repo string, prev *configRecord, log *slog.Logger) (configRecord, error) {
	rec := configRecord{Config: rules.DefaultConfig(), ReadAt: time.Now().UTC()}
	if prev != nil && prev.Error == "" {
		rec.Config = prev.Config
	}
	file, _, _, err := c.Repositories.GetContents(ctx, splitRepo(repo), repoName(repo), rules.ConfigPath, nil)
	switch {
	case isStatus(err, http.StatusNotFound):
		rec.Config = rules.DefaultConfig()
	case err != nil:
		return rec, fmt.Errorf("read %s: %w", rules.ConfigPath, err)
	case file == nil: // a directory: GitHub lists it
		rec.Error = rules.ConfigPath + " is a directory, not a file"
		if prev != nil {
			rec.Config = prev.Config
		}
		log.Warn("invalid repository configuration; keeping the last good one", "repo", repo, "error", rec.Error)
	default:
		text, err := file.GetContent()
		if err != nil {
			return rec, fmt.Errorf("decode %s: %w", rules.ConfigPath, err)
		}
		cfg, err := rules.ParseConfig([]byte(text))
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
	if err := p.store.Put(ctx, configKey(repo), b); err != nil {
		return rec, fmt.Errorf("cache configuration: %w", err)
	}
	return rec, nil
}

// onPush re-reads the configuration when a push to the default branch changes
// it, and reports the result on the pushed commit as the check run
// countersign/config, where the file's author sees it.
func (p *Processor) onPush(ctx context.Context, d *store.Delivery, e *github.PushEvent, log *slog.Logger) (store.Commit, error) {
	inst, repo := e.GetInstallation().GetID(), e.GetRepo().GetFullName()
	if inst == 0 || repo == "" || e.GetRef() != "refs/heads/"+e.GetRepo().GetDefaultBranch() || e.GetDeleted() || !touchesConfig(e) {
		return store.Commit{}, nil
	}
	c, err := p.gh.Installation(inst)
	if err != nil {
		return store.Commit{}, permanent(err)
	}
	var prev *configRecord
	var old configRecord
	if ok, err := loadRecord(ctx, p.store, configKey(repo), &old); err != nil {
		return store.Commit{}, err
	} else if ok {
		prev = &old
	}
	rec, err := p.readConfig(ctx, c, repo, prev, log)
	if err != nil {
		return store.Commit{}, err
	}
	log.Info("repository configuration re-read", "repo", repo, "valid", rec.Error == "")
	return p.commitFor(inst, d, nil, []rules.Effect{{Kind: rules.EffectConfigCheck, Repo: repo, SHA: e.GetAfter(),
		Problem: rec.Error, Line: rec.Line}})
}

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
func (p *Processor) pullConfigCheck(ctx context.Context, c *github.Client, old, cur *rules.PullRequest, log *slog.Logger) (*rules.Effect, error) {
	if !cur.Open || cur.Head == "" || (old != nil && old.Head == cur.Head) {
		return nil, nil
	}
	files := cur.Files
	if cur.CommittersHead != cur.Head {
		var err error
		if files, err = p.changedFiles(ctx, c, cur.Repo, cur.Number); err != nil {
			return nil, err
		}
	}
	if !slices.Contains(files, rules.ConfigPath) {
		return nil, nil
	}
	e := &rules.Effect{Kind: rules.EffectConfigCheck, Repo: cur.Repo, Number: cur.Number, SHA: cur.Head}
	file, _, _, err := c.Repositories.GetContents(ctx, splitRepo(cur.Repo), repoName(cur.Repo), rules.ConfigPath,
		&github.RepositoryContentGetOptions{Ref: cur.Head})
	switch {
	case isStatus(err, http.StatusNotFound):
		// The pull request removes (or renames) the file: valid, but say what
		// that means.
		e.Note = "This pull request removes " + rules.ConfigPath + ": once it is merged, countersign uses the defaults " +
			"(leads: people with admin or maintain permission; anyone with write permission may verify; separation: auto; the default contracts)."
		return e, nil
	case err != nil:
		return nil, fmt.Errorf("read %s of #%d: %w", rules.ConfigPath, cur.Number, err)
	case file == nil: // a directory
		e.Problem = rules.ConfigPath + " is a directory, not a file"
		return e, nil
	}
	text, err := file.GetContent()
	if err != nil {
		e.Problem = fmt.Sprintf("%s: cannot decode the file: %v", rules.ConfigPath, err)
		return e, nil
	}
	next, err := rules.ParseConfig([]byte(text))
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
	was, err := p.config(ctx, c, cur.Repo, log)
	if err != nil {
		return nil, err
	}
	if relaxed := rules.Relaxations(was, next); len(relaxed) > 0 {
		e.Note = "Merged, this configuration lowers the gate:\n\n- " + strings.Join(relaxed, "\n- ")
	}
	return e, nil
}

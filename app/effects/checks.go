package effects

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/countersign/countersign/templates"
	"github.com/google/go-github/v60/github"
)

// verificationCheck makes the countersign/verification check run on e.SHA say
// e.Check, or, for a task's check (e.Latest), what the records say now. It
// holds the commit's write lock (headlock.go).
func (x *Executor) verificationCheck(ctx context.Context, c Client, inst int64, owner, name string, e rules.Effect, leftover bool) error {
	if e.SHA == "" {
		return fault.Permanent(fmt.Errorf("check effect without a commit"))
	}
	if e.Latest && x.heads == nil {
		return fault.Permanent(fmt.Errorf("a check to work out when applied, but no head checker is wired"))
	}
	unlock, err := x.lockCheck(ctx, e.Repo, e.SHA)
	if err != nil {
		return err
	}
	defer unlock()
	if e.Latest {
		now, err := x.heads.HeadCheck(ctx, inst, e.Repo, e.SHA, e.Number)
		if err != nil {
			return fmt.Errorf("work out the check on %s@%.12s: %w", e.Repo, e.SHA, err)
		}
		if now == nil {
			return nil // none to write: the pull request closed since, say
		}
		e = *now
	}
	return x.writeVerificationCheck(ctx, c, owner, name, e, leftover)
}

// writeVerificationCheck makes the countersign/verification check run on e.SHA say e.Check.
func (x *Executor) writeVerificationCheck(ctx context.Context, c Client, owner, name string, e rules.Effect, leftover bool) error {
	if e.Check == nil || e.SHA == "" {
		return fault.Permanent(fmt.Errorf("check effect without a check"))
	}
	title, err := templates.Render("check-title", e.Check)
	if err != nil {
		return fault.Permanent(err)
	}
	summary, err := templates.Render("check", e.Check)
	if err != nil {
		return fault.Permanent(err)
	}
	// The evidence links each task's card; the run's details link the card of
	// the first task still waiting (else the first task's).
	check := *e.Check
	check.Tasks = append([]rules.CheckTask(nil), e.Check.Tasks...)
	details, detailsWaiting := "", false
	for i := range check.Tasks {
		ct := &check.Tasks[i]
		u, err := x.cardURL(ctx, e.Repo, ct.Number)
		if err != nil {
			return err
		}
		if ct.Evidence != nil {
			ev := *ct.Evidence
			ev.Card = u
			ct.Evidence = &ev
		}
		if u != "" && (details == "" || ct.State != rules.Verified && !detailsWaiting) {
			details, detailsWaiting = u, ct.State != rules.Verified
		}
	}
	text, err := templates.CheckText(check)
	if err != nil {
		return fault.Permanent(err)
	}
	return x.upsertCheck(ctx, c, owner, name, rules.CheckName, e.SHA, e.Check.Status, e.Check.Conclusion, details,
		&github.CheckRunOutput{Title: github.String(strings.TrimSpace(title)), Summary: github.String(summary), Text: github.String(text)}, leftover)
}

// ConfigCheckName is the check run that reports a pushed configuration's validity.
const ConfigCheckName = "countersign/config"

// configCheck reports the configuration pushed in e.SHA.
func (x *Executor) configCheck(ctx context.Context, c Client, owner, name string, e rules.Effect, leftover bool) error {
	out := &github.CheckRunOutput{Title: github.String(rules.ConfigPath + " is valid"),
		Summary: github.String("countersign uses this configuration from now on.")}
	if e.Number > 0 {
		out.Summary = github.String(fmt.Sprintf("countersign will use this configuration once pull request #%d is merged into the default branch.", e.Number))
	}
	if e.Removed {
		out.Title = github.String(rules.ConfigPath + " removed: the defaults apply")
		out.Summary = github.String("")
	}
	if e.Note != "" {
		out.Summary = github.String(strings.TrimSpace(out.GetSummary() + "\n\n" + e.Note))
	}
	conclusion := "success"
	if e.Problem != "" {
		conclusion = "failure"
		out.Title = github.String(rules.ConfigPath + " is invalid")
		out.Summary = github.String("countersign keeps using the last valid configuration (or the defaults) until this is fixed:\n\n" +
			"```\n" + e.Problem + "\n```")
		if e.Number > 0 {
			out.Summary = github.String(fmt.Sprintf("Merged as it is, this file would be refused (countersign would keep the last valid configuration):\n\n```\n%s\n```\n\nCheck it locally with `countersign config check %s`.", e.Problem, rules.ConfigPath))
		}
		line := e.Line
		if line < 1 {
			line = 1
		}
		out.Annotations = []*github.CheckRunAnnotation{{Path: github.String(rules.ConfigPath), StartLine: github.Int(line),
			EndLine: github.Int(line), AnnotationLevel: github.String("failure"), Message: github.String(e.Problem)}}
	}
	return x.upsertCheck(ctx, c, owner, name, ConfigCheckName, e.SHA, "completed", conclusion, "", out, leftover)
}

// checkRunRecord is what countersign remembers of the check run it wrote
// last for a name on a commit.
type checkRunRecord struct {
	ID        int64  `json:"id"`
	Completed bool   `json:"completed"`
	Digest    string `json:"digest"` // of what it said: an identical update is skipped
}

// upsertCheck makes the App's check run checkName on sha say status,
// conclusion and out. The run it made before (remembered; else looked up by
// name) is updated while in progress; a completed run cannot change on GitHub,
// so a change after completion is a new run, which branch protection reads as
// the latest. Saying the same again writes nothing.
//
// With no run remembered, the runs on sha are looked through unless sha came
// as a pull request's new head (newHeadKey) and the effect is not leftover
// (it may have made one before a crash): a run countersign makes is
// remembered before its effect is done with, so only a lost store or a crash
// can leave one unremembered.
func (x *Executor) upsertCheck(ctx context.Context, c Client, owner, name, checkName, sha, status, conclusion, details string, out *github.CheckRunOutput, leftover bool) error {
	idKey := "checkrun/" + owner + "/" + name + "/" + checkName + "@" + sha
	digest := fmt.Sprintf("%x", sha256.Sum256([]byte(status+"\x00"+conclusion+"\x00"+details+"\x00"+out.GetTitle()+"\x00"+out.GetSummary()+"\x00"+out.GetText())))
	var rec checkRunRecord
	if _, err := records.Load(ctx, x.store, idKey, &rec); err != nil {
		return err
	}
	if rec.ID != 0 && rec.Digest == digest {
		return nil
	}
	look := leftover
	if rec.ID == 0 && !look {
		_, err := x.store.Get(ctx, records.NewHeadKey(owner+"/"+name, sha))
		switch {
		case errors.Is(err, store.ErrNotFound):
			look = true
		case err != nil:
			return fmt.Errorf("read %s: %w", records.NewHeadKey(owner+"/"+name, sha), err)
		}
	}
	if rec.ID == 0 && look {
		runs, _, err := c.ListCheckRunsForRef(ctx, owner, name, sha, &github.ListCheckRunsOptions{
			CheckName: github.String(checkName), AppID: github.Int64(x.gh.AppID()), ListOptions: github.ListOptions{PerPage: 100}})
		if err != nil {
			return fmt.Errorf("list check runs: %w", err)
		}
		for _, r := range runs.CheckRuns { // newest first
			if r.GetName() == checkName && r.GetApp().GetID() == x.gh.AppID() {
				rec = checkRunRecord{ID: r.GetID(), Completed: r.GetStatus() == "completed"}
				break
			}
		}
	}
	var conc *string
	if status == "completed" {
		conc = github.String(conclusion)
	}
	written := false
	if rec.ID != 0 && !rec.Completed {
		_, _, err := c.UpdateCheckRun(ctx, owner, name, rec.ID, github.UpdateCheckRunOptions{
			Name: checkName, Status: github.String(status), Conclusion: conc, Output: out, DetailsURL: optional(details)})
		switch {
		case err == nil:
			written = true
		case !fault.IsStatus(err, 404) && !fault.IsStatus(err, 422):
			return fmt.Errorf("update check run: %w", err)
		}
	}
	if !written {
		run, _, err := c.CreateCheckRun(ctx, owner, name, github.CreateCheckRunOptions{
			Name: checkName, HeadSHA: sha, Status: github.String(status), Conclusion: conc, Output: out, DetailsURL: optional(details)})
		if err != nil {
			return fmt.Errorf("create check run: %w", err)
		}
		rec.ID = run.GetID()
	}
	rec.Completed, rec.Digest = status == "completed", digest
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode check run record: %w", err)
	}
	if err := x.store.Put(ctx, idKey, b); err != nil {
		return fmt.Errorf("remember check run: %w", err)
	}
	return nil
}

// optional is s as an optional API field: nil when empty.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

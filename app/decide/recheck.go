package decide

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/countersign/countersign/app/gh"
	"github.com/countersign/countersign/app/lookup"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

// GitHub promises no order of deliveries, and a task's events come by
// different ways: a command straight to the task's key, an approval through
// its pull request's key, a CI result through the repository's and then the
// pull request's. So a /verify can be judged before the approval or the
// last run that came before it on GitHub has been taken in. Before such a
// command is refused for a missing approval or pending CI, the task's open
// pull requests are read once from GitHub: their head, their reviews and the
// CI results on the head. What the record lacks is taken in first, as the
// deliveries that bring it would (the same events, with the same times), and
// the command is decided again. When those deliveries come, they find it
// taken in and change nothing.

// maxReviewPages bounds the reviews read per pull request.
const maxReviewPages = 3

// recheck decides ev (a command that dec refused, asking for a recheck)
// again on task after taking in what GitHub shows of its open pull requests
// that the record lacks. With nothing to take in, dec stands.
// The CI results taken in are returned as the records to write with the
// decision (records.AheadKey), so that the pull request's own key never
// tells the task an older picture.
func (p *Decider) recheck(ctx context.Context, c Client, task *rules.Task, ev rules.Event, f rules.Facts, dec rules.Decision, log *slog.Logger) (rules.Decision, map[string][]byte, error) {
	var news []rules.Event
	ahead := map[string][]byte{}
	for _, lp := range task.PRs {
		if !lp.Open {
			continue
		}
		evs, err := p.unseen(ctx, c, task, lp, f.Config)
		if err != nil {
			return dec, nil, err
		}
		for _, e := range evs {
			if e.Kind == rules.PRChecked {
				b, err := json.Marshal(e.PR.Runs)
				if err != nil {
					return dec, nil, fmt.Errorf("encode runs: %w", err)
				}
				ahead[records.AheadKey(task.Repo, lp.Number, lp.Head)] = b
			}
		}
		news = append(news, evs...)
	}
	if len(news) == 0 {
		return dec, nil, nil
	}
	log.Info("command refused on a picture GitHub has moved past: what GitHub shows taken in first", "task", task.Key(), "events", len(news))
	var steps []rules.Decision
	t := task
	for _, e := range news {
		d := rules.DecideTask(t, e, f)
		if d.Task != nil {
			t = d.Task
		}
		steps = append(steps, d)
	}
	last := rules.DecideTask(t, ev, f)
	if last.Task == nil {
		last.Task = t
	}
	return combine(append(steps, last)), ahead, nil
}

// unseen are the events that bring task's record of its open pull request
// lp up to what GitHub shows: the CI results on its head, then the
// approvals of its head not yet counted, oldest first. A head that moved on
// GitHub brings nothing: its push is on its way, and it makes what was
// approved and verified stale anyway.
func (p *Decider) unseen(ctx context.Context, c Client, task *rules.Task, lp rules.LinkedPR, cfg rules.Config) ([]rules.Event, error) {
	owner, name := gh.OwnerOf(task.Repo), gh.NameOf(task.Repo)
	pr, err := records.LoadPR(ctx, p.store, task.Repo, lp.Number)
	if err != nil || pr == nil || pr.Head != lp.Head {
		return nil, err
	}
	now, _, err := c.GetPullRequest(ctx, owner, name, lp.Number)
	if err != nil {
		return nil, fmt.Errorf("read pull request #%d: %w", lp.Number, err)
	}
	if now.GetHead().GetSHA() != lp.Head || now.GetState() != "open" {
		return nil, nil
	}
	var out []rules.Event
	runs, err := p.look.CIRuns(ctx, c, task.Repo, lp.Head)
	if err != nil {
		return nil, err
	}
	merged := pr.Runs
	for _, r := range runs {
		merged, _ = rules.MergeRun(merged, r)
	}
	// The whole CI has concluded only when its workflow runs (check suites)
	// have: they are read once when every check run seen has finished.
	suites := pr.Suites
	if due := rules.CIReadDue(cfg.Contracts, merged, suites); due.Suites {
		if suites, err = p.look.CISuites(ctx, c, task.Repo, lp.Head, headOf(pr), pr.Suites, lookup.WhoseFor(due, true)); err != nil {
			return nil, err
		}
		merged = rules.OwnRuns(merged, suites) // another head's workflow runs are not this pull request's
		if merged, suites, err = p.jobsOf(ctx, c, task.Repo, lp.Head, headOf(pr), cfg.Contracts, merged, suites); err != nil {
			return nil, err
		}
	}
	// CI results are taken in with the pull request as the task last heard
	// of it: when the record has moved on in another way (a description
	// edited, marked ready), its own delivery to the task is on its way, and
	// what it brings is decided there.
	inStep := pr.Author.Is(lp.Author) && pr.Draft == lp.Draft && pr.Open == lp.Open && pr.Merged == lp.Merged && pr.Outsider == lp.Outsider
	if inStep && (!slices.Equal(rules.RelevantRuns(cfg.Contracts, rules.CountedRuns(merged, suites)), lp.Runs) || !slices.Equal(suites, lp.Suites)) {
		facts := pr.Facts()
		facts.Runs, facts.Suites = merged, suites
		out = append(out, rules.Event{Kind: rules.PRChecked, Actor: rules.User{Login: "ci"}, At: latestRun(merged),
			Issue: rules.IssueFacts{Repo: task.Repo, Number: task.Number}, PR: facts})
	}
	latest := map[int64]*github.PullRequestReview{} // each reviewer's latest review
	var order []int64
	opt := &github.ListOptions{PerPage: 100}
	for page := 0; page < maxReviewPages; page++ {
		list, resp, err := c.ListPullRequestReviews(ctx, owner, name, lp.Number, opt)
		if err != nil {
			return nil, fmt.Errorf("list reviews of #%d: %w", lp.Number, err)
		}
		for _, rv := range list {
			id := rv.GetUser().GetID()
			switch rv.GetState() {
			case "APPROVED", "CHANGES_REQUESTED", "DISMISSED":
			default:
				continue // a comment changes no approval
			}
			if _, ok := latest[id]; !ok {
				order = append(order, id)
			}
			if o := latest[id]; o == nil || o.GetID() < rv.GetID() {
				latest[id] = rv
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	var reviews []*github.PullRequestReview
	for _, id := range order {
		rv := latest[id]
		who := gh.User(rv.GetUser())
		if rv.GetState() != "APPROVED" || rv.GetCommitID() != lp.Head ||
			slices.ContainsFunc(task.Approvals, func(a rules.Approval) bool { return a.PR == lp.Number && a.By.Is(who) && a.Head == lp.Head }) {
			continue
		}
		reviews = append(reviews, rv)
	}
	slices.SortStableFunc(reviews, func(a, b *github.PullRequestReview) int {
		return a.GetSubmittedAt().Time.Compare(b.GetSubmittedAt().Time)
	})
	for _, rv := range reviews {
		// As onReview makes it of the review's delivery: the reviewer is its
		// sender, its time the review's.
		who := gh.User(rv.GetUser())
		out = append(out, rules.Event{Kind: rules.PRReviewed, Actor: who, At: rv.GetSubmittedAt().Time.UTC(),
			Issue: rules.IssueFacts{Repo: task.Repo, Number: task.Number}, PR: pr.Facts(),
			Review: &rules.ReviewFacts{Reviewer: who, State: "approved", Head: rv.GetCommitID(), Body: rv.GetBody()}})
	}
	return out, nil
}

// latestRun is when the latest of runs happened.
func latestRun(runs []rules.CIRun) (at time.Time) {
	for _, r := range runs {
		if r.At.After(at) {
			at = r.At
		}
	}
	return at
}

// combine is one decision made of steps, decided one after the other on
// one task: the last record, every effect once (the labels and card as they
// end), every pull request and goal to tell.
func combine(steps []rules.Decision) rules.Decision {
	var out rules.Decision
	card := false
	var labels, board *rules.Effect
	for _, s := range steps {
		if s.Task != nil {
			out.Task = s.Task
		}
		for _, e := range s.Effects {
			switch e.Kind {
			case rules.EffectSyncLabels:
				labels = &e
			case rules.EffectSyncCard:
				card = true
			case rules.EffectBoard: // the value the board must show as the steps end
				board = &e
			default:
				out.Effects = append(out.Effects, e)
			}
		}
		out.Refresh = append(out.Refresh, s.Refresh...)
		for _, g := range s.Goals {
			if !slices.Contains(out.Goals, g) {
				out.Goals = append(out.Goals, g)
			}
		}
	}
	var head []rules.Effect
	if labels != nil {
		labels.Labels = out.Task.Labels()
		head = append(head, *labels)
	}
	if card && out.Task != nil {
		head = append(head, rules.Effect{Kind: rules.EffectSyncCard, Repo: out.Task.Repo, Number: out.Task.Number})
	}
	if board != nil && out.Task != nil {
		board.Value = rules.BoardValue(out.Task)
		head = append(head, *board)
	}
	out.Effects = append(head, out.Effects...)
	slices.Sort(out.Refresh)
	out.Refresh = slices.Compact(out.Refresh)
	return out
}

package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/app/authors"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

// This file turns GitHub's webhooks into rules' events. Issue events and
// comments on an issue are the task's own (their ordering key is the task's);
// pull request events, reviews and comments on a pull request are decided
// under the pull request's key, which records the pull request and fans its
// events out, as internal deliveries, to the tasks it closes.

var issueKinds = map[string]rules.EventKind{
	"opened": rules.IssueOpened, "edited": rules.IssueEdited, "milestoned": rules.IssueEdited, "demilestoned": rules.IssueEdited,
	"assigned": rules.IssueAssigned, "unassigned": rules.IssueAssigned,
	"closed": rules.IssueClosed, "reopened": rules.IssueReopened,
	"labeled": rules.IssueLabeled, "unlabeled": rules.IssueUnlabeled,
}

func (p *Processor) onIssue(ctx context.Context, d *store.Delivery, e *github.IssuesEvent, log *slog.Logger) (store.Commit, error) {
	inst, repo, issue := e.GetInstallation().GetID(), e.GetRepo().GetFullName(), e.GetIssue()
	kind, ok := issueKinds[e.GetAction()]
	if !ok || inst == 0 || repo == "" || issue.GetNumber() == 0 || issue.IsPullRequest() {
		return store.Commit{}, nil
	}
	if own, err := p.own(ctx, e.GetSender()); err != nil || own {
		return store.Commit{}, err
	}
	w, err := p.onPeoplesIssue(ctx, d, e, inst, repo, issue, kind, log)
	if err == nil && (kind == rules.IssueLabeled || kind == rules.IssueUnlabeled) && rules.Owned(e.GetLabel().GetName()) {
		// Someone changed a label countersign owns: the labels it recorded
		// setting are no longer what the issue carries. The next sync reads them.
		if w.Records == nil {
			w.Records = map[string][]byte{}
		}
		w.Records[labelViewKey(repo, issue.GetNumber())] = staleLabelView
	}
	return w, err
}

// onPeoplesIssue decides an issues event someone (not countersign) caused.
func (p *Processor) onPeoplesIssue(ctx context.Context, d *store.Delivery, e *github.IssuesEvent, inst int64, repo string, issue *github.Issue, kind rules.EventKind, log *slog.Logger) (store.Commit, error) {
	if m, err := p.goalIssue(ctx, repo, issue); err != nil || m != 0 {
		if err != nil {
			return store.Commit{}, err
		}
		var w store.Commit
		if gk, ok := goalIssueKinds[e.GetAction()]; ok {
			w = p.onGoalIssue(inst, d, repo, m, issue, rules.GoalEvent{Kind: gk, Actor: e.GetSender().GetLogin(), ActorID: e.GetSender().GetID(),
				At: eventTime(issue.GetUpdatedAt().Time, d), Label: e.GetLabel().GetName()})
		}
		switch e.GetAction() {
		case "edited", "closed", "reopened":
			// Someone changed the goal issue: what countersign recorded
			// writing there is no longer what it shows.
			w.Records = map[string][]byte{goalTextKey(repo, issue.GetNumber()): staleGoalText}
		}
		return w, nil
	}
	return p.decideTask(ctx, inst, d, rules.Event{
		Kind: kind, Actor: user(e.GetSender()), At: eventTime(issue.GetUpdatedAt().Time, d),
		Issue: issueFacts(repo, issue), Label: e.GetLabel().GetName(), Reason: issue.GetStateReason(),
	}, log)
}

func (p *Processor) onComment(ctx context.Context, d *store.Delivery, e *github.IssueCommentEvent, log *slog.Logger) (store.Commit, error) {
	inst, repo, issue, cm := e.GetInstallation().GetID(), e.GetRepo().GetFullName(), e.GetIssue(), e.GetComment()
	if inst == 0 || repo == "" || issue.GetNumber() == 0 {
		return store.Commit{}, nil
	}
	cmds := rules.ParseCommands(cm.GetBody())
	if len(cmds) == 0 {
		return store.Commit{}, nil
	}
	if own, err := p.own(ctx, e.GetSender()); err != nil || own {
		return store.Commit{}, err
	}
	if !issue.IsPullRequest() {
		if m, err := p.goalIssue(ctx, repo, issue); err != nil || m != 0 {
			return p.onGoalIssue(inst, d, repo, m, issue, rules.GoalEvent{Kind: rules.GoalCommented, Actor: cm.GetUser().GetLogin(), ActorID: cm.GetUser().GetID(),
				At: eventTime(cm.GetCreatedAt().Time, d), CommentID: cm.GetID(), Commands: cmds}), err
		}
	}
	ev := rules.Event{Kind: rules.Commented, Actor: user(cm.GetUser()), At: eventTime(cm.GetCreatedAt().Time, d),
		CommentID: cm.GetID(), Where: issue.GetNumber(), Commands: cmds, Text: cm.GetBody()}
	if !issue.IsPullRequest() {
		ev.Issue = issueFacts(repo, issue)
		return p.decideTask(ctx, inst, d, ev, log)
	}
	c, err := p.gh.Installation(inst)
	if err != nil {
		return store.Commit{}, permanent(err)
	}
	old, err := loadPR(ctx, p.store, repo, issue.GetNumber())
	if err != nil {
		return store.Commit{}, err
	}
	cur := old
	var gate linkGate
	if cur == nil { // a pull request from before countersign: read it
		pr, _, err := c.PullRequests.Get(ctx, splitRepo(repo), repoName(repo), issue.GetNumber())
		if err != nil {
			return store.Commit{}, fmt.Errorf("read pull request #%d: %w", issue.GetNumber(), err)
		}
		if cur, err = p.pullRecord(ctx, c, inst, repo, pr, nil); err != nil {
			return store.Commit{}, err
		}
		if gate, err = p.gateLinks(ctx, c, repo, nil, cur, false, log); err != nil {
			return store.Commit{}, err
		}
	}
	return p.fanout(ctx, inst, d, old, cur, ev, gate)
}

var pullKinds = map[string]rules.EventKind{
	"opened": rules.PRLinked, "reopened": rules.PRLinked, "edited": rules.PRLinked,
	"ready_for_review": rules.PRReady, "converted_to_draft": rules.PRDraft, "synchronize": rules.PRPushed,
}

func (p *Processor) onPull(ctx context.Context, d *store.Delivery, e *github.PullRequestEvent, log *slog.Logger) (store.Commit, error) {
	inst, repo, pr := e.GetInstallation().GetID(), e.GetRepo().GetFullName(), e.GetPullRequest()
	if inst == 0 || repo == "" || pr.GetNumber() == 0 {
		return store.Commit{}, nil
	}
	kind, ok := pullKinds[e.GetAction()]
	if e.GetAction() == "closed" {
		kind, ok = rules.PRUnlinked, true
		if pr.GetMerged() {
			kind = rules.PRMerged
		}
	}
	if !ok {
		return store.Commit{}, nil
	}
	if own, err := p.own(ctx, e.GetSender()); err != nil || own {
		return store.Commit{}, err
	}
	w, err := p.pullEvent(ctx, inst, repo, d, pr, rules.Event{Kind: kind, Actor: user(e.GetSender()), At: eventTime(pr.GetUpdatedAt().Time, d)}, log)
	if err == nil && pr.GetHead().GetSHA() != "" && (e.GetAction() == "opened" || e.GetAction() == "synchronize") {
		// A new head: countersign has written no check run on it (see
		// upsertCheck), so its first check is created without a look.
		if w.Records == nil {
			w.Records = map[string][]byte{}
		}
		w.Records[newHeadKey(repo, pr.GetHead().GetSHA())] = []byte{'1'}
	}
	return w, err
}

// newHeadKey records that sha came as a pull request's new head
// (pull_request opened or synchronize): no check run of countersign's can be
// on it but those it remembers making.
func newHeadKey(repo, sha string) string { return "new-head/" + repo + "@" + sha }

func (p *Processor) onReview(ctx context.Context, d *store.Delivery, e *github.PullRequestReviewEvent, log *slog.Logger) (store.Commit, error) {
	inst, repo, pr, rv := e.GetInstallation().GetID(), e.GetRepo().GetFullName(), e.GetPullRequest(), e.GetReview()
	if inst == 0 || repo == "" || pr.GetNumber() == 0 {
		return store.Commit{}, nil
	}
	if own, err := p.own(ctx, e.GetSender()); err != nil || own {
		return store.Commit{}, err
	}
	state := strings.ToLower(rv.GetState())
	if e.GetAction() == "dismissed" {
		state = "dismissed"
	}
	return p.pullEvent(ctx, inst, repo, d, pr, rules.Event{Kind: rules.PRReviewed, Actor: user(e.GetSender()),
		At:     eventTime(rv.GetSubmittedAt().Time, d),
		Review: &rules.ReviewFacts{Reviewer: user(rv.GetUser()), State: state, Head: rv.GetCommitID(), Body: rv.GetBody()}}, log)
}

// pullEvent records pull request pr as its event shows it and fans ev out to
// the tasks it closes.
func (p *Processor) pullEvent(ctx context.Context, inst int64, repo string, d *store.Delivery, pr *github.PullRequest, ev rules.Event, log *slog.Logger) (store.Commit, error) {
	c, err := p.gh.Installation(inst)
	if err != nil {
		return store.Commit{}, permanent(err)
	}
	old, err := loadPR(ctx, p.store, repo, pr.GetNumber())
	if err != nil {
		return store.Commit{}, err
	}
	if old != nil && ev.Kind != rules.PRReviewed && pr.UpdatedAt != nil && pr.GetUpdatedAt().Time.Before(old.UpdatedAt) {
		// A snapshot older than the record (a missed delivery healed after
		// later ones were processed): what it says was overtaken.
		log.Info("pull request event older than what countersign knows: skipped", "pr", pr.GetNumber(),
			"event_updated_at", pr.GetUpdatedAt().Time, "record_updated_at", old.UpdatedAt)
		return store.Commit{}, nil
	}
	cur := old
	var gate linkGate
	if old == nil || ev.Kind != rules.PRReviewed {
		// A review's copy of its pull request may be older than the record (a
		// push processed before the review's delivery); only a pull request's own
		// events restate it.
		if cur, err = p.pullRecord(ctx, c, inst, repo, pr, old); err != nil {
			return store.Commit{}, err
		}
		if gate, err = p.gateLinks(ctx, c, repo, old, cur, false, log); err != nil {
			return store.Commit{}, err
		}
	}
	check, err := p.pullConfigCheck(ctx, c, old, cur, log)
	if err != nil {
		return store.Commit{}, err
	}
	w, err := p.fanout(ctx, inst, d, old, cur, ev, gate)
	if err != nil || check == nil {
		return w, err
	}
	b, err := json.Marshal(outboxEffect{Installation: inst, Delivery: d.ID, Key: d.ID + "/config", At: time.Now().UTC(), Effect: *check,
		Background: background(d)})
	if err != nil {
		return w, fmt.Errorf("encode effect: %w", err)
	}
	w.Effects = append(w.Effects, b)
	return w, nil
}

// pullRecord is the record of pull request pr as the webhook shows it. Its
// committers, changed files and CI results are read from GitHub when it closes
// a task and its head moved; later CI results come as their own webhooks.
func (p *Processor) pullRecord(ctx context.Context, c *github.Client, inst int64, repo string, pr *github.PullRequest, old *rules.PullRequest) (*rules.PullRequest, error) {
	cur := &rules.PullRequest{Repo: repo, Links: rules.ClosingRefs(pr.GetBody(), repo), PRFacts: rules.PRFacts{
		Number: pr.GetNumber(), Author: user(pr.GetUser()), Head: pr.GetHead().GetSHA(), Assignees: users(pr.Assignees),
		Draft: pr.GetDraft(), Open: pr.GetState() == "open", Merged: pr.GetMerged() || pr.MergedAt != nil, // reviews' copies carry merged_at only
		Body: pr.GetBody()}, UpdatedAt: pr.GetUpdatedAt().Time}
	if old != nil && (old.CommittersHead == cur.Head || len(cur.Links) == 0 || !cur.Open) {
		cur.Committers, cur.Files, cur.CommittersHead = old.Committers, old.Files, old.CommittersHead
		if old.Head == cur.Head {
			cur.Runs = old.Runs
		}
		return cur, nil
	}
	if len(cur.Links) == 0 || !cur.Open {
		return cur, nil
	}
	var err error
	if cur.Committers, err = p.committers(ctx, c, inst, repo, cur.Number); err != nil {
		return nil, err
	}
	if cur.Files, err = p.changedFiles(ctx, c, repo, cur.Number); err != nil {
		return nil, err
	}
	if cur.Runs, _, err = p.ciRuns(ctx, c, repo, cur.Head); err != nil {
		return nil, err
	}
	cur.CommittersHead = cur.Head
	return cur, nil
}

// maxCommitPages bounds the commits read per pull request (GitHub lists at
// most 250 anyway).
const maxCommitPages = 3

// committers are who built pull request n's commits, as GitHub shows them
// (DESIGN §1): each commit's author and committer (the REST API's accounts,
// which GitHub matches by email) and its co-authors (Co-authored-by:
// trailers, which GraphQL's Commit.authors resolves by verified email; one
// query per 100 commits). An email GitHub matches to no account names no one:
// nothing is guessed from a trailer's text. web-flow, GitHub's own committer
// of web edits and merges, builds nothing.
func (p *Processor) committers(ctx context.Context, c *github.Client, inst int64, repo string, n int) ([]rules.Member, error) {
	var out []rules.Member
	add := func(u rules.User, as string) {
		if !u.IsZero() && !slices.ContainsFunc(out, func(m rules.Member) bool { return m.Is(u) }) {
			out = append(out, rules.MemberOf(u, as))
		}
	}
	opt := &github.ListOptions{PerPage: 100}
	for page := 0; page < maxCommitPages; page++ {
		commits, resp, err := c.PullRequests.ListCommits(ctx, splitRepo(repo), repoName(repo), n, opt)
		if err != nil {
			return nil, fmt.Errorf("list commits of #%d: %w", n, err)
		}
		for _, cm := range commits {
			add(user(cm.GetAuthor()), fmt.Sprintf("commit author on #%d", n))
			if committer := user(cm.GetCommitter()); !isWebFlow(committer) {
				add(committer, fmt.Sprintf("committer on #%d", n))
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	res, err := authors.Of(ctx, p.gh.GraphQL(inst), splitRepo(repo), repoName(repo), n)
	if err != nil {
		return nil, err
	}
	if res.Truncated && p.log != nil {
		p.log.Warn("pull request has more commits or co-authors than are read: the rest are not builders",
			"repo", repo, "number", n, "max_commits", authors.MaxCommits)
	}
	for _, a := range res.Authors {
		if a.CoAuthor && a.User.ID != 0 {
			add(rules.User{ID: a.User.ID, Login: a.User.Login}, fmt.Sprintf("co-author on #%d", n))
		}
	}
	return out, nil
}

// webFlowID is the id of web-flow, the account GitHub commits web edits and
// merges as.
const webFlowID = 19864447

func isWebFlow(u rules.User) bool {
	return u.ID == webFlowID || (u.ID == 0 && strings.EqualFold(u.Login, "web-flow"))
}

// fanout records pull request cur and enqueues, for each task it closes (or
// stopped closing), the task events ev means; gate's reply (if any) is posted
// on the pull request and its records written.
func (p *Processor) fanout(ctx context.Context, inst int64, d *store.Delivery, old, cur *rules.PullRequest, ev rules.Event, gate linkGate) (store.Commit, error) {
	var effects []rules.Effect
	if gate.reply != nil {
		effects = append(effects, rules.Effect{Kind: rules.EffectNotice, Repo: cur.Repo, Number: cur.Number, Notice: gate.reply})
	}
	w, err := p.commitFor(inst, d, nil, effects)
	if err != nil {
		return w, err
	}
	b, err := json.Marshal(cur)
	if err != nil {
		return w, err
	}
	w.Records = map[string][]byte{prRecordKey(cur.Repo, cur.Number): b}
	for k, v := range gate.records {
		w.Records[k] = v
	}
	if err := p.indexHead(ctx, &w, old, cur); err != nil {
		return w, err
	}
	fan := rules.Fanout(old, cur, ev.Kind)
	if ev.Kind == rules.Commented && len(fan) == 0 {
		// Commands on a pull request that closes no task: say so rather than
		// leave them unanswered.
		n := &rules.Notice{Kind: rules.NoticeRefused, Actor: ev.Actor.Login, ActorID: ev.Actor.ID}
		for i, cmd := range ev.Commands {
			if i == rules.MaxCommands {
				break
			}
			n.Refusals = append(n.Refusals, rules.Refusal{Quote: cmd.Line,
				Reason: closesNoTask(cur)})
		}
		nw, err := p.commitFor(inst, d, nil, append(effects, rules.Effect{Kind: rules.EffectNotice, Repo: cur.Repo, Number: cur.Number, Notice: n}))
		nw.Records = w.Records
		return nw, err
	}
	for i, te := range fan {
		tev := ev
		tev.Kind = te.Kind
		tev.PR = cur.Facts()
		tev.Issue = rules.IssueFacts{Repo: cur.Repo, Number: te.Number}
		if te.Kind != ev.Kind { // PRLinked or PRUnlinked that precedes the event proper
			tev.Review, tev.Commands, tev.CommentID, tev.Text = nil, nil, 0, ""
		}
		w.Enqueue = append(w.Enqueue, derived(fmt.Sprintf("%s/%d/%d", d.ID, te.Number, i), taskEvent,
			rules.TaskKey(cur.Repo, te.Number), taskDelivery{Installation: inst, Event: tev}))
	}
	return w, nil
}

// decideCheck works out the verification check of a pull request from the
// tasks it closes.
func (p *Processor) decideCheck(ctx context.Context, cd checkDelivery, d *store.Delivery) (store.Commit, error) {
	pr, err := loadPR(ctx, p.store, cd.Repo, cd.Number)
	if err != nil {
		return store.Commit{}, err
	}
	var records map[string][]byte
	if pr == nil {
		// Lost with the store: the task that asks still has a gate to keep in
		// step (invariant 5), so the pull request is read again and recorded.
		if pr, records, err = p.rebuildPR(ctx, cd); err != nil || pr == nil {
			return store.Commit{}, err
		}
	}
	if (!pr.Open && !pr.Merged) || pr.Head == "" {
		return store.Commit{Records: records}, nil
	}
	tasks := make([]*rules.Task, len(pr.Links))
	for i, n := range pr.Links {
		if tasks[i], err = loadTask(ctx, p.store, cd.Repo, n); err != nil {
			return store.Commit{}, err
		}
	}
	check := rules.CheckFor(pr, tasks)
	w, err := p.commitFor(cd.Installation, d, nil, []rules.Effect{{Kind: rules.EffectCheck, Repo: cd.Repo, Number: cd.Number, SHA: pr.Head, Check: &check}})
	w.Records = records
	return w, err
}

// rebuildPR reads pull request cd.Number from GitHub and returns its record
// and the records to write for it (itself, and its head's index). nil if it
// is gone.
func (p *Processor) rebuildPR(ctx context.Context, cd checkDelivery) (*rules.PullRequest, map[string][]byte, error) {
	c, err := p.gh.Installation(cd.Installation)
	if err != nil {
		return nil, nil, permanent(err)
	}
	gpr, _, err := c.PullRequests.Get(ctx, splitRepo(cd.Repo), repoName(cd.Repo), cd.Number)
	if isStatus(err, 404) || isStatus(err, 410) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read pull request #%d: %w", cd.Number, err)
	}
	pr, err := p.pullRecord(ctx, c, cd.Installation, cd.Repo, gpr, nil)
	if err != nil {
		return nil, nil, err
	}
	b, err := json.Marshal(pr)
	if err != nil {
		return nil, nil, err
	}
	w := store.Commit{Records: map[string][]byte{prRecordKey(cd.Repo, cd.Number): b}}
	if err := p.indexHead(ctx, &w, nil, pr); err != nil {
		return nil, nil, err
	}
	return pr, w.Records, nil
}

// closesNoTask says why commands on pull request pr act on no task.
func closesNoTask(pr *rules.PullRequest) string {
	switch {
	case pr.TooMany > 0:
		return fmt.Sprintf("this pull request names %d issues to close, more than a pull request may (`tasks.max_per_pr`), so it links none of them.", pr.TooMany)
	case len(pr.Refused) > 0:
		return fmt.Sprintf("@%s, who opened this pull request, may not build here (no write permission, not assigned to %s), so it links no task: comment on the task's issue instead.", pr.Author.Login, issueList(pr.Refused))
	}
	return "this pull request closes no open task: write `Fixes #N` (or `Closes`, `Resolves`) in its description, or comment on the task's issue."
}

func issueFacts(repo string, is *github.Issue) rules.IssueFacts {
	return rules.IssueFacts{Repo: repo, Number: is.GetNumber(), Title: is.GetTitle(), Body: is.GetBody(), Author: user(is.GetUser()),
		Assignees: users(is.Assignees), Labels: labelNames(is.Labels), Milestone: is.GetMilestone().GetNumber(),
		Closed: is.GetState() == "closed"}
}

// eventTime is when an event happened: the time its payload gives, else when
// the delivery arrived.
func eventTime(t time.Time, d *store.Delivery) time.Time {
	if t.IsZero() {
		t = d.ReceivedAt
	}
	return t.UTC()
}

func splitRepo(repo string) string { owner, _, _ := strings.Cut(repo, "/"); return owner }
func repoName(repo string) string  { _, name, _ := strings.Cut(repo, "/"); return name }

package decide

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/app/authors"
	"github.com/countersign/countersign/app/deliveries"
	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/gh"
	"github.com/countersign/countersign/app/lookup"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

var pullKinds = map[string]rules.EventKind{
	"opened": rules.PRLinked, "reopened": rules.PRLinked, "edited": rules.PRLinked,
	"ready_for_review": rules.PRReady, "converted_to_draft": rules.PRDraft, "synchronize": rules.PRPushed,
}

func (p *Decider) onPull(ctx context.Context, d *store.Delivery, e *github.PullRequestEvent, log *slog.Logger) (store.Commit, error) {
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
	if own, err := p.gh.Own(ctx, e.GetSender()); err != nil || own {
		return store.Commit{}, err
	}
	ev := rules.Event{Kind: kind, Actor: gh.User(e.GetSender()), At: deliveries.EventTime(pr.GetUpdatedAt().Time, d)}
	if from := e.GetChanges().GetBase().GetRef().GetFrom(); e.GetAction() == "edited" && from != "" {
		ev.Retarget = &rules.Retarget{From: from, To: pr.GetBase().GetRef()}
	}
	w, err := p.pullEvent(ctx, inst, repo, d, pr, ev, pusherOf(e), log)
	if err == nil && pr.GetHead().GetSHA() != "" && (e.GetAction() == "opened" || e.GetAction() == "synchronize") {
		// A new head: countersign has written no check run on it (see
		// upsertCheck), so its first check is created without a look. Not
		// so a head another pull request has (a fork's head can be any
		// commit of the repository): the check there may be countersign's.
		var shared bool
		if shared, err = p.sharedHead(ctx, repo, pr); err != nil || shared {
			return w, err
		}
		if w.Records == nil {
			w.Records = map[string][]byte{}
		}
		w.Records[records.NewHeadKey(repo, pr.GetHead().GetSHA())] = []byte{'1'}
	}
	return w, err
}

// sharedHead reports whether pull request pr's head may be another pull
// request's too: it comes from another repository (a fork), or the head
// index lists another pull request on it.
func (p *Decider) sharedHead(ctx context.Context, repo string, pr *github.PullRequest) (bool, error) {
	if from := pr.GetHead().GetRepo().GetFullName(); from != "" && !strings.EqualFold(from, repo) {
		return true, nil
	}
	var prs []int
	if _, err := records.Load(ctx, p.store, records.HeadKey(repo, pr.GetHead().GetSHA()), &prs); err != nil {
		return false, err
	}
	return slices.ContainsFunc(prs, func(n int) bool { return n != pr.GetNumber() }), nil
}

// pullEvent records pull request pr as its event shows it, with whoever
// pusher names among the people who pushed to it, and fans ev out to the
// tasks it closes.
// Events in then follow ev to the same tasks.
func (p *Decider) pullEvent(ctx context.Context, inst int64, repo string, d *store.Delivery, pr *github.PullRequest, ev rules.Event, pusher pushedBy, log *slog.Logger, then ...rules.Event) (store.Commit, error) {
	c, err := p.clients(inst)
	if err != nil {
		return store.Commit{}, fault.Permanent(err)
	}
	old, err := records.LoadPR(ctx, p.store, repo, pr.GetNumber())
	if err != nil {
		return store.Commit{}, err
	}
	if old != nil && ev.Kind != rules.PRReviewed && pr.UpdatedAt != nil && pr.GetUpdatedAt().Time.Before(old.UpdatedAt) {
		// A snapshot older than the record (a missed delivery healed after
		// later ones were processed): what it says was overtaken, but not
		// who pushed. Its head is not compared with the newer record's.
		if late := withPusher(old, pusher("")); late != nil {
			return p.fanout(ctx, inst, d, old, late, ev, linkGate{})
		}
		log.Info("pull request event older than what countersign knows: skipped", "pr", pr.GetNumber(),
			"event_updated_at", pr.GetUpdatedAt().Time, "record_updated_at", old.UpdatedAt)
		return store.Commit{}, nil
	}
	if old != nil && ev.Review != nil && old.Base != "" && pr.GetBase().GetRef() != "" && pr.GetBase().GetRef() != old.Base {
		// The review's copy of the pull request names another base than
		// the recorded one: it saw other changes than those approvals count for.
		ev.Review.OtherBase = pr.GetBase().GetRef()
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
		recorded := ""
		if old != nil {
			recorded = old.Head
		}
		addPusher(cur, pusher(recorded))
		if gate, err = p.gateLinks(ctx, c, repo, old, cur, false, log); err != nil {
			return store.Commit{}, err
		}
		if ev.Retarget, err = p.retarget(ctx, c, inst, repo, old, cur, ev.Retarget); err != nil {
			return store.Commit{}, err
		}
		if ev.Retarget != nil && ev.Kind == rules.PRLinked {
			ev.Kind = rules.PRRetargeted
		}
	}
	check, err := p.pullConfigCheck(ctx, c, old, cur, log)
	if err != nil {
		return store.Commit{}, err
	}
	w, err := p.fanout(ctx, inst, d, old, cur, ev, gate)
	if err != nil {
		return w, err
	}
	if cur.Open && len(cur.Excused) > 0 && (ev.Retarget != nil || old == nil || !old.Open) {
		// Changes excused because the base holds them: read again, after
		// this decision is recorded, whether it still does. A push to the
		// base decided meanwhile may not have seen them excused yet (a base
		// change), and none was read for it while it was closed (reopened).
		w.Enqueue = append(w.Enqueue, baseMoved(d, "excused", inst, repo, cur.Number, cur.Base, rules.User{}))
	}
	for i, next := range then {
		dd := *d
		dd.ID = fmt.Sprintf("%s/then/%d", d.ID, i)
		nw, err := p.fanout(ctx, inst, &dd, cur, cur, next, linkGate{})
		if err != nil {
			return w, err
		}
		w.Enqueue = append(w.Enqueue, nw.Enqueue...)
	}
	if ev.Kind != rules.PRReviewed {
		untracked, left, err := p.headsToAnswer(ctx, old, cur)
		if err != nil {
			return w, err
		}
		for _, h := range []struct{ tag, sha string }{{"untracked", untracked}, {"left", left}} {
			if h.sha != "" {
				w.Enqueue = append(w.Enqueue, headCheck(d, h.tag, inst, repo, h.sha, cur.Number, !deliveries.Background(d)))
			}
		}
	}
	if check != nil {
		b, err := json.Marshal(records.OutboxEffect{Installation: inst, Delivery: d.ID, Key: d.ID + "/config", At: time.Now().UTC(), Effect: *check,
			Background: deliveries.Background(d)})
		if err != nil {
			return w, fmt.Errorf("encode effect: %w", err)
		}
		w.Effects = append(w.Effects, b)
	}
	return w, nil
}

// headsToAnswer are the heads whose check pull request cur's change (from
// old) makes countersign decide again (head.go), "" for none: untracked, its
// head when it closes no task (every pull request gets an answer: gate.untracked; one
// that closes tasks is answered when they take in the change), and its old
// left, its old head when it left it (closed, or a new head) and other pull
// requests may share that one: the check there answers for them now.
func (p *Decider) headsToAnswer(ctx context.Context, old, cur *rules.PullRequest) (untracked, left string, err error) {
	if cur.Open && cur.Head != "" && len(cur.Links) == 0 {
		untracked = cur.Head
	}
	if old == nil || !old.Open || old.Head == "" || (cur.Open && cur.Head == old.Head) {
		return untracked, "", nil
	}
	var prs []int
	if _, err := records.Load(ctx, p.store, records.HeadKey(cur.Repo, old.Head), &prs); err != nil {
		return "", "", err
	}
	if slices.ContainsFunc(prs, func(n int) bool { return n != cur.Number }) {
		left = old.Head
	}
	return untracked, left, nil
}

// pullRecord is the record of pull request pr as the webhook shows it. Who
// built its head (its committers, and who pushed to its head branch, from
// GitHub's repository activity: DESIGN §1), its changed files and CI results
// are read from GitHub when its head moved and it closes a task, or its
// author is in gate.exempt (an exemption holds only while everyone who built
// the head is exempt too); later CI results come as their own webhooks.
func (p *Decider) pullRecord(ctx context.Context, c Client, inst int64, repo string, pr *github.PullRequest, old *rules.PullRequest) (*rules.PullRequest, error) {
	cur := &rules.PullRequest{Repo: repo, Links: rules.ClosingRefs(pr.GetBody(), repo), PRFacts: rules.PRFacts{
		Number: pr.GetNumber(), Author: gh.User(pr.GetUser()), Head: pr.GetHead().GetSHA(), Assignees: gh.Users(pr.Assignees),
		Draft: pr.GetDraft(), Open: pr.GetState() == "open", Merged: pr.GetMerged() || pr.MergedAt != nil, // reviews' copies carry merged_at only
		Body: pr.GetBody()}, UpdatedAt: pr.GetUpdatedAt().Time, Base: pr.GetBase().GetRef(),
		HeadRef: pr.GetHead().GetRef(), HeadRepo: pr.GetHead().GetRepo().GetFullName()}
	cur.HeadOwner, cur.HeadOwnerOrg = headOwner(pr)
	if old != nil {
		cur.Pushers = old.Pushers
		if cur.HeadRef == "" { // a review's short copy
			cur.HeadRef, cur.HeadRepo = old.HeadRef, old.HeadRepo
		}
		if cur.HeadOwner.IsZero() && strings.EqualFold(cur.HeadRepo, old.HeadRepo) {
			cur.HeadOwner, cur.HeadOwnerOrg = old.HeadOwner, old.HeadOwnerOrg
		}
	}
	reads := cur.Open && len(cur.Links) > 0
	if cur.Open && len(cur.Links) == 0 && (old == nil || old.CommittersHead != cur.Head) {
		exempt, err := p.exemptAuthor(ctx, c, cur)
		if err != nil {
			return nil, err
		}
		reads = exempt
	}
	if old != nil && (old.CommittersHead == cur.Head || !reads) {
		cur.Committers, cur.Files, cur.CommittersHead = old.Committers, old.Files, old.CommittersHead
		cur.Changes, cur.Merges, cur.Excused = old.Changes, old.Merges, old.Excused
		cur.Unresolved, cur.PushersUnread = old.Unresolved, old.PushersUnread
		if old.Head == cur.Head {
			cur.Runs, cur.Suites = old.Runs, old.Suites
		}
		return cur, nil
	}
	if !reads {
		return cur, nil
	}
	return cur, p.readHead(ctx, c, inst, cur)
}

// headOwner is the owner of pull request pr's head repository (by id), and
// whether it is an organization.
func headOwner(pr *github.PullRequest) (rules.User, bool) {
	o := pr.GetHead().GetRepo().GetOwner()
	return gh.User(o), o.GetType() == "Organization"
}

// readHead reads from GitHub who built cur's head (its commits' people and
// whoever pushed its commits, to any branch), the files it changes and the CI results
// on it.
func (p *Decider) readHead(ctx context.Context, c Client, inst int64, cur *rules.PullRequest) error {
	var err error
	var shas map[string]bool
	if cur.Committers, cur.Unresolved, shas, err = p.committers(ctx, c, inst, cur.Repo, cur.Number); err != nil {
		return err
	}
	if err := p.headPushers(ctx, c, cur, shas); err != nil {
		return err
	}
	if cur.Files, cur.Changes, err = lookup.Changes(ctx, c, cur.Repo, cur.Number); err != nil {
		return err
	}
	cur.Merges = rules.MergesOf(cur.Changes)
	if cur.Runs, err = p.look.CIRuns(ctx, c, cur.Repo, cur.Head); err != nil {
		return err
	}
	if due := rules.CIReadDue(rules.ContractConfig{}, cur.Runs, nil); due.Suites { // CI may be over, or hold another head's runs: only the suites can say (decideCI)
		if cur.Suites, err = p.look.CISuites(ctx, c, cur.Repo, cur.Head, headOf(cur), nil, lookup.WhoseFor(due, len(cur.Links) > 0)); err != nil {
			return err
		}
		cur.Runs = rules.OwnRuns(cur.Runs, cur.Suites)
		if cur.Runs, cur.Suites, err = p.jobsOf(ctx, c, cur.Repo, cur.Head, headOf(cur), rules.ContractConfig{}, cur.Runs, cur.Suites); err != nil {
			return err
		}
	}
	cur.CommittersHead = cur.Head
	return nil
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
// of web edits and merges, builds nothing. The identities GitHub links to no
// account are returned too, as written, for the card, and the ids of the
// commits read.
func (p *Decider) committers(ctx context.Context, c Client, inst int64, repo string, n int) ([]rules.Member, []string, map[string]bool, error) {
	var out []rules.Member
	var unlinked unresolved
	shas := map[string]bool{}
	add := func(u rules.User, as string) {
		if !u.IsZero() && !slices.ContainsFunc(out, func(m rules.Member) bool { return m.Is(u) }) {
			out = append(out, rules.MemberOf(u, as))
		}
	}
	opt := &github.ListOptions{PerPage: 100}
	for page := 0; page < maxCommitPages; page++ {
		commits, resp, err := c.ListPullRequestCommits(ctx, gh.OwnerOf(repo), gh.NameOf(repo), n, opt)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("list commits of #%d: %w", n, err)
		}
		for _, cm := range commits {
			if cm.GetSHA() != "" {
				shas[strings.ToLower(cm.GetSHA())] = true
			}
			unlinked.commit(cm, n)
			add(gh.User(cm.GetAuthor()), fmt.Sprintf("commit author on #%d", n))
			if committer := gh.User(cm.GetCommitter()); !isWebFlow(committer) {
				add(committer, fmt.Sprintf("committer on #%d", n))
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	res, err := authors.Of(ctx, p.gh.GraphQL(inst), gh.OwnerOf(repo), gh.NameOf(repo), n)
	if err != nil {
		return nil, nil, nil, err
	}
	if res.Truncated && p.log != nil {
		p.log.Warn("pull request has more commits or co-authors than are read: the rest are not builders",
			"repo", repo, "number", n, "max_commits", authors.MaxCommits)
	}
	for _, a := range res.Authors {
		if a.CoAuthor && a.User.ID != 0 {
			add(rules.User{ID: a.User.ID, Login: a.User.Login}, fmt.Sprintf("co-author on #%d", n))
		} else if a.CoAuthor {
			unlinked.identity(a.Name, a.Email, fmt.Sprintf("co-author on #%d", n))
		}
	}
	return out, unlinked, shas, nil
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
func (p *Decider) fanout(ctx context.Context, inst int64, d *store.Delivery, old, cur *rules.PullRequest, ev rules.Event, gate linkGate) (store.Commit, error) {
	var effects []rules.Effect
	if gate.reply != nil {
		effects = append(effects, rules.Effect{Kind: rules.EffectNotice, Repo: cur.Repo, Number: cur.Number, Notice: gate.reply})
	}
	w, err := records.CommitFor(inst, d, nil, effects)
	if err != nil {
		return w, err
	}
	b, err := json.Marshal(cur)
	if err != nil {
		return w, err
	}
	w.Records = map[string][]byte{records.PRKey(cur.Repo, cur.Number): b}
	for k, v := range gate.records {
		w.Records[k] = v
	}
	if err := p.indexHead(ctx, &w, old, cur); err != nil {
		return w, err
	}
	indexExcused(&w, old, cur)
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
		nw, err := records.CommitFor(inst, d, nil, append(effects, rules.Effect{Kind: rules.EffectNotice, Repo: cur.Repo, Number: cur.Number, Notice: n}))
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
		w.Enqueue = append(w.Enqueue, deliveries.Derived(fmt.Sprintf("%s/%d/%d", d.ID, te.Number, i), deliveries.Task,
			rules.TaskKey(cur.Repo, te.Number), deliveries.TaskPayload{Installation: inst, Event: tev}))
	}
	return w, nil
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

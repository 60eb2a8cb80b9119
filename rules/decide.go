package rules

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
)

// maxRemembered bounds Task.Comments.
const maxRemembered = 50

// Tracked reports whether cfg makes the issue a task: issues with an ignored
// label are not; then tasks.track decides. (Goal issues are the ones
// countersign opened itself; the adapters never hand them to tasks. A `goal`
// label that someone else puts on an issue makes it nothing.)
func Tracked(cfg Config, is IssueFacts) bool {
	for _, l := range is.Labels {
		if slices.ContainsFunc(cfg.Tasks.IgnoreLabels, func(i string) bool { return strings.EqualFold(i, l) }) {
			return false
		}
	}
	switch cfg.Tasks.Track {
	case "milestoned":
		return is.Milestone != 0
	case "labeled":
		return slices.ContainsFunc(is.Labels, func(l string) bool { return strings.EqualFold(l, cfg.Tasks.Label) })
	}
	return true
}

// DecideTask decides what event ev means for task t (nil when the issue is not
// tracked yet: an event on an issue that should be tracked starts tracking it).
// t is not modified; the decision carries the new record.
func DecideTask(t *Task, ev Event, f Facts) Decision {
	d := &decider{ev: ev, f: f, old: t}
	if ev.Kind == GateNoted {
		if t == nil || strings.TrimSpace(ev.Text) == "" {
			return Decision{}
		}
		d.t = t.Clone()
		d.note(ev.Text)
		return d.finish()
	}
	if ev.PR != nil && ev.Kind != Commented && !mayLink(t, ev, f) {
		return Decision{} // an outsider's pull request is nothing to this task
	}
	if t == nil {
		if ev.Issue.Number == 0 || ev.Issue.Repo == "" || ev.Kind == PRUnlinked || ev.Kind == BoardEdited || ev.Kind == BoardRemoved || !Tracked(f.Config, ev.Issue) {
			return Decision{}
		}
		if ev.Issue.Closed && ev.Kind != IssueClosed {
			// An issue closed before countersign tracked it is history: a
			// comment, a label or a pull request naming it starts nothing.
			// Reopening it (or closing it again) makes it a task.
			return Decision{}
		}
		d.track()
		if ev.Kind == IssueOpened {
			d.evaluate()
			return d.finish()
		}
	} else {
		d.t = t.Clone()
		d.ensureContract()
	}
	if ev.Links != nil {
		d.setLinks(*ev.Links)
	}
	d.relogin(ev.Actor)
	if ev.PR != nil {
		d.relogin(ev.PR.Author)
	}
	if ev.Review != nil {
		d.relogin(ev.Review.Reviewer)
	}
	switch ev.Kind {
	case IssueEdited:
		if ev.Issue.Title != "" && ev.Issue.Title != d.t.Title {
			d.t.Title = ev.Issue.Title
			d.dirty()
		}
		d.issueEdited()
	case IssueAssigned:
		d.setAssignees(ev.Issue.Assignees)
	case IssueClosed:
		d.closed()
	case IssueReopened:
		if d.t.Closed {
			d.t.Closed = false
			d.dirty()
		}
	case IssueLabeled, IssueUnlabeled:
		d.labelChanged()
	case PRLinked, PRReady, PRDraft, PRPushed, PRMerged, PRUnlinked, PRChecked, PRRetargeted:
		d.pullRequest()
	case PRReviewed:
		d.reviewed()
	case Commented:
		d.commented()
	case CardDeleted:
		d.cardRepaired(fmt.Sprintf("task card deleted by @%s: posted again", ev.Actor.Login))
	case CardEdited:
		d.cardRepaired(fmt.Sprintf("task card edited by @%s: written back", ev.Actor.Login))
	case BoardEdited, BoardRemoved:
		d.boardRepaired()
	}
	if ev.Issue.Title != "" && ev.Issue.Milestone != d.t.Milestone { // the event carries the whole issue
		d.t.Milestone = ev.Issue.Milestone
		d.changed = true
	}
	d.evaluate()
	return d.finish()
}

// maxCardRepairs bounds the card repairs a task's history records: past it,
// the card is still written back each time, but the history (which the card
// carries twice, under GitHub's 65,536 characters) grows no more.
const maxCardRepairs = 20

// cardRepairPrefix starts the history entry of a card repair.
const cardRepairPrefix = "task card "

// cardRepaired records that someone deleted or edited the task card (why)
// and has it written back (DESIGN §5).
func (d *decider) cardRepaired(why string) {
	n := 0
	for _, h := range d.t.History {
		if strings.HasPrefix(h.Why, cardRepairPrefix) {
			n++
		}
	}
	if n < maxCardRepairs {
		d.note(why)
		return
	}
	d.dirty() // written back all the same
}

// mayLink reports whether the pull request of event ev may count as work on
// task t (nil: not tracked yet): its author may build here, or its author (or
// the pilot of its agent author) is assigned to the task now.
func mayLink(t *Task, ev Event, f Facts) bool {
	if !ev.PR.Outsider {
		return true
	}
	assignees := ev.Issue.Assignees
	if t != nil {
		assignees = t.Assignees
	}
	return (&decider{f: f}).assigned(assignees, ev.PR.Author)
}

// assigned reports whether u, or the pilot of agent account u, is among
// assignees.
func (d *decider) assigned(assignees []User, u User) bool {
	if containsUser(assignees, u) {
		return true
	}
	pilot, ok := d.pilotOf(u)
	return ok && containsUser(assignees, pilot)
}

// decider holds one decision being made.
type decider struct {
	ev      Event
	f       Facts
	old     *Task // nil when the task was not tracked
	t       *Task // the new record
	changed bool  // t differs from old
	card    bool  // the change shows on the card
	labels  bool  // owned labels must be put back even if t's did not change
	board   bool  // the board must be put back even if t's value did not change
	effects []Effect
	refresh []int
	recheck bool // see Decision.Recheck
}

func (d *decider) dirty() { d.changed, d.card = true, true }

// relogin shows account u by its current login wherever the record names it
// (the account was renamed; it is the same person). History keeps the login
// each entry was made under.
func (d *decider) relogin(u User) {
	if u.ID == 0 || u.Login == "" {
		return
	}
	fix := func(x *User) {
		if x.ID == u.ID && x.Login != u.Login {
			x.Login = u.Login
			d.dirty()
		}
	}
	t := d.t
	fix(&t.Opener)
	fix(&t.Verifier)
	for i := range t.Assignees {
		fix(&t.Assignees[i])
	}
	for i := range t.Approvers {
		fix(&t.Approvers[i])
	}
	for i := range t.Approvals {
		fix(&t.Approvals[i].By)
	}
	for i := range t.MergedApprovals {
		fix(&t.MergedApprovals[i].By)
	}
	for i := range t.Rejections {
		fix(&t.Rejections[i].By)
	}
	for i := range t.PRs {
		fix(&t.PRs[i].Author)
	}
	for i := range t.Builders {
		if b := &t.Builders[i]; b.ID == u.ID && b.Login != u.Login {
			b.Login = u.Login
			d.dirty()
		}
	}
}

// track starts tracking the event's issue as a pending task.
func (d *decider) track() {
	is := d.ev.Issue
	opener := is.Author
	if opener.IsZero() {
		opener = d.ev.Actor
	}
	why := "first tracked"
	if d.ev.Kind == IssueOpened {
		why = "issue opened"
	}
	d.t = &Task{Repo: is.Repo, Number: is.Number, Title: is.Title, State: Pending, Opener: opener, Attempt: 1,
		Closed: is.Closed && d.ev.Kind != IssueClosed}
	d.t.History = []Transition{{To: Pending, Actor: d.ev.Actor.Login, At: d.ev.At, Why: why}}
	d.dirty()
	d.ensureContract()
	if d.ev.Kind != IssueAssigned && len(is.Assignees) > 0 {
		d.setAssignees(is.Assignees)
	}
}

// finish turns the new record into the decision and its effects.
func (d *decider) finish() Decision {
	if !d.changed {
		return Decision{Effects: d.effects, Recheck: d.recheck}
	}
	d.t.History = boundHistory(d.t.History, maxHistory, historyHead)
	var effects []Effect
	if d.labels || d.old == nil || !slices.Equal(d.old.Labels(), d.t.Labels()) {
		effects = append(effects, Effect{Kind: EffectSyncLabels, Repo: d.t.Repo, Number: d.t.Number, Labels: d.t.Labels()})
	}
	if d.card {
		effects = append(effects, Effect{Kind: EffectSyncCard, Repo: d.t.Repo, Number: d.t.Number})
	}
	effects = append(effects, d.boardEffect()...)
	effects = append(effects, d.effects...)
	if d.old == nil || d.old.State != d.t.State || d.old.Failing != d.t.Failing || d.old.Unverified != d.t.Unverified || d.old.Forced != d.t.Forced {
		for _, p := range d.t.PRs { // merged ones too: their head's check is the record of the merge
			if p.Open || p.Merged {
				d.refresh = append(d.refresh, p.Number)
			}
		}
	}
	slices.Sort(d.refresh)
	return Decision{Task: d.t, Effects: effects, Refresh: slices.Compact(d.refresh), Goals: d.goals(), Recheck: d.recheck}
}

// goals are the goals that must hear of the task: the milestone it left, and
// the one it is in when it joined it or changed in a way the goal shows.
func (d *decider) goals() []GoalNote {
	var out []GoalNote
	was := 0
	if d.old != nil {
		was = d.old.Milestone
	}
	if was != 0 && was != d.t.Milestone {
		out = append(out, GoalNote{Milestone: was})
	}
	if m := d.t.Milestone; m != 0 && (m != was || !goalTaskEqual(GoalTaskOf(d.old), GoalTaskOf(d.t))) {
		out = append(out, GoalNote{Milestone: m, In: true})
	}
	return out
}

// move records a transition to state to.
func (d *decider) move(to State, why string) {
	d.t.History = append(d.t.History, Transition{From: d.t.State, To: to, Actor: d.ev.Actor.Login, At: d.ev.At, Why: clip(why, maxWhy)})
	d.t.State = to
	d.dirty()
}

// note records an event that changed no state (counted on the same note
// recorded lately, if there is one).
func (d *decider) note(why string) {
	e := Transition{From: d.t.State, To: d.t.State, Actor: d.ev.Actor.Login, At: d.ev.At, Why: clip(why, maxWhy)}
	if !d.t.repeated(e) {
		d.t.History = append(d.t.History, e)
	}
	d.dirty()
}

// advance moves forward one state at a time (each step recorded) up to to,
// which is at most review: approval, verification and the override have their
// own transitions, so nothing reaches them by walking.
func (d *decider) advance(to State, why string) {
	if Review.Before(to) {
		to = Review
	}
	for d.t.State.Before(to) {
		d.move(States[d.t.State.rank()+1], why)
	}
}

// submitted moves an in-progress task to review: a new attempt is claimed.
func (d *decider) submitted(why string) {
	d.move(Review, why)
	d.t.Failing = false
}

func (d *decider) notice(where int, n Notice) {
	n.Task = d.t.Number
	if n.Actor == "" {
		n.Actor, n.ActorID = d.ev.Actor.Login, d.ev.Actor.ID
	}
	d.effects = append(d.effects, Effect{Kind: EffectNotice, Repo: d.t.Repo, Number: where, Notice: &n})
}

// addBuilder records u as a builder (once; the first reason is kept), and
// the pilot of u when it is an agent's account.
func (d *decider) addBuilder(u User, as string) {
	if u.IsZero() {
		return
	}
	if !d.t.IsBuilder(u) {
		d.t.Builders = append(d.t.Builders, MemberOf(u, as))
		d.dirty()
		d.builderApprovalsVoid(u)
	}
	var pilots []User
	if pilot, ok := d.pilotOf(u); ok {
		pilots = []User{pilot}
	} else if IsBot(u.Login) {
		pilots = d.defaultPilots(u)
	}
	for _, pilot := range pilots {
		if !pilot.IsZero() && !pilot.Is(u) && !d.t.IsBuilder(pilot) {
			d.t.Builders = append(d.t.Builders, MemberOf(pilot, "pilot of "+u.Login))
			d.dirty()
			d.builderApprovalsVoid(pilot)
		}
	}
}

// pilotOf is who flies agent account u, when agents: says: the account as
// the adapters resolved it (Lookup.Pilot), else known by its login only.
func (d *decider) pilotOf(u User) (User, bool) {
	login, ok := d.f.Config.Pilot(u.Login)
	if !ok {
		return User{}, false
	}
	if p, ok := d.f.Ask.Pilot(login); ok {
		return p, true
	}
	return loginOnly(login), true
}

// builderApprovalsVoid drops the approvals of someone who became a builder:
// an approval by a builder does not count, whenever they became one. A
// completed task they alone approved goes back to review.
func (d *decider) builderApprovalsVoid(u User) {
	n := len(d.t.Approvals) + len(d.t.MergedApprovals)
	by := func(a Approval) bool { return a.By.Is(u) }
	d.t.Approvals = slices.DeleteFunc(d.t.Approvals, by)
	d.t.MergedApprovals = slices.DeleteFunc(d.t.MergedApprovals, by)
	if len(d.t.Approvals)+len(d.t.MergedApprovals) != n && d.t.State == Completed && !d.t.approvedNow() {
		d.move(Review, "@"+u.Login+" became a builder: their approval no longer counts")
	}
}

// builderFor is the builder record that makes u a builder: their own, or
// their pilot's when u is an agent's account (configured in agents:).
func (d *decider) builderFor(u User) *Member {
	if b := d.t.builder(u); b != nil {
		return b
	}
	if pilot, ok := d.pilotOf(u); ok {
		return d.t.builder(pilot)
	}
	return nil
}

// laundered says why only a lead may verify the attempt, or "": a pull
// request that carries its code has commits whose git identities GitHub
// links to no account, and a bot account pushed to it (a workflow someone
// dispatched, say) whose pilot agents: did not name when it pushed (its
// configured pilot is not a builder). Neither who wrote the code nor who set
// the bot to push it is known, so the verifier may be either. A lead may
// still verify; linking the identity to its account, or naming the bot's
// pilot in agents:, and pushing again lifts it. So does a pull request whose
// head branch has more pushes than countersign reads (PushersUnread): who
// pushed the older ones is not known.
func (d *decider) laundered() string {
	for _, p := range d.t.PRs {
		if p.CarriesCode() && p.PushersUnread != "" {
			return fmt.Sprintf("not everyone who pushed to #%d is known (%s): one of them may be you, so only a lead may /verify this attempt.",
				p.Number, clip(p.PushersUnread, maxWhy))
		}
		if !p.CarriesCode() || len(p.Unresolved) == 0 {
			continue
		}
		for _, b := range p.BotPushers {
			if pilot, ok := d.pilotOf(b); ok && d.t.IsBuilder(pilot) {
				continue
			}
			return fmt.Sprintf("#%d's commits carry git identities that GitHub links to no account (%s), and @%s, a bot whose pilot `agents:` does not name, pushed to it: "+
				"countersign cannot tell who wrote them or who set the bot to push them, so only a lead may /verify this attempt. "+
				"To lift this, link that email to its author's GitHub account (Settings, Emails) and push the commits again, "+
				"or name the person who runs @%s in `agents:` of .github/countersign.yml and push again.",
				p.Number, clip(strings.Join(p.Unresolved, "; "), maxWhy), b.Login, b.Login)
		}
	}
	return ""
}

// approverFor reports whether u, or the pilot flying u, approved the attempt.
func (d *decider) approverFor(u User) bool {
	if d.t.IsApprover(u) {
		return true
	}
	pilot, ok := d.pilotOf(u)
	return ok && d.t.IsApprover(pilot)
}

// defaultPilots are who fly agent account u when agents: does not say: the
// person who assigned it (else the person who opened the task) and, for the
// agent's own pull request, the people it is assigned to (a coding agent
// assigns its pull request to whoever set it to work). Erring towards more
// builders only makes verification stricter; agents: names the pilot exactly.
func (d *decider) defaultPilots(u User) []User {
	var out []User
	if d.ev.Kind == IssueAssigned && !IsBot(d.ev.Actor.Login) {
		out = append(out, d.ev.Actor)
	} else if !IsBot(d.t.Opener.Login) {
		out = append(out, d.t.Opener)
	}
	if p := d.ev.PR; p != nil && p.Author.Is(u) {
		for _, a := range p.Assignees {
			if !IsBot(a.Login) && !containsUser(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

func (d *decider) setAssignees(list []User) {
	t := d.t
	for _, a := range list {
		d.addBuilder(a, "assignee")
	}
	if !SameUsers(t.Assignees, list) {
		t.Assignees = append([]User(nil), list...)
		d.dirty()
	}
	for i := range t.PRs { // an outsider's pull request counts only while they are assigned
		if p := &t.PRs[i]; p.Open && p.Outsider && !d.assigned(list, p.Author) {
			p.Open = false
			d.note(fmt.Sprintf("#%d no longer counts: @%s, who may build here only as an assignee, was unassigned", p.Number, p.Author.Login))
			d.recontract(fmt.Sprintf("#%d no longer counts", p.Number))
			if t.State == Completed {
				d.withdrawn(fmt.Sprintf("#%d no longer counts: the approval of its head no longer covers the task's work", p.Number))
			}
			d.completeIfApproved()
		}
	}
	switch {
	case t.State == Pending && len(list) > 0:
		d.move(Assigned, "assigned to "+mentions(Logins(list)))
	case t.State == Assigned && len(list) == 0:
		d.move(Pending, "unassigned")
	}
}

func (d *decider) closed() {
	t := d.t
	switch {
	case t.Closed:
		return
	case t.State == Verified:
		t.Closed = true
		d.dirty()
	case d.ev.Reason == "not_planned" && d.f.Ask.Person(d.ev.Actor).Lead:
		t.Closed = true
		d.note("closed as not planned by a lead")
	default:
		d.note("closed while " + string(t.State) + ": reopened")
		d.effects = append(d.effects, Effect{Kind: EffectReopen, Repo: t.Repo, Number: t.Number})
		d.notice(t.Number, Notice{Kind: NoticeReopened, State: t.State})
	}
}

func (d *decider) labelChanged() {
	l := d.ev.Label
	if !TaskOwned(l) {
		return
	}
	want := slices.ContainsFunc(d.t.Labels(), func(o string) bool { return strings.EqualFold(o, l) })
	added := d.ev.Kind == IssueLabeled
	if added == want {
		return // GitHub already looks the way it must
	}
	verb := "removed"
	if added {
		verb = "added"
	}
	d.note(fmt.Sprintf("label %s %s by @%s: reverted (only countersign sets it)", l, verb, d.ev.Actor.Login))
	d.labels = true
}

// pullRequest handles the events of a pull request that closes the task.
func (d *decider) pullRequest() {
	t, p := d.t, d.ev.PR
	if p == nil {
		return
	}
	d.refresh = append(d.refresh, p.Number)
	lp := t.pr(p.Number)
	known := lp != nil // linked before: its head may come back as it was
	fresh := lp == nil || !lp.Open
	if lp == nil {
		t.PRs = append(t.PRs, LinkedPR{Number: p.Number})
		lp = &t.PRs[len(t.PRs)-1]
	}
	newHead := lp.Head != p.Head
	was := *lp
	*lp = LinkedPR{Number: p.Number, Author: p.Author, Head: p.Head, Draft: p.Draft, Open: p.Open, Merged: p.Merged,
		Criteria: was.Criteria, Runs: RelevantRuns(d.f.Config.Contracts, CountedRuns(p.Runs, p.Suites)), Suites: p.Suites, Contradiction: d.contradiction(p.Body),
		Outsider: p.Outsider, Unresolved: p.Unresolved, BotPushers: botsOf(p.Pushers), PushersUnread: p.PushersUnread, Merges: p.Merges}
	if lp.Merges == "" && !newHead { // not read for this event: what was known for the head stands
		lp.Merges = was.Merges
	}
	if p.Files != nil {
		lp.Criteria = d.fileCriteria(p.Files)
	}
	if !reflect.DeepEqual(*lp, was) {
		d.dirty()
	}
	if !slices.EqualFunc(lp.Criteria, was.Criteria, sameKey) {
		d.recontract(fmt.Sprintf("the files #%d changes", p.Number))
	}
	if d.ev.Kind == PRUnlinked {
		lp.Open = false
		if was.Open {
			why := fmt.Sprintf("#%d no longer closes this task", p.Number)
			if !p.Open && !p.Merged {
				why = fmt.Sprintf("#%d closed without merging: it no longer closes this task", p.Number)
			}
			d.note(why)
			d.recontract(fmt.Sprintf("#%d no longer closes it", p.Number))
			// Completed means approved: an approval of work that no longer
			// carries the task's code (closed unmerged, or unlinked) approves
			// nothing that will land. Relinked with the same head, it counts again.
			if t.State == Completed {
				d.withdrawn(why + ": the approval of its head no longer covers the task's work")
			}
		}
		d.completeIfApproved() // the approvals of the pull requests left may now cover it all
		return
	}
	d.addBuilder(p.Author, fmt.Sprintf("author of #%d", p.Number))
	for _, c := range p.Committers {
		d.addBuilder(c.User(), c.As)
	}
	for _, u := range p.Pushers {
		d.addBuilder(u, fmt.Sprintf("pushed to #%d", p.Number))
	}
	if !p.Open {
		switch {
		case p.Merged && (!known || newHead) && (t.State == Completed || t.State == Verified):
			// Merged code no one approved or verified joins the work (a
			// merged pull request linked for the first time, or linked again
			// with a head it did not have): like new commits, it makes what
			// was approved and verified stale.
			d.stale(fmt.Sprintf("#%d closes this task, merged at %s", p.Number, short(lp.Head)))
		case p.Merged && !was.Merged && !t.headApproved(*lp) && (t.State == Review || t.State == InProgress):
			d.note(fmt.Sprintf("#%d merged with no approval of its head %s: the task needs one, by someone who did not build it", p.Number, short(lp.Head)))
		}
		d.completeIfApproved() // merged: the approvals of the pull requests left may now cover it all
		return
	}
	if known && !newHead && lp.Merges != was.Merges && (was.Merges != "" || d.ev.Retarget != nil) {
		// The same head merges other changes: its base changed (delivered
		// now, or seen late through another event). Like new commits, that
		// makes what was approved and verified stale (DESIGN §2).
		d.progress(lp, was, true, d.retargeted(p.Number))
		return
	}
	switch d.ev.Kind {
	case PRLinked:
		why := fmt.Sprintf("#%d opened", p.Number)
		back := known && fresh // reopened, or linked again
		switch {
		case back && !newHead:
			// The same head is back: only new commits void approvals and a
			// verification (DESIGN §2), so what was approved and verified
			// for it stands.
			why = fmt.Sprintf("#%d closes this task again; its head %s is unchanged", p.Number, short(lp.Head))
			if t.headApproved(*lp) {
				why += ", so what was approved and verified for it stands"
			}
			d.note(why)
		case back:
			why = fmt.Sprintf("#%d closes this task again", p.Number)
		case !fresh:
			why = fmt.Sprintf("#%d's description edited", p.Number)
		}
		d.progress(lp, was, !known || newHead, why)
		if back && !newHead && !t.headApproved(*lp) && (t.State == Completed || t.State == Verified) {
			d.stale(fmt.Sprintf("#%d closes this task again with a head no approval covers", p.Number))
		}
	case PRReady:
		if was.Draft || fresh { // not a restatement of a pull request already ready
			d.progress(lp, was, false, fmt.Sprintf("#%d ready for review", p.Number))
		}
	case PRPushed:
		d.progress(lp, was, newHead, fmt.Sprintf("new commits on #%d", p.Number))
	}
}

// retargeted says why pull request n's approvals are stale after its base
// changed, or after its base stopped holding what excused its changes.
func (d *decider) retargeted(n int) string {
	rt := d.ev.Retarget
	if rt == nil || rt.From == "" || rt.To == "" {
		return fmt.Sprintf("#%d now merges changes no one approved (its base changed)", n)
	}
	changes := "changes"
	if rt.Changes == 1 {
		changes = "change"
	}
	if rt.Undone > 0 {
		what := fmt.Sprintf("%d %s", rt.Changes, changes)
		if rt.Changes <= 0 {
			what = changes
		}
		return fmt.Sprintf("#%d's base %s no longer holds what #%d merged into it, so #%d brings %s no one approved", n, rt.To, rt.Undone, n, what)
	}
	if rt.Changes <= 0 {
		return fmt.Sprintf("#%d's base changed from %s to %s, bringing changes no one approved", n, rt.From, rt.To)
	}
	return fmt.Sprintf("#%d's base changed from %s to %s, bringing %d %s no one approved", n, rt.From, rt.To, rt.Changes, changes)
}

// progress moves the task along for work on pull request lp; newWork means
// commits that no approval or verification has seen.
func (d *decider) progress(lp *LinkedPR, was LinkedPR, newWork bool, why string) {
	t := d.t
	// The very commits a verifier rejected submit no new attempt. Moving the
	// head back to them is still a move away from the head that was approved
	// and verified: that goes stale like any other.
	rejected := slices.Contains(t.RejectedHeads, lp.Head)
	switch {
	case t.State.Before(InProgress):
		if len(t.Assignees) == 0 && !lp.Author.IsZero() {
			t.Assignees = []User{lp.Author}
			d.effects = append(d.effects, Effect{Kind: EffectAssign, Repo: t.Repo, Number: t.Number, Users: []string{lp.Author.Login}})
			d.addBuilder(lp.Author, "assignee")
			d.dirty()
		}
		if lp.Draft || d.contradicted(lp.Contradiction, lp.Number) {
			d.advance(InProgress, why)
		} else {
			d.advance(Review, why)
			t.Failing = false
		}
	case t.State == InProgress:
		// A new pull request or new commits submit the next attempt; so does
		// marking one ready, unless the attempt failed: then only new work
		// does; and so does taking a contradiction out of its description.
		lifted := was.Contradiction != nil && lp.Contradiction == nil && d.ev.Kind == PRLinked && !t.Failing
		if !lp.Draft && ((newWork && !rejected) || lifted || (d.ev.Kind == PRReady && !t.Failing)) && !d.contradicted(lp.Contradiction, lp.Number) {
			d.submitted(why)
		}
	case newWork:
		if rejected {
			why += fmt.Sprintf(", back to %s, commits a verifier rejected", short(lp.Head))
		}
		d.stale(why)
	}
	d.completeIfApproved()
}

// stale sends a task in review, completed or verified back to review: new
// commits void the approvals and verification of the old head.
func (d *decider) stale(why string) {
	t := d.t
	if t.State == Verified {
		t.Verifier, t.VerifiedAt = User{}, time.Time{}
		t.Unverified, t.Forced = false, false
	}
	if t.State != Review {
		d.move(Review, why+": approvals and verification are stale")
	}
}

// completeIfApproved moves a task in review whose current work carries a
// counted approval to completed.
func (d *decider) completeIfApproved() {
	if d.t.State != Review || !d.t.approvedNow() {
		return
	}
	// An approval kept for a merged head counts towards this attempt: its
	// author approved the attempt, and may not verify it.
	for _, k := range d.t.keptApprovals() {
		if !containsUser(d.t.Approvers, k.By) {
			d.t.Approvers = append(d.t.Approvers, k.By)
		}
	}
	a := d.t.Approvals[len(d.t.Approvals)-1] // the approval that completed the set
	why := "approved by @" + a.By.Login
	if a.PR != 0 {
		why += fmt.Sprintf(" on #%d", a.PR)
	}
	d.move(Completed, why)
}

func (d *decider) reviewed() {
	t, rv, p := d.t, d.ev.Review, d.ev.PR
	if rv == nil || p == nil {
		return
	}
	lp := t.pr(p.Number)
	if lp == nil || !lp.CarriesCode() {
		return // the pull request does not (or no longer) close this task
	}
	who := rv.Reviewer
	if rv.State == "approved" || rv.State == "changes_requested" {
		if slices.ContainsFunc(t.Approvals, func(a Approval) bool { return a.PR == p.Number && a.By.Is(who) && a.At.After(d.ev.At) }) {
			return // older than who's approval taken in already: deliveries come in any order
		}
	}
	switch rv.State {
	case "approved":
		if b := d.builderFor(who); b != nil {
			d.note(fmt.Sprintf("approval by @%s on #%d not counted: a builder (%s)", who, p.Number, b.As))
			d.notice(p.Number, Notice{Kind: NoticeIgnored, Actor: who.Login, ActorID: who.ID,
				Reason: fmt.Sprintf("@%s built this task (%s); an approval by a builder does not count", who, b.As)})
			return
		}
		if !d.f.Ask.Person(who).MayApprove() {
			d.note(fmt.Sprintf("approval by @%s on #%d not counted: no write permission", who, p.Number))
			d.notice(p.Number, Notice{Kind: NoticeIgnored, Actor: who.Login, ActorID: who.ID,
				Reason: fmt.Sprintf("@%s %s", who, d.eligibleWho("approve"))})
			return
		}
		if rv.Head != lp.Head {
			return // a review of a head the pull request no longer has (one it has not yet is read from GitHub first: app/decide/reviews.go)
		}
		if slices.ContainsFunc(t.Approvals, func(a Approval) bool {
			return a.PR == p.Number && a.By.Is(who) && a.Head == rv.Head && a.At.Equal(d.ev.At) && a.Merges == lp.Merges
		}) {
			// Taken in already (read from GitHub before its delivery came). An
			// approval of the same head that saw other changes (its base has
			// changed since) is another approval: it counts.
			return
		}
		if rv.OtherBase != "" {
			why := fmt.Sprintf("approval by @%s on #%d not counted: given while it merged into %s, whose changes are not those it merges now", who, p.Number, rv.OtherBase)
			d.note(why)
			d.notice(p.Number, Notice{Kind: NoticeIgnored, Actor: who.Login, ActorID: who.ID,
				Reason: fmt.Sprintf("#%d's base changed since @%s reviewed it (it was %s): approve it again to approve what it merges now", p.Number, who, rv.OtherBase)})
			return
		}
		d.dropApprovals(who, p.Number)
		d.countApproval(Approval{By: who, Head: rv.Head, PR: p.Number, At: d.ev.At, Critics: d.f.Ask.Critics(who), Merges: lp.Merges})
		d.completeIfApproved()
	case "changes_requested":
		if d.builderFor(who) != nil || !d.f.Ask.Person(who).MayApprove() {
			return // only a review that could have approved can send work back
		}
		d.dropApprovals(who, p.Number)
		why := fmt.Sprintf("changes requested by @%s on #%d", who, p.Number)
		if r := strings.TrimSpace(rv.Body); r != "" {
			why += ": " + r
		}
		switch t.State {
		case Review:
			d.move(InProgress, why)
		case Completed:
			d.withdrawn(why)
		case InProgress:
			d.note(why) // the work stays sent back, whatever CI says of the same commits
		}
	case "dismissed":
		// Only the dismissed review's approval is withdrawn: one of an older
		// head (GitHub dismisses stale approvals on a push, people tidy
		// them away) was replaced by who's later review, which stands.
		d.dropApprovalsOn(who, p.Number, rv.Head)
		if t.State == Completed {
			d.withdrawn(fmt.Sprintf("the approval by @%s on #%d was dismissed", who, p.Number))
		}
	}
}

// countApproval counts approval a; its author is an approver of the attempt from
// now on, even if the approval is later withdrawn.
func (d *decider) countApproval(a Approval) {
	d.t.Approvals = append(d.t.Approvals, a)
	if !containsUser(d.t.Approvers, a.By) {
		d.t.Approvers = append(d.t.Approvers, a.By)
	}
	d.dirty()
}

// withdrawn sends a completed task whose approval no longer stands back to
// review: completed means approved.
func (d *decider) withdrawn(why string) {
	if !d.t.approvedNow() {
		d.move(Review, why)
	}
}

// dropApprovals forgets u's approvals on pull request pr (a later review
// replaces them, a dismissal or a request for changes withdraws them),
// those kept for a merged head from an earlier attempt included. u stays an
// approver of the attempt if its approval counted in it.
func (d *decider) dropApprovals(u User, pr int) { d.dropApprovalsOn(u, pr, "") }

// dropApprovalsOn is dropApprovals for the approvals of head only ("": of
// any head).
func (d *decider) dropApprovalsOn(u User, pr int, head string) {
	n := len(d.t.Approvals) + len(d.t.MergedApprovals)
	by := func(a Approval) bool { return a.PR == pr && a.By.Is(u) && (head == "" || a.Head == head) }
	d.t.Approvals = slices.DeleteFunc(d.t.Approvals, by)
	d.t.MergedApprovals = slices.DeleteFunc(d.t.MergedApprovals, by)
	if len(d.t.Approvals)+len(d.t.MergedApprovals) != n {
		d.dirty()
	}
}

// Limits on the people's text a record keeps, so a card (history twice:
// record and table) stays far below GitHub's 65,536 characters.
const (
	maxWhy    = 300
	maxReason = 1000
)

// clip shortens s to at most n characters, marking the cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func mentions(logins []string) string {
	out := make([]string, len(logins))
	for i, l := range logins {
		out[i] = "@" + strings.TrimPrefix(l, "@")
	}
	return strings.Join(out, ", ")
}

package rules

import (
	"fmt"
	mrand "math/rand"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/quick"
)

// propPeople are the actors of the random sequences: builders-to-be, approvers,
// outsiders, a stranger, a lead and an agent's bot account.
var propPeople = []string{"alice", "dave", "carol", "bob", "erin", "mallory", "lead", "copilot[bot]"}

func propPerson(login string) Person {
	switch login {
	case "lead":
		return Person{Lead: true, Eligible: true}
	case "mallory", "copilot[bot]":
		return Person{}
	}
	return Person{Eligible: true}
}

// propRelaxed reports whether f lets an approver verify (docs/design.md, Roles).
func propRelaxed(f Facts) bool {
	switch f.Config.Separation {
	case SeparationMinimum:
		return true
	case SeparationAuto, "":
		return known(f).TeamSize <= 2
	}
	return false
}

// propAllowedBack are the backward moves of docs/design.md, The task lifecycle.
var propAllowedBack = map[[2]State]bool{
	{Review, InProgress}:    true, // changes requested
	{Completed, InProgress}: true, // /reject
	{Review, Review}:        true, // new commits (no move needed)
	{Completed, Review}:     true, // new commits
	{Verified, Review}:      true, // new commits
	{Verified, InProgress}:  true, // /reopen
	{Assigned, Pending}:     true, // last assignee removed
}

// propSeq is one random sequence of events on one task.
type propSeq struct {
	seed    uint64
	r       *rand.Rand
	cfg     Config // per sequence: escalation and agents
	pilots  map[string]User
	prs     map[int]*PRFacts
	heads   int
	runID   int64
	comment int64
	seen    []int64
	min     int
	log     []string
	// r2 draws the choices added for pushers, merges, heads that come back
	// and card deletions, so that the draws of s.r stay as they were.
	r2 *rand.Rand
	// unlinked are the pull requests whose description stopped closing the
	// task (still open): their next event links them again, same head.
	unlinked map[int]bool
}

func newPropSeq(seed uint64) *propSeq {
	s := &propSeq{seed: seed, r: rand.New(rand.NewPCG(seed, seed*0x9e3779b97f4a7c15)), prs: map[int]*PRFacts{},
		r2: rand.New(rand.NewPCG(seed^0x5bd1e995, seed+7)), unlinked: map[int]bool{}}
	s.cfg = DefaultConfig()
	if seed%4 < 2 { // named runs on half the seeds, the whole CI on the others (no draw: the sequences stay as they were)
		s.cfg.Contracts.Checks = namedChecks()
	}
	s.cfg.Escalation.Rejections = 1 + s.r.IntN(3)
	s.cfg.Escalation.FailedAttempts = 1 + s.r.IntN(4)
	if s.r.IntN(2) == 0 {
		s.cfg.Agents = map[string]string{"copilot[bot]": "erin"}
		if seed%2 == 0 { // the adapters resolved the pilot's id (no draw: the sequences stay as they were)
			s.pilots = map[string]User{"erin": u("erin")}
		}
	}
	return s
}

func (s *propSeq) pick(list ...string) string { return list[s.r.IntN(len(list))] }

// pick2 is pick drawing from r2.
func (s *propSeq) pick2(list ...string) string { return list[s.r2.IntN(len(list))] }

func (s *propSeq) head() string {
	s.heads++
	return fmt.Sprintf("h%d", s.heads)
}

// facts are random facts for an event by actor.
func (s *propSeq) facts(actor string) Facts {
	f := Facts{Config: s.cfg, Ask: Known(Answers{Person: propPerson(actor), TeamSize: 1 + s.r.IntN(5), Leads: []string{"lead"}, Pilots: s.pilots})}
	f.Config.Separation = []Separation{SeparationAuto, SeparationTriple, SeparationMinimum}[s.r.IntN(3)]
	return f
}

// command is a random command line, with or without its arguments.
func (s *propSeq) command() string {
	switch s.r.IntN(12) {
	case 0:
		return "/start"
	case 1:
		return s.pick("/submit", "/submit done")
	case 2, 3:
		return s.pick("/approve", "/approve lgtm")
	case 4, 5:
		return s.pick("/verify", "/verify ran it")
	case 6:
		return s.pick("/reject", "/reject broken", "/reject   ")
	case 7:
		return "/status"
	case 8:
		return s.pick("/reopen", "/reopen regressed")
	case 9:
		return s.pick("/skip-verify", "/skip-verify docs only")
	case 10:
		return s.pick("/force-complete", "/force-complete OVERRIDE", "/force-complete OVERRIDE ship it",
			"/force-complete override ship it", "/force-complete ship it", "/force-complete  OVERRIDE  x")
	}
	return s.pick("/verify-goal", "/contract advisory")
}

// openPR returns pull request n, opening it (as a new PR with a new head) if
// it is not open.
func (s *propSeq) openPR(n int) (p *PRFacts, opened bool) {
	if p := s.prs[n]; p != nil && p.Open {
		return p, false
	}
	if p := s.prs[n]; p != nil && !p.Merged && s.r2.IntN(2) == 0 {
		p.Open = true // closed unmerged, reopened as it was: the same head
		return p, true
	}
	p = &PRFacts{Number: n, Author: u(s.pick("dave", "dave", "alice", "erin", "copilot[bot]")), Head: s.head(),
		Draft: s.r.IntN(2) == 0, Open: true, Merges: "m0"}
	if n == 13 && s.seed%3 == 1 { // an outsider's pull request (no draw: the sequences stay as they were)
		p.Author, p.Outsider = u("mallory"), true
	}
	p.Pushers = []User{p.Author} // opened: its sender pushed its commits
	s.prs[n] = p
	return p, true
}

func copyPR(p *PRFacts) *PRFacts {
	c := *p
	c.Pushers = slices.Clone(p.Pushers)
	c.Committers = slices.Clone(p.Committers)
	c.Runs = slices.Clone(p.Runs)
	return &c
}

// event is a random event for task cur (nil if not tracked yet).
func (s *propSeq) event(cur *Task) (Event, Facts) {
	s.min++
	actor := propPeople[s.r.IntN(len(propPeople))]
	ev := Event{Actor: u(actor), At: fxAt(s.min), Issue: IssueFacts{Repo: fxRepo, Number: fxIssue, Title: "Login form", Author: u("lead")}}
	if s.seed%5 == 2 && s.min%2 == 0 && actor == "alice" { // alice renamed: the same account (no draw)
		ev.Actor = renamed(ev.Actor, "alice-renamed")
	}
	n := 12
	if s.r.IntN(4) == 0 {
		n = 13
	}
	if cur != nil && s.r2.IntN(25) == 0 { // someone deletes or edits the card
		ev.Kind = EventKind(s.pick(string(CardDeleted), string(CardEdited)))
		return ev, s.facts(ev.Actor.Login)
	}
	if s.unlinked[n] { // its description closes the task again: mostly the same head
		delete(s.unlinked, n)
		if s.r2.IntN(3) == 0 {
			s.prs[n].Head = s.head() // pushed to while it closed nothing
		}
		ev.Kind, ev.Actor, ev.PR = PRLinked, u(s.pick("erin", "dave", "bob")), copyPR(s.prs[n])
		return ev, s.facts(ev.Actor.Login)
	}
	switch k := s.r.IntN(20); {
	case k < 7:
		ev.Kind = Commented
		body := s.command()
		if s.r.IntN(4) == 0 {
			body += "\n" + s.command()
		}
		ev.Commands = ParseCommands(body)
		if len(s.seen) > 0 && s.r.IntN(10) == 0 {
			ev.CommentID = s.seen[s.r.IntN(len(s.seen))] // a redelivered comment
		} else {
			s.comment++
			ev.CommentID = s.comment
			s.seen = append(s.seen, s.comment)
		}
		if p := s.prs[n]; p != nil && p.Open && s.r.IntN(3) == 0 {
			ev.Where = n
		}
	case k < 9:
		ev.Kind = IssueAssigned
		for _, a := range []string{"alice", "dave", "erin", "copilot[bot]"} {
			if s.r.IntN(4) == 0 {
				ev.Issue.Assignees = append(ev.Issue.Assignees, u(a))
			}
		}
	case k < 10:
		ev.Kind = IssueClosed
		ev.Reason = s.pick("completed", "not_planned")
		ev.Issue.Closed = true
	case k < 11:
		ev.Kind = IssueReopened
	case k < 12:
		ev.Kind = EventKind(s.pick(string(IssueLabeled), string(IssueUnlabeled)))
		ev.Label = s.pick("state:verified", "state:review", "state:pending", "state:bogus", LabelEscalated, LabelUnverified, LabelForced, "bug")
	case k < 15:
		s.prEvent(&ev, n, cur)
	case k < 16:
		s.ciEvent(&ev, n)
	default:
		s.review(&ev, n, cur)
	}
	return ev, s.facts(ev.Actor.Login)
}

// prEvent is an event of pull request n, including restatements of a pull
// request as the task records it (PRLinked, as Fanout makes when the pull
// request's record is missing; a redelivered PRReady), which must move nothing.
func (s *propSeq) prEvent(ev *Event, n int, cur *Task) {
	p, opened := s.openPR(n)
	ev.Kind = PRLinked
	if !opened && p.Open && s.r2.IntN(8) == 0 {
		// Its base changes (by hand, or by GitHub when the pull request
		// beneath it merges): the same head merges what it did (m0) or other
		// changes (m1, m2), back and forth.
		was := p.Merges
		p.Merges = s.pick2("m0", "m1", "m2")
		ev.Kind = PRRetargeted
		ev.Retarget = &Retarget{From: "b-" + was, To: "b-" + p.Merges}
		if p.Merges != was {
			ev.Retarget.Changes = 1 + s.r2.IntN(3)
		}
		ev.Actor = u(s.pick2("alice", "dave", "erin"))
		ev.PR = copyPR(p)
		return
	}
	if !opened {
		switch s.r.IntN(10) {
		case 0: // a restatement (edited, or redelivered)
		case 1, 2:
			ev.Kind, p.Draft = PRReady, false
		case 3:
			ev.Kind, p.Draft = PRDraft, true
		case 4, 5, 6, 7:
			ev.Kind = PRPushed
			if s.r.IntN(5) > 0 {
				p.Head = s.head()
			}
			if s.r2.IntN(3) == 0 { // someone else pushed, under whatever git identity
				pusher := u(s.pick("alice", "dave", "erin", "copilot[bot]"))
				if !slices.ContainsFunc(p.Pushers, pusher.Is) {
					p.Pushers = append(p.Pushers, pusher)
				}
				ev.Actor = pusher
				ev.PR = copyPR(p)
				return
			}
			if s.r.IntN(3) == 0 {
				p.Committers = append(p.Committers, MemberOf(u(s.pick("erin", "bob", "copilot[bot]")), fmt.Sprintf("co-author on #%d", n)))
			}
		case 8:
			ev.Kind, p.Open, p.Merged = PRMerged, false, true
		case 9:
			ev.Kind, p.Open = PRUnlinked, false
			if s.r2.IntN(3) == 0 { // a bystander edits its description not to close the task: still open
				p.Open = true
				ev.PR = copyPR(p)
				s.unlinked[n] = true
				ev.Actor = u(s.pick("erin", "bob"))
				return
			}
		}
	}
	ev.Actor = p.Author
	ev.PR = copyPR(p)
}

// ciEvent is a CI result on pull request n's head: a check run by GitHub
// Actions (or by no known App), or a commit status posted by a CI account, by
// an outsider, or by someone who builds (or may come to build) the task.
func (s *propSeq) ciEvent(ev *Event, n int) {
	p, opened := s.openPR(n)
	if opened {
		ev.Kind, ev.Actor, ev.PR = PRLinked, p.Author, copyPR(p)
		return
	}
	s.runID++
	r := CIRun{Name: s.pick("lint", "typecheck", "test"), ID: s.runID, At: fxAt(s.min)}
	if s.r.IntN(2) == 0 {
		r.State, r.Conclusion, r.App = "completed", s.pick("success", "success", "failure"), s.pick("github-actions", "github-actions", "")
		if r.App == ActionsApp { // a job's, one a workflow's token created, or not known yet
			r.Made = s.pick(MadeByJob, MadeByJob, MadeByToken, "")
		}
	} else {
		r.Status, r.State = true, s.pick("success", "success", "failure")
		r.Creator = u(s.pick("ci-bot", "alice", "dave", "erin", "bob", "copilot[bot]", GitHubActionsBot))
	}
	if s.runID%5 == 0 { // every fifth result is unfinished (no draw)
		r.Conclusion, r.State = "", map[bool]string{false: "in_progress", true: "pending"}[r.Status]
	}
	p.Runs, _ = MergeRun(p.Runs, r)
	ev.Kind, ev.Actor, ev.PR = PRChecked, u("ci"), copyPR(p)
}

// review is a review of pull request n: approvals (current or stale heads),
// change requests (by anyone, eligible or not), dismissals and comments.
func (s *propSeq) review(ev *Event, n int, cur *Task) {
	p, opened := s.openPR(n)
	if opened {
		ev.Kind, ev.Actor, ev.PR = PRLinked, p.Author, copyPR(p)
		return
	}
	ev.Kind = PRReviewed
	ev.PR = copyPR(p)
	rv := &ReviewFacts{Reviewer: ev.Actor, Head: p.Head}
	if s.r.IntN(5) == 0 {
		rv.Head = "h0"
	}
	switch k := s.r.IntN(10); {
	case k < 5:
		rv.State = "approved"
	case k < 7:
		rv.State = "changes_requested"
		rv.Body = "fix the email check"
	case k < 8:
		rv.State = "dismissed"
	default:
		rv.State = "commented"
	}
	ev.Review = rv
}

func (s *propSeq) describe(ev Event, f Facts) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s by %s (lead %v, eligible %v, team %d, separation %s)", ev.Kind, ev.Actor, known(f).Person.Lead, known(f).Person.Eligible, known(f).TeamSize, f.Config.Separation)
	if ev.PR != nil {
		fmt.Fprintf(&b, " PR %+v", *ev.PR)
	}
	if ev.Review != nil {
		fmt.Fprintf(&b, " review %+v", *ev.Review)
	}
	for _, c := range ev.Commands {
		fmt.Fprintf(&b, " %q", c.Line)
	}
	if ev.CommentID != 0 {
		fmt.Fprintf(&b, " comment %d", ev.CommentID)
	}
	if ev.Label != "" {
		fmt.Fprintf(&b, " label %s", ev.Label)
	}
	if ev.Reason != "" {
		fmt.Fprintf(&b, " reason %s", ev.Reason)
	}
	if len(ev.Issue.Assignees) > 0 || ev.Kind == IssueAssigned {
		fmt.Fprintf(&b, " assignees %v", ev.Issue.Assignees)
	}
	return b.String()
}

// propState is what the checks carry from one step to the next.
type propState struct {
	approvers []User // everyone whose approval counted in the current attempt
	attempt   int
	blocked   bool // failed verification, no new submission (review) since
}

// run applies steps random events and checks the properties after each one;
// it returns the first violation, with the sequence that led to it.
func (s *propSeq) run(steps int) error {
	var cur *Task
	var ps propState
	for i := range steps {
		ev, f := s.event(cur)
		s.log = append(s.log, fmt.Sprintf("%2d. %s", i, s.describe(ev, f)))
		var before *Task
		if cur != nil {
			before = snapshot(cur)
		}
		d := DecideTask(cur, ev, f)
		fail := func(format string, args ...any) error {
			hist := ""
			if d.Task != nil {
				hist = fmtHistory(d.Task.History)
			}
			return fmt.Errorf("seed %d, step %d: %s\nevents:\n%s\nhistory after:\n%s", s.seed, i, fmt.Sprintf(format, args...),
				strings.Join(s.log, "\n"), hist)
		}
		// (e) the input is never modified.
		if cur != nil && !reflect.DeepEqual(cur, before) {
			return fail("DecideTask modified its input:\nbefore %+v\nafter  %+v", before, cur)
		}
		next := d.Task
		if next == nil && cur != nil && ev.Kind == PRRetargeted {
			if err := checkRetarget(cur, cur, ev); err != nil {
				return fail("%v", err)
			}
		}
		if next == nil {
			outsider := ev.PR != nil && ev.PR.Outsider && !containsUser(ev.Issue.Assignees, ev.PR.Author)
			if cur == nil && ev.Issue.Number != 0 && !outsider {
				return fail("a tracked issue's event did not start tracking it")
			}
			for _, e := range d.Effects {
				if e.Kind == EffectSyncLabels || e.Kind == EffectAssign || e.Kind == EffectReopen {
					return fail("effect %s without a new record", e.Kind)
				}
			}
			continue
		}
		if err := checkStep(cur, next, ev, f, d, &ps); err != nil {
			return fail("%v", err)
		}
		cur = next
	}
	return nil
}

// checkStep checks the properties of one decision: cur (nil if untracked) to
// next, for ev with facts f.
func checkStep(cur, next *Task, ev Event, f Facts, d Decision, ps *propState) error {
	// (a) one of States; the labels effect carries exactly one state label.
	if !next.State.Valid() {
		return fmt.Errorf("state %q is not a state", next.State)
	}
	for _, e := range effectsOf(d, EffectSyncLabels) {
		n := 0
		for _, l := range e.Labels {
			if _, ok := StateFromLabel(l); ok {
				n++
			} else if strings.HasPrefix(l, StateLabelPrefix) {
				return fmt.Errorf("labels %v carry an invalid state label", e.Labels)
			}
		}
		if n != 1 {
			return fmt.Errorf("labels effect %v carries %d state labels", e.Labels, n)
		}
		if !slices.Equal(e.Labels, next.Labels()) {
			return fmt.Errorf("labels effect %v, record's labels %v", e.Labels, next.Labels())
		}
	}
	if cur != nil && !slices.Equal(cur.Labels(), next.Labels()) && len(effectsOf(d, EffectSyncLabels)) == 0 {
		return fmt.Errorf("labels changed from %v to %v without a labels effect", cur.Labels(), next.Labels())
	}
	if next.State == Verified {
		ways := 0
		for _, w := range []bool{!next.Verifier.IsZero(), next.Unverified, next.Forced} {
			if w {
				ways++
			}
		}
		if ways != 1 {
			return fmt.Errorf("verified with verifier %q, unverified %v, forced %v: want exactly one", next.Verifier, next.Unverified, next.Forced)
		}
	} else if !next.Verifier.IsZero() || next.Unverified || next.Forced {
		return fmt.Errorf("%s with verifier %q, unverified %v, forced %v", next.State, next.Verifier, next.Unverified, next.Forced)
	}
	// (f) a completed task carries a counted approval.
	if next.State == Completed && len(next.Approvals) == 0 {
		return fmt.Errorf("completed without any counted approval")
	}

	// (c) history is append-only (a repeated note is counted on its entry);
	// each entry moves from the previous state,
	// one step forward, or along an allowed backward move.
	var old []Transition
	if cur != nil {
		old = cur.History
	}
	if !appendOnly(old, next.History) {
		return fmt.Errorf("history is not append-only")
	}
	added := next.History[len(old):]
	state := State("")
	if cur != nil {
		state = cur.State
	}
	if cur != nil && cur.State != next.State && len(added) == 0 {
		return fmt.Errorf("state changed from %s to %s without history", cur.State, next.State)
	}
	// The approvers of the attempt as the verification sees them.
	approvers := next.Approvers
	if cur != nil && next.Attempt == ps.attempt {
		for _, a := range ps.approvers {
			if !containsUser(approvers, a) {
				approvers = append(approvers, a)
			}
		}
	}
	for i, h := range added {
		if h.Actor != ev.Actor.Login || !h.At.Equal(ev.At) {
			return fmt.Errorf("history entry %+v is not by the event's actor at its time", h)
		}
		switch {
		case state == "":
			if h.From != "" || h.To != Pending || i != 0 {
				return fmt.Errorf("first history entry %+v, want (new) -> pending", h)
			}
		case h.From != state:
			return fmt.Errorf("history entry %+v starts from %s, the state was %s", h, h.From, state)
		case h.To == h.From:
			// a note
		case h.To.rank() == h.From.rank()+1:
			// one step forward
		case propAllowedBack[[2]State{h.From, h.To}]:
		default:
			return fmt.Errorf("forbidden move %s -> %s (%s)", h.From, h.To, h.Why)
		}
		// (d) a task that failed verification reaches completed only
		// through review (a new submission).
		if strings.HasPrefix(h.Why, "/reject") {
			ps.blocked = true
		}
		if h.To == Review && h.From != Review {
			ps.blocked = false
		}
		if h.To == Completed && h.From != Completed && ps.blocked {
			return fmt.Errorf("completed after a failed verification without a new submission: %+v", h)
		}
		// (b) verified only by a proper /verify or a lead's logged override.
		if h.To == Verified && h.From != Verified {
			if err := checkVerified(next, ev, f, approvers, added); err != nil {
				return err
			}
		}
		// Changes requested: by an eligible non-builder only.
		if ev.Kind == PRReviewed && h.From == Review && h.To == InProgress {
			if !known(f).Person.Eligible || next.IsBuilder(ev.Review.Reviewer) {
				return fmt.Errorf("changes requested by %s (eligible %v, builder %v) sent the task back", ev.Review.Reviewer, known(f).Person.Eligible, next.IsBuilder(ev.Review.Reviewer))
			}
		}
		state = h.To
	}
	if state != next.State {
		return fmt.Errorf("history ends in %s, the state is %s", state, next.State)
	}
	// (g) a pull request event that restates what the record already holds
	// (a redelivery, a resync) moves nothing. (One that names a new builder is
	// news: that builder's approval stops counting.)
	if cur != nil && ev.PR != nil && ev.Kind != PRReviewed && ev.Kind != PRChecked && ev.Kind != PRUnlinked && cur.State != next.State && len(next.Builders) == len(cur.Builders) {
		if p := cur.pr(ev.PR.Number); p != nil && p.Open && ev.PR.Open && p.Head == ev.PR.Head && p.Draft == ev.PR.Draft &&
			(ev.PR.Merges == "" || ev.PR.Merges == p.Merges) { // a base change that brings other changes is news
			return fmt.Errorf("%s restating #%d as recorded moved %s -> %s", ev.Kind, p.Number, cur.State, next.State)
		}
	}
	// (j) a base change that brings changes no one approved leaves nothing
	// verified, and no approval of what it merged before counts for what it
	// merges now; one that merges the same changes nothing.
	if cur != nil && ev.Kind == PRRetargeted {
		if err := checkRetarget(cur, next, ev); err != nil {
			return err
		}
	}
	// (h) an outsider's pull request that the task does not link, and whose
	// author is not assigned to it, moves nothing (docs/design.md, The task lifecycle).
	if ev.PR != nil && ev.PR.Outsider && ev.Kind != Commented && cur != nil && !containsUser(cur.Assignees, ev.PR.Author) {
		return fmt.Errorf("an outsider's pull request #%d changed the task", ev.PR.Number)
	}
	if err := checkIntegrity(cur, next, ev, d); err != nil {
		return err
	}
	// (i) a CI criterion passes only on results from trusted sources
	// (docs/design.md, Verification contracts): for each check name it counts, a passing run on a checked pull
	// request's head that no builder posted and a GitHub App created.
	if err := checkTrustedPasses(next, f); err != nil {
		return err
	}
	ps.blocked = ps.blocked || next.Failing
	if next.Failing && next.State != InProgress {
		return fmt.Errorf("failing in %s", next.State)
	}
	if cur == nil || next.Attempt != ps.attempt {
		ps.attempt, ps.approvers = next.Attempt, nil
	}
	for _, a := range next.Approvers {
		if !containsUser(ps.approvers, a) {
			ps.approvers = append(ps.approvers, a)
		}
	}
	return nil
}

// checkRetarget checks a base change's decision (DESIGN §2).
func checkRetarget(cur, next *Task, ev Event) error {
	p := cur.pr(ev.PR.Number)
	if p == nil || !p.Open || p.Head != ev.PR.Head {
		return nil
	}
	if p.Merges == ev.PR.Merges {
		if next.State != cur.State || next.Verifier != cur.Verifier {
			return fmt.Errorf("a base change that brings nothing new moved %s -> %s", cur.State, next.State)
		}
		return nil
	}
	if cur.State == Verified && next.State == Verified {
		return fmt.Errorf("verified kept after a base change that brought changes no one approved")
	}
	if next.State == Completed || next.State == Verified {
		for _, a := range next.Approvals {
			if a.PR == p.Number && a.Head == p.Head && a.Merges != ev.PR.Merges && !next.Forced && !next.Unverified {
				if lp := next.pr(p.Number); lp != nil && a.covers(*lp) {
					return fmt.Errorf("an approval of what #%d merged before (%s) covers what it merges now (%s)", p.Number, a.Merges, ev.PR.Merges)
				}
			}
		}
		if !next.Forced && !next.Unverified && !next.approvedNow() {
			return fmt.Errorf("%s after a base change, with no approval of what #%d merges now", next.State, p.Number)
		}
	}
	return nil
}

// checkIntegrity checks the properties of DESIGN §1, §2 and §5 that close
// the ways around separation through pushers, merged pull requests, heads
// that come back and the card.
func checkIntegrity(cur, next *Task, ev Event, d Decision) error {
	// (j) whoever pushed to a pull request the task links builds the task.
	if p := ev.PR; p != nil && ev.Kind != PRUnlinked && ev.Kind != PRReviewed && ev.Kind != Commented && next.pr(p.Number) != nil {
		for _, pu := range p.Pushers {
			if !next.IsBuilder(pu) {
				return fmt.Errorf("%s pushed to #%d but is no builder: %+v", pu, p.Number, next.Builders)
			}
		}
	}
	// (k) no builder's approval counts, whenever they became a builder.
	for _, a := range slices.Concat(next.Approvals, next.MergedApprovals) {
		if next.IsBuilder(a.By) {
			return fmt.Errorf("the approval of builder %s counts: %+v", a.By, a)
		}
	}
	// (l) completed means the head of every pull request carrying the code,
	// merged ones included, is approved.
	if next.State == Completed && len(next.Unapproved()) > 0 {
		return fmt.Errorf("completed with #%d's head %s unapproved", next.Unapproved()[0].Number, next.Unapproved()[0].Head)
	}
	if cur == nil {
		return nil
	}
	// (m) only a new head voids: a pull request that stops closing the task
	// voids nothing, and one that comes back with an approved head as it was
	// (and names no new builder) sends nothing back to review.
	if ev.Kind == PRUnlinked && cur.State == Verified && next.State != Verified {
		return fmt.Errorf("#%d unlinked moved a verified task to %s", ev.PR.Number, next.State)
	}
	if ev.Kind != PRLinked || ev.PR == nil {
		// not a pull request coming back
	} else if lp := cur.pr(ev.PR.Number); lp != nil && !lp.Open && lp.Head == ev.PR.Head && cur.headApproved(*lp) &&
		len(next.Builders) == len(cur.Builders) && (cur.State == Completed || cur.State == Verified) && next.State == Review {
		return fmt.Errorf("#%d came back with its approved head %s and sent the task to review", lp.Number, lp.Head)
	}
	// (n) a deleted or edited card is written back and recorded; nothing
	// else changes.
	if ev.Kind == CardDeleted || ev.Kind == CardEdited {
		if len(next.History) > len(cur.History)+1 || len(effectsOf(d, EffectSyncCard)) != 1 {
			return fmt.Errorf("%s: %d history entries added, effects %+v", ev.Kind, len(next.History)-len(cur.History), d.Effects)
		}
		ids := func(t *Task) string { // who holds which role, by account (a renamed login is the same person)
			var b strings.Builder
			fmt.Fprint(&b, t.State, t.Verifier.ID, t.VerifiedAt)
			for _, a := range t.Approvals {
				fmt.Fprint(&b, " a", a.By.ID, a.PR, a.Head)
			}
			for _, m := range t.Builders {
				fmt.Fprint(&b, " b", m.ID, m.As)
			}
			return b.String()
		}
		if ids(next) != ids(cur) {
			return fmt.Errorf("%s changed the record: %+v", ev.Kind, next)
		}
	}
	return nil
}

func checkTrustedPasses(next *Task, f Facts) error {
	if next.Contract == nil {
		return nil
	}
	var heads []LinkedPR
	for _, p := range next.PRs {
		if p.Open {
			heads = append(heads, p)
		}
	}
	if len(heads) == 0 {
		for _, p := range next.PRs {
			if p.Merged {
				heads = append(heads, p)
			}
		}
	}
	for _, c := range next.Contract.Criteria {
		if c.Result == ResultPass && len(heads) > 0 && (c.Activity == ActCI || f.Config.Contracts.WholeCI() && slices.Contains(CheckedActivities, c.Activity) && c.Timing != TimingDeferred) {
			if err := checkWholeCIPass(c, heads, f, next); err != nil {
				return err
			}
			continue
		}
		pats := f.Config.Contracts.Checks[c.Activity]
		if c.Result != ResultPass || c.Activity == ActCritic || len(pats) == 0 || len(heads) == 0 {
			continue
		}
		for _, p := range heads {
			for _, pat := range pats {
				if !slices.ContainsFunc(p.Runs, func(r CIRun) bool {
					return MatchCheck(pat, r.Name) && r.Result() == ResultPass && Distrust(f.Config.Contracts, r, next.IsBuilder) == ""
				}) {
					return fmt.Errorf("criterion %s passed without a trusted passing %q on #%d: runs %+v", c.Key(), pat, p.Number, p.Runs)
				}
			}
		}
	}
	return nil
}

// checkWholeCIPass checks that criterion c, decided by the whole CI, passed
// only with a trusted passing run on every head and no trusted run there
// failed or unfinished.
func checkWholeCIPass(c Criterion, heads []LinkedPR, f Facts, next *Task) error {
	for _, p := range heads {
		passed := false
		for _, r := range p.Runs {
			if Distrust(f.Config.Contracts, r, next.IsBuilder) != "" || r.neutral() {
				continue
			}
			if r.Result() != ResultPass {
				return fmt.Errorf("criterion %s passed with the trusted run %q %s on #%d", c.Key(), r.Name, r.Outcome(), p.Number)
			}
			passed = true
		}
		if !passed {
			return fmt.Errorf("criterion %s passed without a trusted passing run on #%d: runs %+v", c.Key(), p.Number, p.Runs)
		}
	}
	return nil
}

// checkVerified checks that ev, which moved next into verified, may.
func checkVerified(next *Task, ev Event, f Facts, approvers []User, added []Transition) error {
	if ev.Kind != Commented {
		return fmt.Errorf("%s moved the task to verified", ev.Kind)
	}
	logged := func(word string) bool {
		return slices.ContainsFunc(added, func(h Transition) bool {
			return h.To == Verified && strings.Contains(h.Why, word) && strings.Contains(h.Why, ev.Actor.Login)
		})
	}
	for _, c := range ev.Commands {
		switch c.Name {
		case CmdVerify:
			if known(f).Person.Eligible && !next.IsBuilder(ev.Actor) && (propRelaxed(f) || !containsUser(approvers, ev.Actor)) {
				return nil
			}
		case CmdSkipVerify:
			if known(f).Person.Lead && strings.TrimSpace(c.Args) != "" && logged("skip-verify") &&
				(next.State != Verified || next.Unverified) {
				return nil
			}
		case CmdForceComplete:
			word, reason := forceArgs(c.Args)
			if known(f).Person.Lead && word == "OVERRIDE" && reason != "" && logged("force-complete") &&
				(next.State != Verified || next.Forced) {
				return nil
			}
		}
	}
	return fmt.Errorf("verified by %s (lead %v, eligible %v, builder %v, approvers %v, separation %s, team %d) without a proper /verify or a lead's override",
		ev.Actor, known(f).Person.Lead, known(f).Person.Eligible, next.IsBuilder(ev.Actor), approvers, f.Config.Separation, known(f).TeamSize)
}

func TestDecideTaskProperties(t *testing.T) {
	const sequences, steps = 2000, 60
	reached := map[State]int{}
	for seed := uint64(1); seed <= sequences; seed++ {
		s := newPropSeq(seed)
		if err := s.run(steps); err != nil {
			t.Fatal(err)
		}
	}
	// The generator must reach every state, or the properties say little.
	for seed := uint64(1); seed <= 200; seed++ {
		s := newPropSeq(seed)
		var cur *Task
		for range steps {
			ev, f := s.event(cur)
			if d := DecideTask(cur, ev, f); d.Task != nil {
				cur = d.Task
				reached[cur.State]++
			}
		}
	}
	for _, st := range States {
		if reached[st] == 0 {
			t.Errorf("the random sequences never reach %s", st)
		}
	}
	t.Logf("steps per state (200 sequences): %v", reached)
}

// TestDecideTaskPropertiesQuick lets testing/quick pick the seeds.
func TestDecideTaskPropertiesQuick(t *testing.T) {
	cfg := &quick.Config{MaxCount: 300, Rand: mrand.New(mrand.NewSource(1))}
	err := quick.Check(func(seed uint64) bool {
		if err := newPropSeq(seed).run(40); err != nil {
			t.Log(err)
			return false
		}
		return true
	}, cfg)
	if err != nil {
		t.Fatal(err)
	}
}

// The verification paths the properties allow are reached by the random
// sequences: each of /verify, /skip-verify and /force-complete.
func TestDecideTaskPropertiesReachVerification(t *testing.T) {
	ways := map[string]int{}
	eachDecision(500, 60, func(cur *Task, ev Event, d Decision) {
		if (cur == nil || cur.State != Verified) && d.Task.State == Verified {
			switch {
			case d.Task.Forced:
				ways["force-complete"]++
			case d.Task.Unverified:
				ways["skip-verify"]++
			default:
				ways["verify"]++
			}
		}
	})
	for _, w := range []string{"verify", "skip-verify", "force-complete"} {
		if ways[w] == 0 {
			t.Errorf("no random sequence reaches verified by %s", w)
		}
	}
	t.Logf("ways into verified: %v", ways)
}

// The random sequences reach the paths of the second round of integrity
// defences: another person's push, a merge with no approval, an approved
// head that comes back to a completed or verified task, a card deleted or
// edited.
func TestDecideTaskPropertiesReachIntegrity(t *testing.T) {
	reached := map[string]int{}
	marks := map[string]string{
		"pusher builds":      "pushed to #",
		"merged unapproved":  "merged with no approval",
		"approved head back": "so what was approved and verified for it stands",
		"card deleted":       "task card deleted",
		"card edited":        "task card edited",
		"closed or unlinked": "no longer closes this task",
	}
	eachDecision(500, 60, func(cur *Task, ev Event, d Decision) {
		for _, b := range d.Task.Builders {
			if strings.HasPrefix(b.As, "pushed to #") && ev.PR != nil && (cur == nil || !cur.IsBuilder(b.User())) && !b.Is(ev.PR.Author) {
				reached["pusher builds"]++
			}
		}
		old := 0
		if cur != nil {
			old = len(cur.History)
		}
		for _, h := range d.Task.History[old:] {
			for name, m := range marks {
				if strings.Contains(h.Why, m) && (h.From == Completed || h.From == Verified || name != "approved head back") {
					reached[name]++
				}
			}
		}
	})
	for name := range marks {
		if reached[name] == 0 {
			t.Errorf("no random sequence reaches %q", name)
		}
	}
	t.Logf("integrity paths reached: %v", reached)
}

// eachDecision plays seeds random sequences of steps events and calls fn
// with each decision that keeps a record, and the record before it.
func eachDecision(seeds, steps int, fn func(cur *Task, ev Event, d Decision)) {
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		s := newPropSeq(seed)
		var cur *Task
		for range steps {
			ev, f := s.event(cur)
			d := DecideTask(cur, ev, f)
			if d.Task == nil {
				continue
			}
			fn(cur, ev, d)
			cur = d.Task
		}
	}
}

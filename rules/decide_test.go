package rules

import (
	"fmt"
	"hash/fnv"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// The cast of the decide tests (docs/design.md, Roles):
//   - alice: the assignee, a builder from the moment she is assigned;
//   - dave: the linked pull request's author (a builder of tasks with a PR);
//   - carol: the approver of completed and verified tasks;
//   - bob, erin: eligible outsiders (write permission, built nothing);
//   - mallory: a stranger, no write permission;
//   - lead: a lead (and so eligible).
const (
	fxRepo  = "acme/app"
	fxIssue = 7
	fxPR    = 12
	fxHead  = "h1"
)

var fxLeads = []string{"lead", "@acme/leads"}

// fxIDs are the cast's account ids. People are ids (docs/design.md, Roles): the tests
// build every person with u, so that the rules compare ids, not logins.
var fxIDs = map[string]int64{
	"lead": 1001, "alice": 1002, "bob": 1003, "carol": 1004, "dave": 1005,
	"erin": 1006, "mallory": 1007, "copilot[bot]": 1008, "ci": 1009,
	"countersign[bot]": 1010,
}

// u is the account login names: a cast member's fixed id, or for anyone
// else an id derived from the login (logins are case-insensitive, so
// "Alice" is alice's account). "" is no one.
func u(login string) User {
	if login == "" {
		return User{}
	}
	key := strings.ToLower(login)
	if id, ok := fxIDs[key]; ok {
		return User{ID: id, Login: login}
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	return User{ID: 1_000_000 + int64(h.Sum64()%1_000_000_000), Login: login}
}

// us are the accounts logins name, in order.
func us(logins ...string) []User {
	var out []User
	for _, l := range logins {
		out = append(out, u(l))
	}
	return out
}

// renamed is account a known by another login, as after a rename.
func renamed(a User, login string) User { return User{ID: a.ID, Login: login} }

// fxAt is a fixed instant: the fixtures' history happens before minute 100,
// the events under test at minute 100.
func fxAt(min int) time.Time {
	return time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC).Add(time.Duration(min) * time.Minute)
}

// fxPerson is what the repository says about login.
func fxPerson(login string) Person {
	switch strings.ToLower(login) {
	case "lead":
		return Person{Lead: true, Eligible: true}
	case "mallory", "":
		return Person{}
	}
	return Person{Eligible: true}
}

// fxFacts are the facts for an event by actor: default config (with named
// checks, mappedConfig), a team of 3.
func fxFacts(actor string) Facts {
	return Facts{Config: mappedConfig(), Ask: Known(Answers{Person: fxPerson(actor), TeamSize: 3, Leads: fxLeads})}
}

// known are the answers f's lookup gives, to change them.
func known(f Facts) *Answers { return f.Ask.(StaticLookup).Answers }

// fxTask makes a task in state s, with a history that got it there. Without a
// pull request alice works by /start and /submit; with one (states from
// in-progress on) dave's #12 (head h1) carries the work. Completed and verified
// tasks were approved by carol (on #12's head when there is a PR), verified
// ones verified by bob.
func fxTask(s State, withPR bool) *Task {
	return fxContracted(fxTaskBare(s, withPR))
}

func fxTaskBare(s State, withPR bool) *Task {
	t := &Task{Repo: fxRepo, Number: fxIssue, Title: "Login form", State: Pending, Opener: u("lead"), Attempt: 1}
	t.History = []Transition{{To: Pending, Actor: "lead", At: fxAt(0), Why: "issue opened"}}
	min := 0
	step := func(to State, actor, why string) {
		min++
		t.History = append(t.History, Transition{From: t.State, To: to, Actor: actor, At: fxAt(min), Why: why})
		t.State = to
	}
	if s == Pending {
		return t
	}
	t.Assignees = us("alice")
	t.Builders = []Member{MemberOf(u("alice"), "assignee")}
	step(Assigned, "lead", "assigned to @alice")
	if s == Assigned {
		return t
	}
	if withPR {
		t.PRs = []LinkedPR{{Number: fxPR, Author: u("dave"), Head: fxHead, Draft: true, Open: true}}
		t.Builders = append(t.Builders, MemberOf(u("dave"), "author of #12"))
		step(InProgress, "dave", "#12 opened")
	} else {
		step(InProgress, "alice", "/start")
	}
	if s == InProgress {
		return t
	}
	if withPR {
		t.PRs[0].Draft = false
		step(Review, "dave", "#12 ready for review")
	} else {
		step(Review, "alice", "/submit")
	}
	if s == Review {
		return t
	}
	if withPR {
		t.Approvals = []Approval{{By: u("carol"), Head: fxHead, PR: fxPR, At: fxAt(min + 1)}}
		step(Completed, "carol", "approved by @carol on #12")
	} else {
		t.Approvals = []Approval{{By: u("carol"), At: fxAt(min + 1)}}
		step(Completed, "carol", "/approve by @carol")
	}
	if s == Completed {
		return t
	}
	t.Verifier, t.VerifiedAt = u("bob"), fxAt(min+1)
	step(Verified, "bob", "/verify")
	return t
}

// fxRuns are CI runs that pass the default contract's typecheck and lint.
func fxRuns() []CIRun {
	return []CIRun{{Name: "lint", ID: 1, State: "completed", Conclusion: "success", At: fxAt(1), App: "github-actions", Made: MadeByJob},
		{Name: "typecheck", ID: 2, State: "completed", Conclusion: "success", At: fxAt(1), App: "github-actions", Made: MadeByJob}}
}

// fxContracted gives t (a fixture) the contract tracking would have given it,
// with its criteria evaluated: CI passed on its pull request's head.
func fxContracted(t *Task) *Task {
	for i := range t.PRs {
		t.PRs[i].Runs = fxRuns()
	}
	d := &decider{f: fxFacts(""), t: t, ev: Event{At: fxAt(0)}}
	d.ensureContract()
	d.evaluate()
	return t
}

func fxEvent(kind EventKind, actor string) Event {
	return Event{Kind: kind, Actor: u(actor), At: fxAt(100), Issue: IssueFacts{Repo: fxRepo, Number: fxIssue, Title: "Login form"}}
}

// fxComment is a new comment on the task (id 900) by actor.
func fxComment(actor, body string) Event {
	ev := fxEvent(Commented, actor)
	ev.CommentID = 900
	ev.Commands = ParseCommands(body)
	return ev
}

// fxPREvent is an event of pull request #12 (open) by dave.
func fxPREvent(kind EventKind, head string, draft bool) Event {
	ev := fxEvent(kind, "dave")
	ev.PR = &PRFacts{Number: fxPR, Author: u("dave"), Head: head, Draft: draft, Open: true, Runs: fxRuns()}
	return ev
}

// fxReview is a review of #12 (head h1 now) by reviewer, of commit head.
func fxReview(reviewer, state, head, body string) Event {
	ev := fxEvent(PRReviewed, reviewer)
	ev.PR = &PRFacts{Number: fxPR, Author: u("dave"), Head: fxHead, Open: true, Runs: fxRuns()}
	ev.Review = &ReviewFacts{Reviewer: u(reviewer), State: state, Head: head, Body: body}
	return ev
}

func fxIssueEvent(kind EventKind, actor string, mod func(*Event)) Event {
	ev := fxEvent(kind, actor)
	if mod != nil {
		mod(&ev)
	}
	return ev
}

// snapshot is a deep copy of t that keeps nil and empty slices apart, so
// that reflect.DeepEqual tells exactly whether t was modified.
func snapshot(t *Task) *Task {
	c := *t
	c.Assignees = slices.Clone(t.Assignees)
	c.Builders = slices.Clone(t.Builders)
	c.PRs = slices.Clone(t.PRs)
	c.Approvals = slices.Clone(t.Approvals)
	c.Rejections = slices.Clone(t.Rejections)
	c.Comments = slices.Clone(t.Comments)
	c.History = slices.Clone(t.History)
	return &c
}

// decide runs DecideTask and fails if it modified its input.
func decide(t *testing.T, task *Task, ev Event, f Facts) Decision {
	t.Helper()
	var before *Task
	if task != nil {
		before = snapshot(task)
	}
	d := DecideTask(task, ev, f)
	if task != nil && !reflect.DeepEqual(task, before) {
		t.Fatalf("DecideTask modified its input task:\nbefore %+v\nafter  %+v", before, task)
	}
	return d
}

func effectsOf(d Decision, k EffectKind) []Effect {
	var out []Effect
	for _, e := range d.Effects {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

func noticesOf(d Decision) []*Notice {
	var out []*Notice
	for _, e := range effectsOf(d, EffectNotice) {
		out = append(out, e.Notice)
	}
	return out
}

func noticeKinds(d Decision) []NoticeKind {
	var out []NoticeKind
	for _, n := range noticesOf(d) {
		out = append(out, n.Kind)
	}
	return out
}

func noticeOf(d Decision, k NoticeKind) *Notice {
	for _, n := range noticesOf(d) {
		if n.Kind == k {
			return n
		}
	}
	return nil
}

// step is one expected new history entry: the state it moves to (the same
// state for a note) and a phrase its Why contains.
type step struct {
	to  State
	why string
}

// want is what a decision must look like.
type want struct {
	nothing bool     // no new record, no effects
	state   State    // the state after
	steps   []step   // the new history entries, in order
	labels  []string // the sync-labels effect's labels; nil: no sync-labels effect
	notices []NoticeKind
	reopen  bool     // an EffectReopen
	assign  []string // an EffectAssign of these users
	check   func(t *testing.T, d Decision)
}

// checkDecision checks d, decided for ev on old, against w.
func checkDecision(t *testing.T, old *Task, ev Event, d Decision, w want) {
	t.Helper()
	if w.nothing {
		if d.Task != nil || len(d.Effects) != 0 {
			t.Fatalf("want no change and no effects, got task %+v, effects %+v", d.Task, d.Effects)
		}
		return
	}
	nt := d.Task
	if nt == nil {
		if old == nil {
			t.Fatalf("want a new record, got none (effects %+v)", d.Effects)
		}
		nt = old // the record did not change
	}
	if nt.State != w.state {
		t.Errorf("state = %q, want %q", nt.State, w.state)
	}
	var oldHist []Transition
	if old != nil {
		oldHist = old.History
	}
	if !appendOnly(oldHist, nt.History) {
		t.Fatalf("history is not append-only:\nold %+v\nnew %+v", oldHist, nt.History)
	}
	added := nt.History[len(oldHist):]
	if len(added) != len(w.steps) {
		t.Fatalf("%d new history entries, want %d:\n%s", len(added), len(w.steps), fmtHistory(added))
	}
	from := State("")
	if old != nil {
		from = old.State
	}
	for i, h := range added {
		s := w.steps[i]
		if h.From != from || h.To != s.to || !strings.Contains(h.Why, s.why) || h.Actor != ev.Actor.Login || !h.At.Equal(ev.At) {
			t.Errorf("history entry %d = %+v, want %s -> %s by %s at %v, why containing %q", i, h, from, s.to, ev.Actor, ev.At, s.why)
		}
		from = h.To
	}
	sl := effectsOf(d, EffectSyncLabels)
	switch {
	case w.labels == nil && len(sl) != 0:
		t.Errorf("unexpected sync-labels effect %+v", sl)
	case w.labels != nil && len(sl) != 1:
		t.Errorf("want one sync-labels effect with %v, got %+v", w.labels, sl)
	case w.labels != nil:
		if !slices.Equal(sl[0].Labels, w.labels) {
			t.Errorf("sync-labels %v, want %v", sl[0].Labels, w.labels)
		}
		if sl[0].Repo != fxRepo || sl[0].Number != fxIssue {
			t.Errorf("sync-labels on %s#%d, want %s#%d", sl[0].Repo, sl[0].Number, fxRepo, fxIssue)
		}
		if !slices.Equal(sl[0].Labels, nt.Labels()) {
			t.Errorf("sync-labels %v differ from the record's labels %v", sl[0].Labels, nt.Labels())
		}
	}
	if got := noticeKinds(d); !slices.Equal(got, w.notices) {
		t.Errorf("notices %v, want %v", got, w.notices)
	}
	for _, n := range noticesOf(d) {
		if n.Task != fxIssue {
			t.Errorf("notice %s is about task %d, want %d", n.Kind, n.Task, fxIssue)
		}
	}
	if got := len(effectsOf(d, EffectReopen)) > 0; got != w.reopen {
		t.Errorf("reopen effect = %v, want %v", got, w.reopen)
	}
	as := effectsOf(d, EffectAssign)
	switch {
	case w.assign == nil && len(as) != 0:
		t.Errorf("unexpected assign effect %+v", as)
	case w.assign != nil && (len(as) != 1 || !slices.Equal(as[0].Users, w.assign)):
		t.Errorf("assign effects %+v, want one of %v", as, w.assign)
	}
	if w.check != nil {
		w.check(t, d)
	}
}

// appendOnly reports whether history next continues old: old's entries
// unchanged at its start, but for notes counted again (Repeats, Last grow).
func appendOnly(old, next []Transition) bool {
	if len(next) < len(old) {
		return false
	}
	for i, o := range old {
		n := next[i]
		if n.Repeats < o.Repeats || n.Last.Before(o.Last) {
			return false
		}
		n.Repeats, n.Last, o.Repeats, o.Last = 0, time.Time{}, 0, time.Time{}
		if !reflect.DeepEqual(n, o) {
			return false
		}
	}
	return true
}

func fmtHistory(h []Transition) string {
	var b strings.Builder
	for _, e := range h {
		fmt.Fprintf(&b, "  %s -> %s by %s: %s\n", e.From, e.To, e.Actor, e.Why)
	}
	return b.String()
}

func lbl(s State, flags ...string) []string {
	out := append([]string{s.Label()}, flags...)
	slices.Sort(out)
	return out
}

// isBuilderIn reports whether the account login names is among task's
// builders: by id when the builder record has one, else by login.
func isBuilderIn(task *Task, login string) bool {
	want := u(login)
	for _, b := range task.Builders {
		if b.ID != 0 && b.ID == want.ID || b.ID == 0 && strings.EqualFold(b.Login, login) {
			return true
		}
	}
	return false
}

// ---------------------------------------------------------------------------
// Commands (docs/design.md, Commands) as a matrix of state x command x actor.

// fxRoles is what the fixture of fxTask makes of login (independently of the
// code under test).
type fxRoles struct{ assignee, builder, approver, eligible, lead bool }

func fxRolesOf(withPR bool, s State, login string) fxRoles {
	r := fxRoles{eligible: fxPerson(login).Eligible, lead: fxPerson(login).Lead}
	r.assignee = login == "alice" && s != Pending
	r.builder = r.assignee || withPR && login == "dave"
	r.approver = login == "carol" && (s == Completed || s == Verified)
	return r
}

func (r fxRoles) String() string {
	switch {
	case r.lead:
		return "lead"
	case !r.eligible:
		return "stranger"
	case r.assignee:
		return "assignee"
	case r.builder:
		return "builder"
	case r.approver:
		return "approver"
	}
	return "eligible-other"
}

// forceArgs splits /force-complete's arguments as docs/design.md writes them:
// OVERRIDE <reason>.
func forceArgs(args string) (word, reason string) {
	f := strings.Fields(args)
	if len(f) == 0 {
		return "", ""
	}
	return f[0], strings.Join(f[1:], " ")
}

// fxRefusals lists, for command c by someone with roles r on a task in state
// s, every reason docs/design.md gives to refuse it, as a key phrase the refusal must
// contain (any one of them: which is given first is the code's choice). None
// means the command is accepted. Separation is auto in a team of 3.
func fxRefusals(withPR bool, s State, c Command, r fxRoles) []string {
	var why []string
	need := func(ok bool, phrase string) {
		if !ok {
			why = append(why, phrase)
		}
	}
	switch c.Name {
	case CmdStart: // assignee: assigned -> in-progress
		need(r.assignee, "assignee")
		need(s == Assigned, "`assigned`")
	case CmdSubmit: // builder: in-progress -> review, tasks with no PR
		need(!withPR, "pull request")
		need(r.builder, "builder")
		need(s == InProgress, "`in-progress`")
	case CmdApprove: // non-builder (eligible): review -> completed, tasks with no PR
		need(!withPR, "pull request")
		need(!r.builder, "built")
		need(r.eligible, "write permission")
		need(s == Review, "`review`")
	case CmdVerify: // verifier: completed -> verified
		need(s == Completed, "`completed`")
		need(!r.builder, "built")
		need(r.eligible, "write permission")
		need(!r.approver, "approved this")
	case CmdReject: // verifier (docs/design.md, Roles: never a builder nor an approver): completed -> in-progress, a reason required
		need(c.Args != "", "reason is required")
		need(s == Completed, "`completed`")
		need(!r.builder, "built")
		need(r.eligible, "write permission")
		need(!r.approver, "approved this")
	case CmdStatus:
	case CmdReopen: // lead: verified -> in-progress, a reason required
		need(r.lead, "only a lead")
		need(c.Args != "", "reason is required")
		need(s == Verified, "`verified`")
	case CmdSkipVerify: // lead: completed -> verified (unverified), a reason required
		need(r.lead, "only a lead")
		need(c.Args != "", "reason is required")
		need(s == Completed, "`completed`")
	case CmdForceComplete: // lead: any -> verified (forced), OVERRIDE and a reason required
		word, reason := forceArgs(c.Args)
		need(r.lead, "only a lead")
		need(word == "OVERRIDE", "OVERRIDE")
		need(reason != "", "reason is required")
		need(s != Verified, "already")
	case CmdVerifyGoal, CmdRejectGoal:
		why = append(why, "goal")
	}
	return why
}

// fxAccepted is what an accepted command c by actor does to fxTask(s, withPR).
func fxAccepted(withPR bool, s State, c Command, actor string) want {
	switch c.Name {
	case CmdStart:
		return want{state: InProgress, steps: []step{{InProgress, "/start"}}, labels: lbl(InProgress)}
	case CmdSubmit:
		w := want{state: Review, steps: []step{{Review, "/submit"}}, labels: lbl(Review)}
		if c.Args != "" {
			w.steps[0].why = "/submit: " + c.Args
		}
		return w
	case CmdApprove:
		return want{state: Completed, steps: []step{{Completed, "/approve by @" + actor}}, labels: lbl(Completed),
			check: func(t *testing.T, d Decision) {
				if !d.Task.IsApprover(u(actor)) {
					t.Errorf("approvers %v, want %s among them", d.Task.Approvers, actor)
				}
			}}
	case CmdVerify:
		w := want{state: Verified, steps: []step{{Verified, "/verify"}}, labels: lbl(Verified),
			check: func(t *testing.T, d Decision) {
				if d.Task.Verifier != u(actor) || !d.Task.VerifiedAt.Equal(fxAt(100)) || d.Task.Unverified || d.Task.Forced {
					t.Errorf("verifier %q at %v (unverified %v, forced %v), want %s at %v", d.Task.Verifier, d.Task.VerifiedAt,
						d.Task.Unverified, d.Task.Forced, actor, fxAt(100))
				}
			}}
		if c.Args != "" {
			w.steps[0].why = "/verify: " + c.Args
		}
		return w
	case CmdReject:
		return want{state: InProgress, steps: []step{{InProgress, "/reject: " + c.Args}}, labels: lbl(InProgress),
			notices: []NoticeKind{NoticeRejected},
			check: func(t *testing.T, d Decision) {
				nt := d.Task
				if !nt.Failing || nt.Attempt != 2 || len(nt.Approvals) != 0 || len(nt.Rejections) != 1 {
					t.Errorf("after /reject: failing %v, attempt %d, approvals %v, rejections %v; want failing, attempt 2, no approvals, 1 rejection",
						nt.Failing, nt.Attempt, nt.Approvals, nt.Rejections)
				} else if r := nt.Rejections[0]; r.By != u(actor) || r.Reason != c.Args || r.Attempt != 1 || !r.At.Equal(fxAt(100)) {
					t.Errorf("rejection %+v, want by %s for %q on attempt 1", r, actor, c.Args)
				}
				n := noticeOf(d, NoticeRejected)
				if n.Reason != c.Args || !slices.Contains(n.Mentions, "alice") || n.Actor != actor {
					t.Errorf("rejection notice %+v: want reason %q by %s mentioning alice", n, c.Args, actor)
				}
			}}
	case CmdStatus:
		return want{state: s, notices: []NoticeKind{NoticeStatus}, check: func(t *testing.T, d Decision) {
			if n := noticeOf(d, NoticeStatus); n.State != s {
				t.Errorf("status notice says %q, want %q", n.State, s)
			}
		}}
	case CmdReopen:
		return want{state: InProgress, steps: []step{{InProgress, c.Args}}, labels: lbl(InProgress),
			notices: []NoticeKind{NoticeRegression},
			check: func(t *testing.T, d Decision) {
				nt := d.Task
				if !nt.Verifier.IsZero() || !nt.VerifiedAt.IsZero() || len(nt.Approvals) != 0 || nt.Attempt != 2 {
					t.Errorf("after /reopen: verifier %q at %v, approvals %v, attempt %d; want the verification void and attempt 2",
						nt.Verifier, nt.VerifiedAt, nt.Approvals, nt.Attempt)
				}
				if !SameUsers(nt.Assignees, us("alice")) {
					t.Errorf("assignees %v, want alice kept", nt.Assignees)
				}
				if n := noticeOf(d, NoticeRegression); n.Reason != c.Args {
					t.Errorf("regression notice reason %q, want %q", n.Reason, c.Args)
				}
			}}
	case CmdSkipVerify:
		return want{state: Verified, steps: []step{{Verified, "skip-verify"}}, labels: lbl(Verified, LabelUnverified),
			check: func(t *testing.T, d Decision) {
				h := d.Task.History[len(d.Task.History)-1]
				if !d.Task.Unverified || d.Task.Forced || !strings.Contains(h.Why, c.Args) || !strings.Contains(h.Why, actor) {
					t.Errorf("after /skip-verify: unverified %v, forced %v, history %q; want unverified, logged with who and why",
						d.Task.Unverified, d.Task.Forced, h.Why)
				}
			}}
	case CmdForceComplete:
		_, reason := forceArgs(c.Args)
		w := want{state: Verified, labels: lbl(Verified, LabelForced),
			check: func(t *testing.T, d Decision) {
				if !d.Task.Forced || d.Task.Unverified {
					t.Errorf("after /force-complete: forced %v, unverified %v; want forced", d.Task.Forced, d.Task.Unverified)
				}
				for _, h := range d.Task.History[len(fxTask(s, withPR).History):] {
					if !strings.Contains(h.Why, "force-complete") || !strings.Contains(h.Why, reason) {
						t.Errorf("history %q does not log the override and its reason %q", h.Why, reason)
					}
				}
			}}
		for _, to := range States[slices.Index(States, s)+1:] {
			w.steps = append(w.steps, step{to, "force-complete"})
		}
		return w
	}
	panic("no acceptance for " + c.Line)
}

// fxCommands are the command lines of the matrix: each command of §6 for
// tasks, with and without its arguments.
var fxCommands = []string{
	"/start", "/start now",
	"/submit", "/submit login form with validation",
	"/approve", "/approve lgtm",
	"/verify", "/verify ran it locally",
	"/reject", "/reject email validation accepts abc",
	"/status",
	"/reopen", "/reopen login broke again",
	"/skip-verify", "/skip-verify docs only",
	"/force-complete", "/force-complete OVERRIDE", "/force-complete OVERRIDE release day", "/force-complete release day",
	"/verify-goal", "/reject-goal integration broken",
}

func TestDecideTaskCommandMatrix(t *testing.T) {
	actors := []string{"alice", "dave", "carol", "erin", "mallory", "lead"}
	var accepted, refused int
	for _, withPR := range []bool{false, true} {
		for _, s := range States {
			if withPR && s.Before(InProgress) {
				continue // a PR linked to a pending or assigned task moves it on
			}
			for _, line := range fxCommands {
				for _, actor := range actors {
					r := fxRolesOf(withPR, s, actor)
					variant := "no-PR"
					if withPR {
						variant = "PR"
					}
					name := fmt.Sprintf("%s/%s/%s/%s(%s)", variant, s, line, r, actor)
					cmds := ParseCommands(line)
					if len(cmds) != 1 {
						t.Fatalf("%q parses as %v", line, cmds)
					}
					c := cmds[0]
					reasons := fxRefusals(withPR, s, c, r)
					if len(reasons) == 0 {
						accepted++
					} else {
						refused++
					}
					t.Run(name, func(t *testing.T) {
						task := fxTask(s, withPR)
						ev := fxComment(actor, line)
						d := decide(t, task, ev, fxFacts(actor))
						if d.Task == nil || !slices.Contains(d.Task.Comments, ev.CommentID) {
							t.Fatalf("the comment was not remembered: %+v", d.Task)
						}
						if len(reasons) > 0 {
							checkRefused(t, task, ev, d, c, reasons)
							return
						}
						checkDecision(t, task, ev, d, fxAccepted(withPR, s, c, actor))
					})
				}
			}
		}
	}
	t.Logf("%d accepted and %d refused commands", accepted, refused)
}

// checkRefused checks that d refuses c (and only that): one refusal notice on
// the task quoting the line, with a reason containing one of the phrases, and
// nothing else changed.
func checkRefused(t *testing.T, old *Task, ev Event, d Decision, c Command, phrases []string) {
	t.Helper()
	checkDecision(t, old, ev, d, want{state: old.State, notices: []NoticeKind{NoticeRefused}})
	n := noticeOf(d, NoticeRefused)
	if n == nil {
		return
	}
	if len(n.Refusals) != 1 || n.Refusals[0].Quote != c.Line {
		t.Errorf("refusals %+v, want one quoting %q", n.Refusals, c.Line)
		return
	}
	if n.Actor != ev.Actor.Login || n.State != old.State {
		t.Errorf("refusal by %q in state %q, want %q, %q", n.Actor, n.State, ev.Actor, old.State)
	}
	if r := n.Refusals[0].Reason; !slices.ContainsFunc(phrases, func(p string) bool { return strings.Contains(r, p) }) {
		t.Errorf("refusal reason %q names none of %q", r, phrases)
	}
	if e := effectsOf(d, EffectNotice); len(e) == 1 && e[0].Number != fxIssue {
		t.Errorf("refusal posted on #%d, want the task #%d", e[0].Number, fxIssue)
	}
	// Nothing but the remembered comment changed.
	nt := d.Task.Clone()
	nt.Comments = old.Comments
	if !reflect.DeepEqual(nt, old) {
		t.Errorf("a refused command changed the record:\nold %+v\nnew %+v", old, d.Task)
	}
}

// Commands: the details the matrix does not show.
func TestDecideTaskCommands(t *testing.T) {
	verifiedNoAssignee := func() *Task {
		t := fxTask(Verified, true)
		t.Assignees = nil
		return t
	}
	closedVerified := func() *Task {
		t := fxTask(Verified, false)
		t.Closed = true
		return t
	}
	afterRejection := func() *Task {
		t := fxTask(Completed, false)
		t.Rejections = []Rejection{{By: u("erin"), At: fxAt(20), Reason: "first", Attempt: 1}}
		t.Attempt, t.FailedAttempts = 2, 1
		return t
	}
	tests := []struct {
		name  string
		task  *Task
		ev    Event
		facts Facts
		want  want
	}{
		{
			name: "a command on the linked PR is refused there",
			task: fxTask(Completed, true),
			ev:   func() Event { e := fxComment("dave", "/verify"); e.Where = fxPR; return e }(),
			want: want{state: Completed, notices: []NoticeKind{NoticeRefused}, check: func(t *testing.T, d Decision) {
				if e := effectsOf(d, EffectNotice); e[0].Number != fxPR {
					t.Errorf("refusal posted on #%d, want the PR #%d", e[0].Number, fxPR)
				}
			}},
		},
		{
			name: "a command on the linked PR applies to the task",
			task: fxTask(Completed, true),
			ev:   func() Event { e := fxComment("erin", "/verify"); e.Where = fxPR; return e }(),
			want: want{state: Verified, steps: []step{{Verified, "/verify"}}, labels: lbl(Verified)},
		},
		{
			name: "the approver's /approve then /verify in one comment: approved, verification refused",
			task: fxTask(Review, false),
			ev:   fxComment("carol", "/approve\n/verify"),
			want: want{state: Completed, steps: []step{{Completed, "/approve"}}, labels: lbl(Completed),
				notices: []NoticeKind{NoticeRefused}},
		},
		{
			name: "/reject whose reason is only spaces is refused",
			task: fxTask(Completed, false),
			ev:   fxComment("erin", "/reject    "),
			want: want{state: Completed, notices: []NoticeKind{NoticeRefused}},
		},
		{
			name: "/reopen with no assignee re-assigns its former assignees",
			task: verifiedNoAssignee(),
			ev:   fxComment("lead", "/reopen broke in prod"),
			want: want{state: InProgress, steps: []step{{InProgress, "broke in prod"}}, labels: lbl(InProgress),
				notices: []NoticeKind{NoticeRegression}, assign: []string{"alice"},
				check: func(t *testing.T, d Decision) {
					if !SameUsers(d.Task.Assignees, us("alice")) {
						t.Errorf("assignees %v, want [alice]", d.Task.Assignees)
					}
					if n := noticeOf(d, NoticeRegression); !slices.Equal(n.Mentions, []string{"alice"}) {
						t.Errorf("regression notice mentions %v, want [alice]", n.Mentions)
					}
				}},
		},
		{
			name: "/reopen of a closed verified task reopens the issue",
			task: closedVerified(),
			ev:   fxComment("lead", "/reopen broke in prod"),
			want: want{state: InProgress, steps: []step{{InProgress, "broke in prod"}}, labels: lbl(InProgress),
				notices: []NoticeKind{NoticeRegression}, reopen: true,
				check: func(t *testing.T, d Decision) {
					if d.Task.Closed {
						t.Error("the task is still closed")
					}
				}},
		},
		{
			name: "/reopen of a skip-verified task voids the unverified flag",
			task: func() *Task { t := fxTask(Verified, false); t.Verifier, t.Unverified = User{}, true; return t }(),
			ev:   fxComment("lead", "/reopen broke in prod"),
			want: want{state: InProgress, steps: []step{{InProgress, "broke in prod"}}, labels: lbl(InProgress),
				notices: []NoticeKind{NoticeRegression}},
		},
		{
			name: "/force-complete from pending walks every state",
			task: fxTask(Pending, false),
			ev:   fxComment("lead", "/force-complete OVERRIDE demo tomorrow"),
			want: want{state: Verified, labels: lbl(Verified, LabelForced), steps: []step{
				{Assigned, "demo tomorrow"}, {InProgress, "demo tomorrow"}, {Review, "demo tomorrow"},
				{Completed, "demo tomorrow"}, {Verified, "demo tomorrow"}}},
		},
		{
			name: "/force-complete with extra spaces before the reason",
			task: fxTask(Completed, false),
			ev:   fxComment("lead", "/force-complete   OVERRIDE    demo"),
			want: want{state: Verified, labels: lbl(Verified, LabelForced), steps: []step{{Verified, "demo"}}},
		},
		{
			name: "/force-complete of an escalated, failing task clears both",
			task: func() *Task {
				t := fxTask(InProgress, false)
				t.Escalated, t.Failing = true, true
				return t
			}(),
			ev: fxComment("lead", "/force-complete OVERRIDE triaged"),
			want: want{state: Verified, labels: lbl(Verified, LabelForced), steps: []step{
				{Review, "triaged"}, {Completed, "triaged"}, {Verified, "triaged"}},
				check: func(t *testing.T, d Decision) {
					if d.Task.Failing || d.Task.Escalated {
						t.Errorf("failing %v, escalated %v after the override", d.Task.Failing, d.Task.Escalated)
					}
				}},
		},
		{
			name: "/submit clears a rejection's failure",
			task: func() *Task { t := fxTask(InProgress, false); t.Failing = true; return t }(),
			ev:   fxComment("alice", "/submit fixed the email check"),
			want: want{state: Review, steps: []step{{Review, "fixed the email check"}}, labels: lbl(Review),
				check: func(t *testing.T, d Decision) {
					if d.Task.Failing {
						t.Error("still failing after a new submission")
					}
				}},
		},
		{
			name: "/approve by an assignee added after the work started is refused",
			task: func() *Task {
				t := fxTask(Review, false)
				t.Assignees = append(t.Assignees, u("erin"))
				t.Builders = append(t.Builders, MemberOf(u("erin"), "assignee"))
				return t
			}(),
			ev:   fxComment("erin", "/approve"),
			want: want{state: Review, notices: []NoticeKind{NoticeRefused}},
		},
		{
			name: "/approve needs write permission, even when verifiers: is configured",
			task: fxTask(Review, false),
			ev:   fxComment("mallory", "/approve"),
			facts: func() Facts {
				f := fxFacts("mallory")
				f.Config.Verifiers = []string{"bob"}
				return f
			}(),
			want: want{state: Review, notices: []NoticeKind{NoticeRefused}, check: func(t *testing.T, d Decision) {
				if r := refusalReason(d); !strings.Contains(r, "write permission") {
					t.Errorf("refusal %q does not say who may approve (write permission)", r)
				}
			}},
		},
		{
			name: "/skip-verify refusal points non-leads to the leads: of the config",
			task: fxTask(Completed, false),
			ev:   fxComment("erin", "/skip-verify trust me"),
			facts: func() Facts {
				f := fxFacts("erin")
				f.Config.Leads = []string{"lead"}
				return f
			}(),
			want: want{state: Completed, notices: []NoticeKind{NoticeRefused}, check: func(t *testing.T, d Decision) {
				if r := refusalReason(d); !strings.Contains(r, "leads:") {
					t.Errorf("refusal %q does not say who may (leads:)", r)
				}
			}},
		},
		{
			name: "/verify refused in review says what is missing",
			task: fxTask(Review, false),
			ev:   fxComment("erin", "/verify"),
			want: want{state: Review, notices: []NoticeKind{NoticeRefused}, check: func(t *testing.T, d Decision) {
				if r := refusalReason(d); !strings.Contains(r, "approval") {
					t.Errorf("refusal %q does not say an approval is missing", r)
				}
			}},
		},
		{
			name: "/verify clears an escalation",
			task: func() *Task { t := afterRejection(); t.Escalated = true; return t }(),
			ev:   fxComment("erin", "/verify"),
			want: want{state: Verified, steps: []step{{Verified, "/verify"}}, labels: lbl(Verified)},
		},
		{
			name: "a repeated comment id changes nothing",
			task: func() *Task { t := fxTask(Completed, false); t.Comments = []int64{900}; return t }(),
			ev:   fxComment("erin", "/verify"),
			want: want{nothing: true},
		},
		{
			name: "a repeated comment id with a refused command changes nothing",
			task: func() *Task { t := fxTask(Completed, false); t.Comments = []int64{900}; return t }(),
			ev:   fxComment("mallory", "/verify"),
			want: want{nothing: true},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.facts
			if f.Config.Tasks.Track == "" {
				f = fxFacts(tc.ev.Actor.Login)
			}
			d := decide(t, tc.task, tc.ev, f)
			checkDecision(t, tc.task, tc.ev, d, tc.want)
		})
	}
}

// ---------------------------------------------------------------------------
// Events (docs/design.md, The task lifecycle table and enforcement).

type eventCase struct {
	name  string
	task  *Task
	ev    Event
	facts func(f *Facts)
	want  want
}

func runEventCases(t *testing.T, tests []eventCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := fxFacts(tc.ev.Actor.Login)
			if tc.facts != nil {
				tc.facts(&f)
			}
			d := decide(t, tc.task, tc.ev, f)
			checkDecision(t, tc.task, tc.ev, d, tc.want)
		})
	}
}

func assigned(logins ...string) func(*Event) {
	return func(e *Event) { e.Issue.Assignees = us(logins...) }
}

func TestDecideTaskAssignees(t *testing.T) {
	var tests []eventCase
	for _, s := range States {
		switch s {
		case Pending:
			tests = append(tests,
				eventCase{name: "pending/assigned to alice", task: fxTask(s, false),
					ev: fxIssueEvent(IssueAssigned, "lead", assigned("alice")),
					want: want{state: Assigned, steps: []step{{Assigned, "assigned to @alice"}}, labels: lbl(Assigned),
						check: func(t *testing.T, d Decision) {
							if !SameUsers(d.Task.Assignees, us("alice")) || !isBuilderIn(d.Task, "alice") {
								t.Errorf("assignees %v, builders %v: want alice in both", d.Task.Assignees, d.Task.Builders)
							}
						}}},
				eventCase{name: "pending/assigned to two", task: fxTask(s, false),
					ev:   fxIssueEvent(IssueAssigned, "lead", assigned("alice", "dave")),
					want: want{state: Assigned, steps: []step{{Assigned, "@alice, @dave"}}, labels: lbl(Assigned)}},
				eventCase{name: "pending/no assignee still", task: fxTask(s, false),
					ev: fxIssueEvent(IssueAssigned, "lead", assigned()), want: want{nothing: true}},
			)
		case Assigned:
			tests = append(tests,
				eventCase{name: "assigned/last assignee removed", task: fxTask(s, false),
					ev: fxIssueEvent(IssueAssigned, "lead", assigned()),
					want: want{state: Pending, steps: []step{{Pending, "unassigned"}}, labels: lbl(Pending),
						check: func(t *testing.T, d Decision) {
							if len(d.Task.Assignees) != 0 || !isBuilderIn(d.Task, "alice") {
								t.Errorf("assignees %v, builders %v: want none, and alice still a builder", d.Task.Assignees, d.Task.Builders)
							}
						}}},
				eventCase{name: "assigned/second assignee", task: fxTask(s, false),
					ev: fxIssueEvent(IssueAssigned, "lead", assigned("alice", "bob")),
					want: want{state: Assigned, check: func(t *testing.T, d Decision) {
						if !isBuilderIn(d.Task, "bob") {
							t.Errorf("builders %v, want bob", d.Task.Builders)
						}
					}}},
				eventCase{name: "assigned/same assignees again", task: fxTask(s, false),
					ev: fxIssueEvent(IssueAssigned, "lead", assigned("alice")), want: want{nothing: true}},
			)
		default:
			tests = append(tests,
				eventCase{name: string(s) + "/all assignees removed: no move", task: fxTask(s, false),
					ev: fxIssueEvent(IssueAssigned, "lead", assigned()),
					want: want{state: s, check: func(t *testing.T, d Decision) {
						if len(d.Task.Assignees) != 0 || !isBuilderIn(d.Task, "alice") {
							t.Errorf("assignees %v, builders %v", d.Task.Assignees, d.Task.Builders)
						}
					}}},
				eventCase{name: string(s) + "/erin assigned becomes a builder", task: fxTask(s, false),
					ev: fxIssueEvent(IssueAssigned, "lead", assigned("alice", "erin")),
					want: want{state: s, check: func(t *testing.T, d Decision) {
						if !isBuilderIn(d.Task, "erin") {
							t.Errorf("builders %v, want erin", d.Task.Builders)
						}
					}}},
			)
		}
	}
	// A bot assignee's pilot builds with it: agents: first, else who assigned it.
	tests = append(tests,
		eventCase{name: "pending/bot assigned: its configured pilot is a builder", task: fxTask(Pending, false),
			ev:    fxIssueEvent(IssueAssigned, "lead", assigned("copilot[bot]")),
			facts: func(f *Facts) { f.Config.Agents = map[string]string{"Copilot[bot]": "erin"} },
			want: want{state: Assigned, steps: []step{{Assigned, "copilot[bot]"}}, labels: lbl(Assigned),
				check: func(t *testing.T, d Decision) {
					if !isBuilderIn(d.Task, "copilot[bot]") || !isBuilderIn(d.Task, "erin") || isBuilderIn(d.Task, "lead") {
						t.Errorf("builders %v, want copilot[bot] and its pilot erin only", d.Task.Builders)
					}
				}}},
		eventCase{name: "pending/bot assigned: who assigned it is its pilot", task: fxTask(Pending, false),
			ev: fxIssueEvent(IssueAssigned, "bob", assigned("copilot[bot]")),
			want: want{state: Assigned, steps: []step{{Assigned, "copilot[bot]"}}, labels: lbl(Assigned),
				check: func(t *testing.T, d Decision) {
					if !isBuilderIn(d.Task, "bob") {
						t.Errorf("builders %v, want bob (who assigned the bot)", d.Task.Builders)
					}
				}}},
	)
	runEventCases(t, tests)
}

func TestDecideTaskPullRequests(t *testing.T) {
	inProgressReadyPR := func(failing bool) *Task {
		t := fxTask(InProgress, true)
		t.PRs[0].Draft = false // ready, sent back by changes requested or a rejection
		t.Failing = failing
		return t
	}
	verifiedUnverified := func() *Task {
		t := fxTask(Verified, true)
		t.Verifier, t.Unverified = User{}, true
		return t
	}
	assignDave := func(t *testing.T, d Decision) {
		if !SameUsers(d.Task.Assignees, us("dave")) || !isBuilderIn(d.Task, "dave") {
			t.Errorf("assignees %v, builders %v: want dave (the PR's author) in both", d.Task.Assignees, d.Task.Builders)
		}
	}
	staleVerification := func(t *testing.T, d Decision) {
		nt := d.Task
		if !nt.Verifier.IsZero() || !nt.VerifiedAt.IsZero() || nt.Unverified || nt.Forced {
			t.Errorf("verification not voided: verifier %q at %v, unverified %v, forced %v", nt.Verifier, nt.VerifiedAt, nt.Unverified, nt.Forced)
		}
		if p := nt.pr(fxPR); p == nil || p.Head != "h2" {
			t.Errorf("PR record %+v, want head h2", p)
		}
	}
	withCommitters := func(e Event) Event {
		e.PR.Committers = []Member{MemberOf(u("dave"), "author of a commit"), MemberOf(u("erin"), "co-author on #12")}
		return e
	}
	tests := []eventCase{
		{name: "pending/draft PR by dave: each skipped state recorded, dave assigned", task: fxTask(Pending, false),
			ev: fxPREvent(PRLinked, fxHead, true),
			want: want{state: InProgress, steps: []step{{Assigned, "#12 opened"}, {InProgress, "#12 opened"}},
				labels: lbl(InProgress), assign: []string{"dave"}, check: assignDave}},
		{name: "pending/ready PR by dave: each skipped state recorded, dave assigned", task: fxTask(Pending, false),
			ev: fxPREvent(PRLinked, fxHead, false),
			want: want{state: Review, steps: []step{{Assigned, "#12"}, {InProgress, "#12"}, {Review, "#12"}},
				labels: lbl(Review), assign: []string{"dave"}, check: assignDave}},
		{name: "assigned/draft PR: in progress, alice stays the assignee", task: fxTask(Assigned, false),
			ev: fxPREvent(PRLinked, fxHead, true),
			want: want{state: InProgress, steps: []step{{InProgress, "#12 opened"}}, labels: lbl(InProgress),
				check: func(t *testing.T, d Decision) {
					if !SameUsers(d.Task.Assignees, us("alice")) || !isBuilderIn(d.Task, "dave") {
						t.Errorf("assignees %v, builders %v", d.Task.Assignees, d.Task.Builders)
					}
				}}},
		{name: "assigned/ready PR: in progress then review", task: fxTask(Assigned, false),
			ev:   fxPREvent(PRLinked, fxHead, false),
			want: want{state: Review, steps: []step{{InProgress, "#12"}, {Review, "#12"}}, labels: lbl(Review)}},
		{name: "assigned/PR committers and co-authors are builders", task: fxTask(Assigned, false),
			ev: withCommitters(fxPREvent(PRLinked, fxHead, true)),
			want: want{state: InProgress, steps: []step{{InProgress, "#12"}}, labels: lbl(InProgress),
				check: func(t *testing.T, d Decision) {
					if !isBuilderIn(d.Task, "erin") {
						t.Errorf("builders %v, want the co-author erin", d.Task.Builders)
					}
				}}},
		{name: "pending/bot's PR: the opener pilots it", task: fxTask(Pending, false),
			ev: func() Event {
				e := fxPREvent(PRLinked, fxHead, true)
				e.Actor, e.PR.Author = u("copilot[bot]"), u("copilot[bot]")
				return e
			}(),
			want: want{state: InProgress, steps: []step{{Assigned, "#12"}, {InProgress, "#12"}}, labels: lbl(InProgress),
				assign: []string{"copilot[bot]"},
				check: func(t *testing.T, d Decision) {
					if !isBuilderIn(d.Task, "copilot[bot]") || !isBuilderIn(d.Task, "lead") {
						t.Errorf("builders %v, want copilot[bot] and the opener (lead) as its pilot", d.Task.Builders)
					}
				}}},
		{name: "in-progress/PR marked ready", task: fxTask(InProgress, true),
			ev:   fxPREvent(PRReady, fxHead, false),
			want: want{state: Review, steps: []step{{Review, "#12 ready for review"}}, labels: lbl(Review)}},
		{name: "in-progress/draft PR pushed: no move", task: fxTask(InProgress, true),
			ev: fxPREvent(PRPushed, "h2", true), want: want{state: InProgress}},
		{name: "in-progress/ready PR pushed after a rejection: review, failure cleared", task: inProgressReadyPR(true),
			ev: fxPREvent(PRPushed, "h2", false),
			want: want{state: Review, steps: []step{{Review, "new commits on #12"}}, labels: lbl(Review),
				check: func(t *testing.T, d Decision) {
					if d.Task.Failing {
						t.Error("still failing after a new attempt")
					}
				}}},
		{name: "in-progress/ready PR redelivered push (same head): nothing", task: inProgressReadyPR(true),
			ev: fxPREvent(PRPushed, fxHead, false), want: want{nothing: true}},
		{name: "in-progress/converted to draft: no move", task: inProgressReadyPR(false),
			ev: fxPREvent(PRDraft, fxHead, true), want: want{state: InProgress}},
		{name: "review/pushed: stays in review", task: fxTask(Review, true),
			ev: fxPREvent(PRPushed, "h2", false), want: want{state: Review}},
		{name: "completed/pushed: back to review, approval stale", task: fxTask(Completed, true),
			ev:   fxPREvent(PRPushed, "h2", false),
			want: want{state: Review, steps: []step{{Review, "stale"}}, labels: lbl(Review)}},
		{name: "completed/redelivered push (same head): nothing", task: fxTask(Completed, true),
			ev: fxPREvent(PRPushed, fxHead, false), want: want{nothing: true}},
		{name: "verified/pushed: back to review, verifier cleared", task: fxTask(Verified, true),
			ev:   fxPREvent(PRPushed, "h2", false),
			want: want{state: Review, steps: []step{{Review, "stale"}}, labels: lbl(Review), check: staleVerification}},
		{name: "verified (skip-verify)/pushed: unverified label goes", task: verifiedUnverified(),
			ev:   fxPREvent(PRPushed, "h2", false),
			want: want{state: Review, steps: []step{{Review, "stale"}}, labels: lbl(Review), check: staleVerification}},
		{name: "completed by /approve/a PR linked: back to review, /approve does not cover it", task: fxTask(Completed, false),
			ev: func() Event {
				e := fxPREvent(PRLinked, "k1", false)
				e.PR.Number, e.PR.Author = 13, u("erin")
				return e
			}(),
			want: want{state: Review, steps: []step{{Review, "#13 opened"}}, labels: lbl(Review),
				check: func(t *testing.T, d Decision) {
					if !isBuilderIn(d.Task, "erin") || !slices.Equal(d.Task.OpenPRs(), []int{13}) {
						t.Errorf("builders %v, open PRs %v", d.Task.Builders, d.Task.OpenPRs())
					}
				}}},
		{name: "review/PR unlinked: noted, no move", task: fxTask(Review, true),
			ev: fxPREvent(PRUnlinked, fxHead, false),
			want: want{state: Review, steps: []step{{Review, "no longer closes"}}, check: func(t *testing.T, d Decision) {
				if len(d.Task.OpenPRs()) != 0 {
					t.Errorf("open PRs %v, want none", d.Task.OpenPRs())
				}
			}}},
		{name: "review/merged unverified: no move (the close is undone separately)", task: fxTask(Review, true),
			ev: func() Event {
				e := fxPREvent(PRMerged, fxHead, false)
				e.PR.Open, e.PR.Merged = false, true
				return e
			}(),
			want: want{state: Review, steps: []step{{Review, "#12 merged with no approval of its head"}}}},
	}
	runEventCases(t, tests)
}

func TestDecideTaskReviews(t *testing.T) {
	approvedOnDraft := func() *Task {
		t := fxTask(InProgress, true)
		t.Approvals = []Approval{{By: u("carol"), Head: fxHead, PR: fxPR, At: fxAt(20)}}
		return t
	}
	tests := []eventCase{
		{name: "review/approved by the PR author (builder): not counted", task: fxTask(Review, true),
			ev: fxReview("dave", "approved", fxHead, ""),
			want: want{state: Review, steps: []step{{Review, "not counted"}}, notices: []NoticeKind{NoticeIgnored},
				check: func(t *testing.T, d Decision) {
					if len(d.Task.Approvals) != 0 {
						t.Errorf("approvals %v, want none", d.Task.Approvals)
					}
					if e := effectsOf(d, EffectNotice); e[0].Number != fxPR || !strings.Contains(e[0].Notice.Reason, "builder") {
						t.Errorf("notice %+v on #%d, want on the PR saying a builder's approval does not count", e[0].Notice, e[0].Number)
					}
				}}},
		{name: "review/approved by the assignee (builder): not counted", task: fxTask(Review, true),
			ev:   fxReview("alice", "approved", fxHead, ""),
			want: want{state: Review, steps: []step{{Review, "not counted"}}, notices: []NoticeKind{NoticeIgnored}}},
		{name: "review/approved by a co-author (builder): not counted", task: func() *Task {
			t := fxTask(Review, true)
			t.Builders = append(t.Builders, MemberOf(u("erin"), "co-author on #12"))
			return t
		}(),
			ev:   fxReview("erin", "approved", fxHead, ""),
			want: want{state: Review, steps: []step{{Review, "not counted"}}, notices: []NoticeKind{NoticeIgnored}}},
		{name: "review/approved by a stranger: not counted", task: fxTask(Review, true),
			ev: fxReview("mallory", "approved", fxHead, ""),
			want: want{state: Review, steps: []step{{Review, "not counted"}}, notices: []NoticeKind{NoticeIgnored},
				check: func(t *testing.T, d Decision) {
					if r := noticeOf(d, NoticeIgnored).Reason; !strings.Contains(r, "write permission") {
						t.Errorf("notice reason %q does not say who may approve", r)
					}
				}}},
		{name: "review/approved by carol on the current head: completed", task: fxTask(Review, true),
			ev: fxReview("carol", "approved", fxHead, ""),
			want: want{state: Completed, steps: []step{{Completed, "approved by @carol on #12"}}, labels: lbl(Completed),
				check: func(t *testing.T, d Decision) {
					if !d.Task.IsApprover(u("carol")) {
						t.Errorf("approvers %v, want carol", d.Task.Approvers)
					}
				}}},
		{name: "review/approved by the lead: completed", task: fxTask(Review, true),
			ev:   fxReview("lead", "approved", fxHead, ""),
			want: want{state: Completed, steps: []step{{Completed, "approved by @lead"}}, labels: lbl(Completed)}},
		{name: "review/approved by carol on a stale head: ignored", task: fxTask(Review, true),
			ev: fxReview("carol", "approved", "h0", ""), want: want{nothing: true}},
		{name: "review/approval of a PR that does not close the task: ignored", task: fxTask(Review, true),
			ev: func() Event {
				e := fxReview("carol", "approved", "x1", "")
				e.PR.Number, e.PR.Head = 99, "x1"
				return e
			}(),
			want: want{nothing: true}},
		{name: "in-progress/approval of a draft: counted, no move", task: fxTask(InProgress, true),
			ev: fxReview("carol", "approved", fxHead, ""), want: want{state: InProgress}},
		{name: "in-progress/approved draft marked ready: review then completed", task: approvedOnDraft(),
			ev:   fxPREvent(PRReady, fxHead, false),
			want: want{state: Completed, steps: []step{{Review, "ready"}, {Completed, "approved by @carol"}}, labels: lbl(Completed)}},
		{name: "in-progress/approved draft pushed then ready: approval stale", task: approvedOnDraft(),
			ev:   fxPREvent(PRReady, "h2", false),
			want: want{state: Review, steps: []step{{Review, "ready"}}, labels: lbl(Review)}},
		{name: "completed/second approval: no move", task: fxTask(Completed, true),
			ev: fxReview("erin", "approved", fxHead, ""), want: want{state: Completed}},
		{name: "review/changes requested by carol: in progress with the reason", task: fxTask(Review, true),
			ev: fxReview("carol", "changes_requested", fxHead, "validate the email"),
			want: want{state: InProgress, steps: []step{{InProgress, "validate the email"}}, labels: lbl(InProgress),
				check: func(t *testing.T, d Decision) {
					if h := d.Task.History[len(d.Task.History)-1]; !strings.Contains(h.Why, "changes requested by @carol") {
						t.Errorf("history %q does not say who requested changes", h.Why)
					}
				}}},
		{name: "review/changes requested by a builder: ignored", task: fxTask(Review, true),
			ev: fxReview("dave", "changes_requested", fxHead, "hmm"), want: want{nothing: true}},
		{name: "review/a comment review: nothing", task: fxTask(Review, true),
			ev: fxReview("carol", "commented", fxHead, "nice"), want: want{nothing: true}},
		{name: "review/dismissed with no approval: nothing", task: fxTask(Review, true),
			ev: fxReview("carol", "dismissed", fxHead, ""), want: want{nothing: true}},
		{name: "in-progress/dismissed approval of a draft: forgotten", task: approvedOnDraft(),
			ev: fxReview("carol", "dismissed", fxHead, ""),
			want: want{state: InProgress, check: func(t *testing.T, d Decision) {
				if len(d.Task.Approvals) != 0 {
					t.Errorf("approvals %v, want none", d.Task.Approvals)
				}
			}}},
		{name: "in-progress/approval then changes requested by the same reviewer: approval replaced", task: approvedOnDraft(),
			ev: fxReview("carol", "changes_requested", fxHead, "wait"),
			want: want{state: InProgress, steps: []step{{InProgress, "changes requested by @carol on #12: wait"}}, check: func(t *testing.T, d Decision) {
				if len(d.Task.Approvals) != 0 {
					t.Errorf("approvals %v, want none", d.Task.Approvals)
				}
			}}},
	}
	runEventCases(t, tests)
}

func TestDecideTaskClose(t *testing.T) {
	closed := func(reason string) func(*Event) {
		return func(e *Event) { e.Reason = reason; e.Issue.Closed = true }
	}
	var tests []eventCase
	for _, s := range States[:5] { // every state but verified
		tests = append(tests, eventCase{
			name: string(s) + "/closed unverified: reopened",
			task: fxTask(s, false),
			ev:   fxIssueEvent(IssueClosed, "erin", closed("completed")),
			want: want{state: s, steps: []step{{s, "reopened"}}, reopen: true, notices: []NoticeKind{NoticeReopened},
				check: func(t *testing.T, d Decision) {
					if d.Task.Closed {
						t.Error("the record says closed")
					}
					if n := noticeOf(d, NoticeReopened); n.State != s {
						t.Errorf("notice state %q, want %q", n.State, s)
					}
				}},
		})
	}
	tests = append(tests,
		eventCase{name: "verified/closed: stands", task: fxTask(Verified, false),
			ev: fxIssueEvent(IssueClosed, "erin", closed("completed")),
			want: want{state: Verified, check: func(t *testing.T, d Decision) {
				if !d.Task.Closed {
					t.Error("the record does not say closed")
				}
			}}},
		eventCase{name: "review/closed by merging its PR: reopened", task: fxTask(Review, true),
			ev:   fxIssueEvent(IssueClosed, "dave", closed("completed")),
			want: want{state: Review, steps: []step{{Review, "reopened"}}, reopen: true, notices: []NoticeKind{NoticeReopened}}},
		eventCase{name: "completed/closed by a lead as completed: reopened", task: fxTask(Completed, false),
			ev:   fxIssueEvent(IssueClosed, "lead", closed("completed")),
			want: want{state: Completed, steps: []step{{Completed, "reopened"}}, reopen: true, notices: []NoticeKind{NoticeReopened}}},
		eventCase{name: "review/closed not planned by a lead: stands", task: fxTask(Review, false),
			ev: fxIssueEvent(IssueClosed, "lead", closed("not_planned")),
			want: want{state: Review, steps: []step{{Review, "not planned"}}, check: func(t *testing.T, d Decision) {
				if !d.Task.Closed {
					t.Error("the record does not say closed")
				}
			}}},
		eventCase{name: "pending/closed not planned by a lead: stands", task: fxTask(Pending, false),
			ev:   fxIssueEvent(IssueClosed, "lead", closed("not_planned")),
			want: want{state: Pending, steps: []step{{Pending, "not planned"}}}},
		eventCase{name: "review/closed not planned by a non-lead: reopened", task: fxTask(Review, false),
			ev:   fxIssueEvent(IssueClosed, "erin", closed("not_planned")),
			want: want{state: Review, steps: []step{{Review, "reopened"}}, reopen: true, notices: []NoticeKind{NoticeReopened}}},
		eventCase{name: "verified, closed/closed again: nothing", task: func() *Task { t := fxTask(Verified, false); t.Closed = true; return t }(),
			ev: fxIssueEvent(IssueClosed, "erin", closed("completed")), want: want{nothing: true}},
		eventCase{name: "verified, closed/reopened: the record follows", task: func() *Task { t := fxTask(Verified, false); t.Closed = true; return t }(),
			ev: fxIssueEvent(IssueReopened, "erin", nil),
			want: want{state: Verified, check: func(t *testing.T, d Decision) {
				if d.Task.Closed {
					t.Error("the record still says closed")
				}
			}}},
	)
	runEventCases(t, tests)
}

func TestDecideTaskOwnedLabels(t *testing.T) {
	label := func(l string) func(*Event) { return func(e *Event) { e.Label = l } }
	unverified := func() *Task { t := fxTask(Verified, false); t.Verifier, t.Unverified = User{}, true; return t }
	escalated := func() *Task { t := fxTask(InProgress, false); t.Escalated = true; return t }
	tests := []eventCase{
		{name: "review/state:verified added by a human: reverted", task: fxTask(Review, false),
			ev:   fxIssueEvent(IssueLabeled, "mallory", label("state:verified")),
			want: want{state: Review, steps: []step{{Review, "state:verified added by @mallory"}}, labels: lbl(Review)}},
		{name: "review/state:review removed by a human: restored", task: fxTask(Review, false),
			ev:   fxIssueEvent(IssueUnlabeled, "erin", label("state:review")),
			want: want{state: Review, steps: []step{{Review, "state:review removed by @erin"}}, labels: lbl(Review)}},
		{name: "in-progress/escalated added: reverted", task: fxTask(InProgress, false),
			ev:   fxIssueEvent(IssueLabeled, "lead", label(LabelEscalated)),
			want: want{state: InProgress, steps: []step{{InProgress, "reverted"}}, labels: lbl(InProgress)}},
		{name: "in-progress, escalated/escalated removed: restored", task: escalated(),
			ev:   fxIssueEvent(IssueUnlabeled, "lead", label(LabelEscalated)),
			want: want{state: InProgress, steps: []step{{InProgress, "reverted"}}, labels: lbl(InProgress, LabelEscalated)}},
		{name: "verified, unverified/unverified removed: restored", task: unverified(),
			ev:   fxIssueEvent(IssueUnlabeled, "erin", label(LabelUnverified)),
			want: want{state: Verified, steps: []step{{Verified, "reverted"}}, labels: lbl(Verified, LabelUnverified)}},
		{name: "completed/forced added: reverted", task: fxTask(Completed, false),
			ev:   fxIssueEvent(IssueLabeled, "erin", label(LabelForced)),
			want: want{state: Completed, steps: []step{{Completed, "reverted"}}, labels: lbl(Completed)}},
		{name: "review/unknown state label added: removed", task: fxTask(Review, false),
			ev:   fxIssueEvent(IssueLabeled, "erin", label("state:done")),
			want: want{state: Review, steps: []step{{Review, "reverted"}}, labels: lbl(Review)}},
		{name: "review/its own state label added (countersign's write): nothing", task: fxTask(Review, false),
			ev: fxIssueEvent(IssueLabeled, "countersign[bot]", label("state:review")), want: want{nothing: true}},
		{name: "review/a stale state label removed: nothing", task: fxTask(Review, false),
			ev: fxIssueEvent(IssueUnlabeled, "countersign[bot]", label("state:in-progress")), want: want{nothing: true}},
		{name: "review/bug added: nothing", task: fxTask(Review, false),
			ev: fxIssueEvent(IssueLabeled, "erin", label("bug")), want: want{nothing: true}},
		{name: "review/bug removed: nothing", task: fxTask(Review, false),
			ev: fxIssueEvent(IssueUnlabeled, "erin", label("bug")), want: want{nothing: true}},
	}
	runEventCases(t, tests)
}

func TestDecideTaskEscalation(t *testing.T) {
	rejected := func(n int, escalated bool) *Task {
		t := fxTask(Completed, false)
		for i := range n {
			t.Rejections = append(t.Rejections, Rejection{By: u("erin"), At: fxAt(20 + i), Reason: fmt.Sprint("reason ", i+1), Attempt: i + 1})
		}
		t.Attempt, t.FailedAttempts, t.Escalated = n+1, n, escalated
		return t
	}
	rejections3 := func(f *Facts) { f.Config.Escalation.Rejections = 3 }
	escalatedNotice := func(t *testing.T, d Decision) {
		n := noticeOf(d, NoticeEscalated)
		if !slices.Equal(n.Mentions, fxLeads) {
			t.Errorf("escalation mentions %v, want the leads %v", n.Mentions, fxLeads)
		}
		if len(n.Rejections) == 0 || !n.Rejections[len(n.Rejections)-1].By.Is(u("bob")) {
			t.Errorf("escalation does not say who rejected and why: %+v", n.Rejections)
		}
		if e := effectsOf(d, EffectNotice); e[len(e)-1].Number != fxIssue {
			t.Errorf("escalation posted on #%d, want the task", e[len(e)-1].Number)
		}
		if !d.Task.Escalated {
			t.Error("the record is not escalated")
		}
	}
	tests := []eventCase{
		{name: "1st rejection: no escalation", task: rejected(0, false),
			ev:   fxComment("bob", "/reject nope"),
			want: want{state: InProgress, steps: []step{{InProgress, "/reject: nope"}}, labels: lbl(InProgress), notices: []NoticeKind{NoticeRejected}}},
		{name: "2nd rejection: escalated to the leads", task: rejected(1, false),
			ev: fxComment("bob", "/reject still no"),
			want: want{state: InProgress, steps: []step{{InProgress, "/reject: still no"}, {InProgress, "escalated"}},
				labels: lbl(InProgress, LabelEscalated), notices: []NoticeKind{NoticeRejected, NoticeEscalated}, check: escalatedNotice}},
		{name: "3rd rejection: not escalated again", task: rejected(2, true),
			ev:   fxComment("bob", "/reject again"),
			want: want{state: InProgress, steps: []step{{InProgress, "/reject: again"}}, labels: lbl(InProgress, LabelEscalated), notices: []NoticeKind{NoticeRejected}}},
		{name: "escalation.rejections 3: not at the 2nd", task: rejected(1, false), facts: rejections3,
			ev:   fxComment("bob", "/reject still no"),
			want: want{state: InProgress, steps: []step{{InProgress, "/reject"}}, labels: lbl(InProgress), notices: []NoticeKind{NoticeRejected}}},
		{name: "escalation.rejections 3: at the 3rd", task: rejected(2, false), facts: rejections3,
			ev: fxComment("bob", "/reject again"),
			want: want{state: InProgress, steps: []step{{InProgress, "/reject"}, {InProgress, "escalated"}},
				labels: lbl(InProgress, LabelEscalated), notices: []NoticeKind{NoticeRejected, NoticeEscalated}, check: escalatedNotice}},
		{name: "escalation.failed_attempts 1: at the 1st rejection", task: rejected(0, false),
			facts: func(f *Facts) { f.Config.Escalation.FailedAttempts = 1 },
			ev:    fxComment("bob", "/reject nope"),
			want: want{state: InProgress, steps: []step{{InProgress, "/reject"}, {InProgress, "escalated"}},
				labels: lbl(InProgress, LabelEscalated), notices: []NoticeKind{NoticeRejected, NoticeEscalated}, check: escalatedNotice}},
	}
	runEventCases(t, tests)
}

func TestDecideTaskSeparation(t *testing.T) {
	sep := func(s Separation, size int) func(*Facts) {
		return func(f *Facts) { f.Config.Separation, known(*f).TeamSize = s, size }
	}
	verified := want{state: Verified, steps: []step{{Verified, "/verify"}}, labels: lbl(Verified)}
	refused := func(phrase string) want {
		return want{state: Completed, notices: []NoticeKind{NoticeRefused}, check: func(t *testing.T, d Decision) {
			if r := refusalReason(d); !strings.Contains(r, phrase) {
				t.Errorf("refusal %q does not contain %q", r, phrase)
			}
		}}
	}
	withBuilder := func(m Member) *Task {
		t := fxTask(Completed, true)
		t.Builders = append(t.Builders, m)
		return t
	}
	tests := []eventCase{
		{name: "auto, team of 2: the approver may verify", task: fxTask(Completed, true),
			ev: fxComment("carol", "/verify"), facts: sep(SeparationAuto, 2), want: verified},
		{name: "auto, team of 3: the approver may not verify", task: fxTask(Completed, true),
			ev: fxComment("carol", "/verify"), facts: sep(SeparationAuto, 3), want: refused("approved this")},
		{name: "auto, team of 3: an outsider may verify", task: fxTask(Completed, true),
			ev: fxComment("erin", "/verify"), facts: sep(SeparationAuto, 3), want: verified},
		{name: "triple, team of 2: the approver may not verify", task: fxTask(Completed, true),
			ev: fxComment("carol", "/verify"), facts: sep(SeparationTriple, 2), want: refused("approved this")},
		{name: "triple, team of 1: the approver may not verify", task: fxTask(Completed, true),
			ev: fxComment("carol", "/verify"), facts: sep(SeparationTriple, 1), want: refused("approved this")},
		{name: "minimum, team of 5: the approver may verify", task: fxTask(Completed, true),
			ev: fxComment("carol", "/verify"), facts: sep(SeparationMinimum, 5), want: verified},
		{name: "auto, team of 1: the assignee never verifies", task: fxTask(Completed, true),
			ev: fxComment("alice", "/verify"), facts: sep(SeparationAuto, 1), want: refused("built")},
		{name: "minimum, team of 1: the assignee never verifies", task: fxTask(Completed, true),
			ev: fxComment("alice", "/verify"), facts: sep(SeparationMinimum, 1), want: refused("built")},
		{name: "minimum, team of 1: the PR author never verifies", task: fxTask(Completed, true),
			ev: fxComment("dave", "/verify"), facts: sep(SeparationMinimum, 1), want: refused("built")},
		{name: "minimum: a co-author never verifies", task: withBuilder(MemberOf(u("erin"), "co-author on #12")),
			ev: fxComment("erin", "/verify"), facts: sep(SeparationMinimum, 1), want: refused("built")},
		{name: "minimum: a bot builder's pilot never verifies", task: withBuilder(MemberOf(u("erin"), "pilot of copilot[bot]")),
			ev: fxComment("erin", "/verify"), facts: sep(SeparationMinimum, 1), want: refused("built")},
		{name: "a lead who built it never verifies", task: withBuilder(MemberOf(u("lead"), "assignee")),
			ev: fxComment("lead", "/verify"), facts: sep(SeparationMinimum, 1), want: refused("built")},
		{name: "a former assignee never verifies", task: func() *Task { t := fxTask(Completed, true); t.Assignees = nil; return t }(),
			ev: fxComment("alice", "/verify"), facts: sep(SeparationMinimum, 1), want: refused("built")},
		{name: "logins compare case-insensitively", task: fxTask(Completed, true),
			ev: fxComment("Alice", "/verify"), facts: sep(SeparationMinimum, 1), want: refused("built")},
		{name: "an actor known by login only compares case-insensitively", task: fxTask(Completed, true),
			ev: func() Event { e := fxComment("ALICE", "/verify"); e.Actor.ID = 0; return e }(), facts: sep(SeparationMinimum, 1), want: refused("built")},
		{name: "the approver of a no-PR task, team of 3: refused", task: fxTask(Completed, false),
			ev: fxComment("carol", "/verify"), facts: sep(SeparationAuto, 3), want: refused("approved this")},
		{name: "a stranger never verifies, even under minimum", task: fxTask(Completed, true),
			ev: fxComment("mallory", "/verify"), facts: sep(SeparationMinimum, 1), want: refused("write permission")},
		{name: "the builder's approval then an outsider's verification", task: fxTask(Review, true),
			ev: fxReview("dave", "approved", fxHead, ""), facts: sep(SeparationMinimum, 1),
			want: want{state: Review, steps: []step{{Review, "not counted"}}, notices: []NoticeKind{NoticeIgnored}}},
	}
	runEventCases(t, tests)
}

// Renamed accounts (docs/design.md, Roles: identity is the numeric user id). An account
// keeps its id through a rename; a login given up can be taken by someone
// else, with another id. Separation follows the id, never the login.
func TestDecideTaskRenamedAccounts(t *testing.T) {
	alice2 := renamed(u("alice"), "alice2")    // the assignee (a builder), renamed
	carol2 := renamed(u("carol"), "carol2")    // the approver, renamed
	dave2 := renamed(u("dave"), "dave2")       // #12's author, renamed
	erin2 := renamed(u("erin"), "erin2")       // the agent's pilot, renamed
	newAlice := User{ID: 9001, Login: "alice"} // another account that took the login "alice"
	newCarol := User{ID: 9002, Login: "carol"}
	newDave := User{ID: 9003, Login: "dave"}
	newErin := User{ID: 9004, Login: "erin"}
	for _, o := range []User{newAlice, newCarol, newDave, newErin} {
		if o.ID == u(o.Login).ID {
			t.Fatalf("%s's new owner must have another id than the cast's", o.Login)
		}
	}
	by := func(who User, ev Event) Event { ev.Actor = who; return ev }
	comment := func(who User, body string) Event { return by(who, fxComment(who.Login, body)) }
	review := func(who User, state string) Event {
		ev := by(who, fxReview(who.Login, state, fxHead, ""))
		ev.Review.Reviewer = who
		if who.ID == u("dave").ID {
			ev.PR.Author = who // the webhook shows the author's login of now
		}
		return ev
	}
	sep := func(s Separation, size int) func(*Facts) {
		return func(f *Facts) { f.Config.Separation, known(*f).TeamSize = s, size }
	}
	refused := func(phrase string) want {
		return want{state: Completed, notices: []NoticeKind{NoticeRefused}, check: func(t *testing.T, d Decision) {
			if r := refusalReason(d); !strings.Contains(r, phrase) {
				t.Errorf("refusal %q does not contain %q", r, phrase)
			}
		}}
	}
	verifiedBy := func(who User) want {
		return want{state: Verified, steps: []step{{Verified, "/verify"}}, labels: lbl(Verified),
			check: func(t *testing.T, d Decision) {
				if v := d.Task.Verifier; v != who {
					t.Errorf("verifier %+v, want %+v (the account, with its id)", v, who)
				}
			}}
	}

	// The agent copilot[bot] is assigned to a completed task; agents: says
	// erin flies it, and the adapters resolved erin's account (Facts.Pilots).
	agents := func(f *Facts) {
		f.Config.Agents = map[string]string{"copilot[bot]": "erin"}
		known(*f).Pilots = map[string]User{"erin": u("erin")}
	}
	assign := fxIssueEvent(IssueAssigned, "lead", assigned("alice", "copilot[bot]"))
	af := fxFacts("lead")
	agents(&af)
	piloted := decide(t, fxTask(Completed, true), assign, af).Task
	if piloted == nil || piloted.State != Completed {
		t.Fatalf("assigning the agent: %+v", piloted)
	}
	if b := piloted.builder(u("erin")); b == nil || b.ID != u("erin").ID || !strings.Contains(b.As, "pilot of copilot[bot]") {
		t.Fatalf("builders %+v: want erin, with her id, as copilot[bot]'s pilot", piloted.Builders)
	}

	tests := []eventCase{
		{name: "a builder renamed is still a builder: /verify refused", task: fxTask(Completed, true),
			ev: comment(alice2, "/verify"), facts: sep(SeparationMinimum, 1), want: refused("built")},
		{name: "a builder renamed, no PR: /verify refused", task: fxTask(Completed, false),
			ev: comment(alice2, "/verify"), facts: sep(SeparationMinimum, 1), want: refused("built")},
		{name: "the new owner of a builder's old login is no builder: may verify", task: fxTask(Completed, true),
			ev: comment(newAlice, "/verify"), facts: sep(SeparationMinimum, 1), want: verifiedBy(newAlice)},
		{name: "an approver renamed, triple: still the approver", task: fxTask(Completed, true),
			ev: comment(carol2, "/verify"), facts: sep(SeparationTriple, 2), want: refused("approved this")},
		{name: "an approver renamed, auto with a team of 3: still the approver", task: fxTask(Completed, true),
			ev: comment(carol2, "/verify"), facts: sep(SeparationAuto, 3), want: refused("approved this")},
		{name: "an approver renamed, no PR, triple: still the approver", task: fxTask(Completed, false),
			ev: comment(carol2, "/verify"), facts: sep(SeparationTriple, 2), want: refused("approved this")},
		{name: "the new owner of the approver's old login is no approver: may verify (triple)", task: fxTask(Completed, true),
			ev: comment(newCarol, "/verify"), facts: sep(SeparationTriple, 2), want: verifiedBy(newCarol)},
		{name: "an approver renamed may not /reject either", task: fxTask(Completed, true),
			ev: comment(carol2, "/reject broken"), facts: sep(SeparationTriple, 2), want: refused("approved this")},
		{name: "the PR author renamed: their approval is not counted", task: fxTask(Review, true),
			ev: review(dave2, "approved"),
			want: want{state: Review, steps: []step{{Review, "not counted"}}, notices: []NoticeKind{NoticeIgnored},
				check: func(t *testing.T, d Decision) {
					if len(d.Task.Approvals) != 0 || d.Task.IsApprover(u("dave")) {
						t.Errorf("approvals %v, approvers %v: want none", d.Task.Approvals, d.Task.Approvers)
					}
					if n := noticeOf(d, NoticeIgnored); n == nil || !strings.Contains(n.Reason, "author of #12") {
						t.Errorf("notice %+v does not say the reviewer wrote #12", n)
					}
				}}},
		{name: "the new owner of the PR author's old login: their approval counts", task: fxTask(Review, true),
			ev: review(newDave, "approved"),
			want: want{state: Completed, steps: []step{{Completed, "approved by @dave on #12"}}, labels: lbl(Completed),
				check: func(t *testing.T, d Decision) {
					if !d.Task.IsApprover(newDave) || d.Task.IsApprover(u("dave")) {
						t.Errorf("approvers %v: want the new dave's account only", d.Task.Approvers)
					}
				}}},
		{name: "the PR author renamed: changes requested do not send the work back; the record shows the new login", task: fxTask(Review, true),
			ev: review(dave2, "changes_requested"), want: want{state: Review, check: func(t *testing.T, d Decision) {
				b := d.Task.builder(dave2)
				if b == nil || b.Login != "dave2" || d.Task.PRs[0].Author.Login != "dave2" {
					t.Fatalf("the renamed author is not shown by the new login: %+v %+v", d.Task.Builders, d.Task.PRs)
				}
			}}},
		{name: "an agent's pilot, resolved with an id, renamed: /verify refused", task: piloted,
			ev: comment(erin2, "/verify"), facts: func(f *Facts) { agents(f); sep(SeparationMinimum, 1)(f) }, want: refused("built")},
		{name: "the new owner of the pilot's old login (agents: still says erin) is no builder: may verify", task: piloted,
			ev: comment(newErin, "/verify"), facts: func(f *Facts) {
				agents(f)
				known(*f).Pilots = map[string]User{"erin": newErin} // the login resolves to its new owner now
				sep(SeparationMinimum, 1)(f)
			}, want: verifiedBy(newErin)},
	}
	runEventCases(t, tests)
}

func TestDecideTaskTracking(t *testing.T) {
	opened := func(mod func(*IssueFacts)) Event {
		e := fxEvent(IssueOpened, "lead")
		e.Issue.Author = u("lead")
		if mod != nil {
			mod(&e.Issue)
		}
		return e
	}
	newTask := func(t *testing.T, d Decision) {
		nt := d.Task
		if nt.Repo != fxRepo || nt.Number != fxIssue || nt.Title != "Login form" || nt.Attempt != 1 || nt.Opener.IsZero() {
			t.Errorf("new record %+v", nt)
		}
	}
	tests := []eventCase{
		{name: "issue opened: pending", ev: opened(nil),
			want: want{state: Pending, steps: []step{{Pending, "issue opened"}}, labels: lbl(Pending), check: newTask}},
		{name: "issue opened with an assignee: pending then assigned", ev: opened(func(i *IssueFacts) { i.Assignees = us("alice") }),
			want: want{state: Assigned, steps: []step{{Pending, "issue opened"}, {Assigned, "@alice"}}, labels: lbl(Assigned)}},
		{name: "a comment on an untracked issue: first tracked", ev: fxComment("erin", "/status"),
			want: want{state: Pending, steps: []step{{Pending, "first tracked"}}, labels: lbl(Pending), notices: []NoticeKind{NoticeStatus}, check: newTask}},
		{name: "an assignment on an untracked issue: first tracked, then assigned", ev: fxIssueEvent(IssueAssigned, "lead", assigned("alice")),
			want: want{state: Assigned, steps: []step{{Pending, "first tracked"}, {Assigned, "@alice"}}, labels: lbl(Assigned)}},
		{name: "an edit of an untracked assigned issue: first tracked, then assigned", ev: fxIssueEvent(IssueEdited, "lead", assigned("alice")),
			want: want{state: Assigned, steps: []step{{Pending, "first tracked"}, {Assigned, "@alice"}}, labels: lbl(Assigned)}},
		{name: "a PR opened for an untracked issue: first tracked, then each state to review", ev: fxPREvent(PRLinked, fxHead, false),
			want: want{state: Review, steps: []step{{Pending, "first tracked"}, {Assigned, "#12"}, {InProgress, "#12"}, {Review, "#12"}},
				labels: lbl(Review), assign: []string{"dave"}}},
		{name: "/verify on an untracked issue: tracked, refused", ev: fxComment("erin", "/verify"),
			want: want{state: Pending, steps: []step{{Pending, "first tracked"}}, labels: lbl(Pending), notices: []NoticeKind{NoticeRefused}}},
		{name: "/force-complete OVERRIDE on an untracked issue by a lead", ev: fxComment("lead", "/force-complete OVERRIDE imported"),
			want: want{state: Verified, labels: lbl(Verified, LabelForced), steps: []step{{Pending, "first tracked"},
				{Assigned, "imported"}, {InProgress, "imported"}, {Review, "imported"}, {Completed, "imported"}, {Verified, "imported"}}}},
		{name: "ignored label: not tracked", ev: opened(func(i *IssueFacts) { i.Labels = []string{"Question"} }), want: want{nothing: true}},
		{name: "configured ignored label: not tracked", ev: opened(func(i *IssueFacts) { i.Labels = []string{"wontfix"} }),
			facts: func(f *Facts) { f.Config.Tasks.IgnoreLabels = []string{"wontfix"} }, want: want{nothing: true}},
		// Goal issues are the ones countersign opened (the adapters never hand
		// them to tasks): a goal label someone puts on an issue makes it nothing.
		{name: "a goal label: still a task", ev: opened(func(i *IssueFacts) { i.Labels = []string{LabelGoal} }),
			want: want{state: Pending, steps: []step{{Pending, "issue opened"}}, labels: lbl(Pending)}},
		{name: "an issue closed before it was tracked: a comment tracks nothing", ev: func() Event {
			e := fxComment("mallory", "/status")
			e.Issue.Closed = true
			return e
		}(), want: want{nothing: true}},
		{name: "track milestoned, no milestone: not tracked", ev: opened(nil),
			facts: func(f *Facts) { f.Config.Tasks.Track = "milestoned" }, want: want{nothing: true}},
		{name: "track milestoned, milestoned: tracked", ev: opened(func(i *IssueFacts) { i.Milestone = 3 }),
			facts: func(f *Facts) { f.Config.Tasks.Track = "milestoned" },
			want:  want{state: Pending, steps: []step{{Pending, "issue opened"}}, labels: lbl(Pending)}},
		{name: "track labeled: the label added starts tracking", ev: fxIssueEvent(IssueLabeled, "lead", func(e *Event) {
			e.Label, e.Issue.Labels = "task", []string{"task"}
		}), facts: func(f *Facts) { f.Config.Tasks.Track = "labeled" },
			want: want{state: Pending, steps: []step{{Pending, "first tracked"}}, labels: lbl(Pending)}},
		{name: "track labeled, unlabeled: not tracked", ev: opened(nil),
			facts: func(f *Facts) { f.Config.Tasks.Track = "labeled" }, want: want{nothing: true}},
		{name: "an event without its issue: nothing", ev: func() Event { e := fxComment("erin", "/status"); e.Issue = IssueFacts{}; return e }(),
			want: want{nothing: true}},
	}
	runEventCases(t, tests)
}

func TestTracked(t *testing.T) {
	cfg := func(track, label string, ignore ...string) Config {
		c := DefaultConfig()
		c.Tasks = TaskConfig{Track: track, Label: label, IgnoreLabels: ignore}
		return c
	}
	tests := []struct {
		name  string
		cfg   Config
		issue IssueFacts
		want  bool
	}{
		{"all: any issue", cfg("all", "task"), IssueFacts{Number: 1}, true},
		{"all: with labels", cfg("all", "task", "question"), IssueFacts{Labels: []string{"bug"}}, true},
		{"all: ignored label", cfg("all", "task", "question"), IssueFacts{Labels: []string{"bug", "question"}}, false},
		{"all: ignored label in another case", cfg("all", "task", "question"), IssueFacts{Labels: []string{"QUESTION"}}, false},
		{"all: a goal label makes nothing", cfg("all", "task"), IssueFacts{Labels: []string{"goal"}}, true},
		{"all: a goal label in another case makes nothing", cfg("all", "task"), IssueFacts{Labels: []string{"Goal"}}, true},
		{"all: goal state labels do not make a goal", cfg("all", "task"), IssueFacts{Labels: []string{"goal:active"}}, true},
		{"default config: question ignored", DefaultConfig(), IssueFacts{Labels: []string{"question"}}, false},
		{"default config: tracks all", DefaultConfig(), IssueFacts{}, true},
		{"milestoned: with a milestone", cfg("milestoned", "task"), IssueFacts{Milestone: 2}, true},
		{"milestoned: without", cfg("milestoned", "task"), IssueFacts{}, false},
		{"milestoned: milestone but ignored", cfg("milestoned", "task", "question"), IssueFacts{Milestone: 2, Labels: []string{"question"}}, false},
		{"milestoned: a goal label in the milestone makes nothing", cfg("milestoned", "task"), IssueFacts{Milestone: 2, Labels: []string{"goal"}}, true},
		{"labeled: with the label", cfg("labeled", "task"), IssueFacts{Labels: []string{"bug", "task"}}, true},
		{"labeled: the label in another case", cfg("labeled", "Task"), IssueFacts{Labels: []string{"TASK"}}, true},
		{"labeled: without", cfg("labeled", "task"), IssueFacts{Labels: []string{"bug"}}, false},
		{"labeled: milestone is not enough", cfg("labeled", "task"), IssueFacts{Milestone: 2}, false},
		{"labeled: with the label but ignored", cfg("labeled", "task", "question"), IssueFacts{Labels: []string{"task", "question"}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Tracked(tc.cfg, tc.issue); got != tc.want {
				t.Errorf("Tracked = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDecideTaskRecord(t *testing.T) {
	remembered := func() *Task {
		t := fxTask(Review, false)
		for i := range int64(maxRemembered) {
			t.Comments = append(t.Comments, i+1)
		}
		return t
	}
	tests := []eventCase{
		{name: "only the latest comment ids are kept", task: remembered(), ev: fxComment("erin", "thanks!"),
			want: want{state: Review, check: func(t *testing.T, d Decision) {
				c := d.Task.Comments
				if len(c) != maxRemembered || c[0] != 2 || c[len(c)-1] != 900 {
					t.Errorf("comments %v, want the latest %d ending with 900", c, maxRemembered)
				}
			}}},
		{name: "issue edited: the title follows, nothing else", task: fxTask(Review, false),
			ev: fxIssueEvent(IssueEdited, "lead", func(e *Event) { e.Issue.Title = "Login form v2" }),
			want: want{state: Review, check: func(t *testing.T, d Decision) {
				if d.Task.Title != "Login form v2" || len(effectsOf(d, EffectSyncCard)) != 1 {
					t.Errorf("title %q, effects %+v: want the new title on the card", d.Task.Title, d.Effects)
				}
			}}},
		{name: "issue edited, same title: nothing", task: fxTask(Review, false),
			ev: fxIssueEvent(IssueEdited, "lead", nil), want: want{nothing: true}},
		{name: "a PR event without its PR: nothing", task: fxTask(Review, true),
			ev: fxIssueEvent(PRPushed, "dave", nil), want: want{nothing: true}},
		{name: "a review event without its review: nothing", task: fxTask(Review, true),
			ev: func() Event { e := fxReview("carol", "approved", fxHead, ""); e.Review = nil; return e }(), want: want{nothing: true}},
	}
	runEventCases(t, tests)
}

// refusalReason is the reason of the first refusal d answers with.
func refusalReason(d Decision) string {
	if n := noticeOf(d, NoticeRefused); n != nil && len(n.Refusals) > 0 {
		return n.Refusals[0].Reason
	}
	return ""
}

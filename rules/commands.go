package rules

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// commented acts on the commands of a new comment, in order. A comment is
// acted on once, whatever delivery brings it.
func (d *decider) commented() {
	t := d.t
	if d.ev.CommentID != 0 {
		if slices.Contains(t.Comments, d.ev.CommentID) {
			return
		}
		t.Comments = append(t.Comments, d.ev.CommentID)
		if len(t.Comments) > maxRemembered {
			t.Comments = t.Comments[len(t.Comments)-maxRemembered:]
		}
		d.changed = true
	}
	cmds := d.ev.Commands
	if len(cmds) > MaxCommands {
		cmds = cmds[:MaxCommands]
	}
	for _, c := range cmds {
		d.command(c)
	}
}

// MaxCommands is how many commands of one comment are acted on; the rest are
// ignored, so one comment cannot make countersign write without end.
const MaxCommands = 10

func (d *decider) where() int {
	if d.ev.Where != 0 {
		return d.ev.Where
	}
	return d.t.Number
}

// refuse replies to command c, quoting it, with why it changed nothing. The
// refusals of one comment share one reply.
func (d *decider) refuse(c Command, why string) {
	for i := range d.effects {
		if n := d.effects[i].Notice; n != nil && n.Kind == NoticeRefused && d.effects[i].Number == d.where() {
			n.Refusals = append(n.Refusals, Refusal{Quote: c.Line, Reason: why})
			return
		}
	}
	d.notice(d.where(), Notice{Kind: NoticeRefused, Refusals: []Refusal{{Quote: c.Line, Reason: why}}, State: d.t.State})
}

func (d *decider) command(c Command) {
	switch c.Name {
	case CmdStart:
		d.start(c)
	case CmdSubmit:
		d.submit(c)
	case CmdApprove:
		d.approve(c)
	case CmdVerify:
		d.verify(c)
	case CmdReject:
		d.reject(c)
	case CmdStatus:
		if !slices.ContainsFunc(d.effects, func(e Effect) bool { return e.Notice != nil && e.Notice.Kind == NoticeStatus }) {
			d.notice(d.where(), Notice{Kind: NoticeStatus, State: d.t.State})
		}
	case CmdReopen:
		d.reopen(c)
	case CmdSkipVerify:
		d.skipVerify(c)
	case CmdForceComplete:
		d.forceComplete(c)
	case CmdContract:
		d.contract(c)
	case CmdHelp:
		d.help()
	case "":
		if c.DidYouMean != "" {
			d.refuse(c, nearMissWhy(c))
		}
	case CmdVerifyGoal, CmdRejectGoal:
		d.refuse(c, fmt.Sprintf("#%d is a task; /%s works on a goal issue (the one countersign opened for a milestone).", d.t.Number, c.Name))
	}
}

func (d *decider) actor() User { return d.ev.Actor }

// stateIs refuses c unless the task is in state want.
func (d *decider) stateIs(c Command, want State, what string) bool {
	if d.t.State == want {
		return true
	}
	d.refuse(c, fmt.Sprintf("#%d is `%s`; %s works on a `%s` task. %s", d.t.Number, d.t.State, "/"+string(c.Name), want, what))
	return false
}

func (d *decider) start(c Command) {
	t := d.t
	if !containsUser(t.Assignees, d.actor()) {
		who := "#" + fmt.Sprint(t.Number) + " has no assignee: assign yourself first"
		if len(t.Assignees) > 0 {
			who = "only an assignee (" + mentions(Logins(t.Assignees)) + ") may start it"
		}
		d.refuse(c, who+".")
		return
	}
	if !d.stateIs(c, Assigned, "") {
		return
	}
	d.addBuilder(d.actor(), "/start")
	d.move(InProgress, "/start")
}

func (d *decider) submit(c Command) {
	t := d.t
	if prs := t.OpenPRs(); len(prs) > 0 {
		d.refuse(c, fmt.Sprintf("#%d has a pull request (#%d): mark it ready for review instead; /submit is for tasks with no pull request.", t.Number, prs[0]))
		return
	}
	if !t.IsBuilder(d.actor()) {
		d.refuse(c, "only a builder of the task (an assignee, or who ran /start) may submit it.")
		return
	}
	if !d.stateIs(c, InProgress, "") || d.contradicted(d.contradiction(d.ev.Text), d.where()) {
		return
	}
	why := "/submit"
	if c.Args != "" {
		why += ": " + c.Args
	}
	d.submitted(why)
}

func (d *decider) approve(c Command) {
	t := d.t
	if prs := t.OpenPRs(); len(prs) > 0 {
		d.refuse(c, fmt.Sprintf("#%d has a pull request (#%d): approve it with a GitHub review; /approve is for tasks with no pull request.", t.Number, prs[0]))
		return
	}
	if u := slices.DeleteFunc(t.Unapproved(), func(p LinkedPR) bool { return !p.Merged }); len(u) > 0 {
		d.refuse(c, fmt.Sprintf("#%d's code came in merged pull request #%d, which no one approved: approve its head with a GitHub review (a merged pull request can still be reviewed).", t.Number, u[0].Number))
		return
	}
	if b := d.builderFor(d.actor()); b != nil {
		d.refuse(c, fmt.Sprintf("@%s built this task (%s); an approval must come from someone who did not.", b.Login, b.As))
		return
	}
	if !d.f.Ask.Person(d.actor()).MayApprove() {
		d.refuse(c, "@"+d.actor().Login+" has no write permission on the repository; only people with write permission may approve.")
		return
	}
	if !d.stateIs(c, Review, "It must be submitted (/submit) first.") {
		return
	}
	d.countApproval(Approval{By: d.actor(), At: d.ev.At, Critics: d.f.Ask.Critics(d.actor())})
	d.move(Completed, "/approve by @"+d.actor().Login)
}

// eligibleWho says who may approve, verify or reject, for a refusal.
func (d *decider) eligibleWho(verb string) string {
	if len(d.f.Config.Verifiers) > 0 {
		return "is not listed in `verifiers:` of .github/countersign.yml (nor a lead); only they may " + verb + "."
	}
	return "has no write permission on the repository; only people with write permission may " + verb + "."
}

// Missing says what a task needs before it can be verified.
func Missing(t *Task) string {
	switch t.State {
	case Pending, Assigned:
		return "It needs to be built, submitted and approved first."
	case InProgress:
		return "It needs to be submitted for review (a ready pull request, or /submit) and approved first."
	case Review:
		if u := t.Unapproved(); len(u) > 0 {
			return fmt.Sprintf("It needs an approving review of #%d's head from someone who did not build it first.", u[0].Number)
		}
		return "It needs an approval from someone who did not build it first."
	case Completed:
		if b := Blocking(t); len(b) > 0 {
			return "Its contract is not met yet: " + criteriaList(b) + "."
		}
		if t.Contract != nil && t.Contract.Type == Advisory {
			return "It is advisory: it needs a lead to review its output and /verify it."
		}
		return "It needs /verify from someone who neither built nor approved it."
	case Verified:
		if !t.Verifier.IsZero() {
			return "It was verified by @" + t.Verifier.Login + "."
		}
		return "It is already verified."
	}
	return ""
}

// mayConfirm refuses c unless the actor may verify or reject this task (both
// make them its verifier; docs/design.md, Roles): eligible, not a builder, and not an
// approver of the attempt unless separation allows it.
func (d *decider) mayConfirm(c Command) bool {
	who := d.actor()
	if b := d.builderFor(who); b != nil {
		d.refuse(c, fmt.Sprintf("@%s built this task (%s); someone who did not build it must %s it.", b.Login, b.As, c.Name))
		return false
	}
	if !d.f.Ask.Person(who).Eligible {
		d.refuse(c, "@"+who.Login+" "+d.eligibleWho(string(c.Name)))
		return false
	}
	if d.approverFor(who) && !d.approverMayVerify() {
		d.refuse(c, fmt.Sprintf("@%s approved this attempt; the verifier must be someone else (separation: %s, %d people can verify).",
			who, d.f.Config.Separation, d.f.Ask.TeamSize()))
		return false
	}
	return true
}

// approverMayVerify: separation minimum, or auto in a team of two or fewer.
func (d *decider) approverMayVerify() bool {
	switch d.f.Config.Separation {
	case SeparationMinimum:
		return true
	case SeparationTriple:
		return false
	}
	n := d.f.Ask.TeamSize()
	return n >= 1 && n <= 2 // 0: unknown, so no relaxing
}

func (d *decider) verify(c Command) {
	t := d.t
	if t.State != Completed {
		// An approval may be on its way; reading GitHub for it is worth it
		// only for someone who could verify once it came (never a builder,
		// never an outsider, whose every comment would buy those reads).
		if who := d.actor(); t.State == Review && d.builderFor(who) == nil && d.f.Ask.Person(who).Eligible {
			d.recheck = true
		}
		d.refuse(c, fmt.Sprintf("#%d is `%s`; only a `completed` (approved) task can be verified. %s", t.Number, t.State, Missing(t)))
		return
	}
	if !d.mayConfirm(c) || d.blocked(c) {
		return
	}
	if why := d.laundered(); why != "" && !d.f.Ask.Person(d.actor()).Lead {
		d.refuse(c, why)
		return
	}
	d.refreshResults() // as things are now, under this event's configuration
	if t.Contract != nil && t.Contract.Type == Advisory && !d.f.Ask.Person(d.actor()).Lead {
		d.refuse(c, fmt.Sprintf("#%d is an advisory task (%s): no automated test can say it is done, so a lead reviews its output and only a lead's /verify completes it.", t.Number, t.Contract.Why))
		return
	}
	if b := Blocking(t); len(b) > 0 {
		d.recheck = d.recheck || slices.ContainsFunc(b, func(c Criterion) bool { return c.Result == ResultPending }) // CI may be on its way
		d.refuse(c, fmt.Sprintf("#%d's contract is not met yet: %s. /verify works once every criterion has passed.%s", t.Number, criteriaList(b), d.waitHint(b)))
		return
	}
	why := "/verify"
	if c.Args != "" {
		why += ": " + c.Args
	}
	t.Verifier, t.VerifiedAt = d.actor(), d.ev.At
	t.Escalated, t.Failing = false, false
	d.move(Verified, why)
}

func (d *decider) reject(c Command) {
	t := d.t
	if c.Args == "" {
		d.refuse(c, "a reason is required: `/reject <what is wrong>`, so the builder knows what to fix.")
		return
	}
	if t.State != Completed {
		d.refuse(c, fmt.Sprintf("#%d is `%s`; only a `completed` task can be rejected. %s", t.Number, t.State, rejectHint(t)))
		return
	}
	if !d.mayConfirm(c) {
		return
	}
	t.Rejections = append(t.Rejections, Rejection{By: d.actor(), At: d.ev.At, Reason: clip(c.Args, maxReason), Attempt: t.Attempt})
	for _, p := range t.PRs {
		if p.Open && !slices.Contains(t.RejectedHeads, p.Head) {
			t.RejectedHeads = append(t.RejectedHeads, p.Head)
		}
	}
	t.newAttempt()
	t.FailedAttempts++
	t.Failing = true
	d.move(InProgress, "/reject: "+c.Args)
	d.notice(d.where(), Notice{Kind: NoticeRejected, Reason: c.Args, Mentions: Logins(d.builderMentions()), State: t.State,
		Rejections: t.Rejections})
	d.escalateIfDue()
}

func rejectHint(t *Task) string {
	if t.State == Review {
		return "To send work in review back, request changes in a review."
	}
	if t.State == Verified {
		return "A lead can reopen a verified task with `/reopen <reason>`."
	}
	return ""
}

// escalateIfDue escalates a task rejected or failed too often, once.
func (d *decider) escalateIfDue() {
	t, e := d.t, d.f.Config.Escalation
	if t.Escalated || (len(t.Rejections) < e.Rejections && t.FailedAttempts < e.FailedAttempts) {
		return
	}
	t.Escalated = true
	d.note(fmt.Sprintf("escalated to the leads: %d rejections, %d failed attempts", len(t.Rejections), t.FailedAttempts))
	d.notice(t.Number, Notice{Kind: NoticeEscalated, Mentions: d.f.Ask.Leads(), Rejections: t.Rejections, State: t.State,
		FailedAttempts: t.FailedAttempts, Failures: t.Failures, ByFailures: len(t.Rejections) < e.Rejections})
}

// builderMentions are who to tell about a rejection or regression: the
// assignees, else those who were, else the pull requests' authors.
func (d *decider) builderMentions() []User {
	if len(d.t.Assignees) > 0 {
		return append([]User(nil), d.t.Assignees...)
	}
	var out []User
	for _, b := range d.t.Builders {
		if b.As == "assignee" {
			out = append(out, b.User())
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, p := range d.t.PRs {
		if !containsUser(out, p.Author) && !p.Author.IsZero() {
			out = append(out, p.Author)
		}
	}
	return out
}

// leadOnly refuses c unless the actor is a lead.
func (d *decider) leadOnly(c Command) bool {
	if d.f.Ask.Person(d.actor()).Lead {
		return true
	}
	who := "users with admin or maintain permission"
	if len(d.f.Config.Leads) > 0 {
		who = "the `leads:` of .github/countersign.yml"
	}
	d.refuse(c, fmt.Sprintf("only a lead (%s) may use /%s.", who, c.Name))
	return false
}

func (d *decider) needReason(c Command, reason string) bool {
	if strings.TrimSpace(reason) != "" {
		return true
	}
	d.refuse(c, fmt.Sprintf("a reason is required: `/%s <reason>`; it is kept in the task's history.", c.Name))
	return false
}

func (d *decider) reopen(c Command) {
	t := d.t
	if !d.leadOnly(c) || !d.needReason(c, c.Args) {
		return
	}
	if t.State != Verified {
		d.refuse(c, fmt.Sprintf("#%d is `%s`; /reopen sends a `verified` task back for a regression.", t.Number, t.State))
		return
	}
	t.newAttempt()
	t.Verifier, t.VerifiedAt = User{}, time.Time{}
	t.Unverified, t.Forced = false, false
	builders := d.builderMentions()
	if len(t.Assignees) == 0 && len(builders) > 0 {
		t.Assignees = builders
		d.effects = append(d.effects, Effect{Kind: EffectAssign, Repo: t.Repo, Number: t.Number, Users: Logins(builders)})
	}
	if t.Closed {
		t.Closed = false
		d.effects = append(d.effects, Effect{Kind: EffectReopen, Repo: t.Repo, Number: t.Number})
	}
	d.move(InProgress, "/reopen (regression): "+c.Args)
	d.notice(d.where(), Notice{Kind: NoticeRegression, Reason: c.Args, Mentions: Logins(builders), State: t.State})
}

func (d *decider) skipVerify(c Command) {
	t := d.t
	if !d.leadOnly(c) || !d.needReason(c, c.Args) {
		return
	}
	if t.State != Completed {
		d.refuse(c, fmt.Sprintf("#%d is `%s`; /skip-verify marks a `completed` (approved) task verified without verification. To bypass every gate: `/force-complete OVERRIDE <reason>`.", t.Number, t.State))
		return
	}
	t.Unverified, t.Verifier, t.VerifiedAt = true, User{}, d.ev.At
	t.Escalated, t.Failing = false, false
	d.move(Verified, "/skip-verify by lead @"+d.actor().Login+": "+c.Args+d.overridden())
}

func (d *decider) forceComplete(c Command) {
	t := d.t
	if !d.leadOnly(c) {
		return
	}
	word, reason := "", ""
	if f := strings.Fields(c.Args); len(f) > 0 {
		word, reason = f[0], strings.TrimSpace(strings.TrimPrefix(c.Args, f[0]))
	}
	if word != "OVERRIDE" {
		d.refuse(c, "to bypass every gate, write the word OVERRIDE: `/force-complete OVERRIDE <reason>`.")
		return
	}
	if !d.needReason(c, reason) {
		return
	}
	if t.State == Verified {
		d.refuse(c, fmt.Sprintf("#%d is already `verified`.", t.Number))
		return
	}
	why := "/force-complete by lead @" + d.actor().Login + ": " + strings.TrimSpace(reason) + d.overridden()
	for t.State != Verified {
		d.move(States[t.State.rank()+1], why)
	}
	t.Forced, t.Verifier, t.VerifiedAt = true, User{}, d.ev.At
	t.Escalated, t.Failing = false, false
}

// criteriaList names criteria and where each stands, for people.
func criteriaList(cs []Criterion) string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = fmt.Sprintf("%s %s", c.Key(), c.Result)
		if c.Detail != "" {
			out[i] += " (" + c.Detail + ")"
		}
	}
	return strings.Join(out, "; ")
}

// waitHint names the key that says which runs count, for a /verify refused
// while some criterion waits for CI ("" otherwise): the runs may never come
// under the names the contract waits for.
func (d *decider) waitHint(blocking []Criterion) string {
	for _, c := range blocking {
		if c.Result != ResultPending || d.checkedBy(c) == nil {
			continue
		}
		if d.f.Config.Contracts.WholeCI() {
			hint := " Every CI run on the head counts while `contracts.checks` is unset; " + MapChecksHint + "."
			if strings.HasPrefix(c.Detail, noCIReported) {
				hint += " A repository with no CI at all can write `contracts: {checks: {}}`: then the verifier checks every criterion."
			}
			return hint
		}
		return " The runs each criterion waits for are named in `contracts.checks` in " + ConfigPath + "."
	}
	return ""
}

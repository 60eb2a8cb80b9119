package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/countersign/countersign/internal/githubtest"
	"github.com/countersign/countersign/rules"
	"github.com/countersign/countersign/templates"
)

// CheckName is the check run countersign owns on every linked PR's head.
const CheckName = "countersign/verification"

// ConfigPath is where a scenario's config: block is written.
const ConfigPath = ".github/countersign.yml"

// cardPrefix starts every task card (the hidden marker line).
const cardPrefix = "<!-- countersign:card "

// PlayError is a failed step: an expectation not met, an action GitHub
// refused, or a bot that did not settle.
type PlayError struct {
	Name string // scenario file name
	Line int
	Step string // the step as written
	Msg  string // what went wrong
	Seen string // what GitHub looked like (labels, recent bot comments), may be ""
}

func (e *PlayError) Error() string {
	s := fmt.Sprintf("%s:%d: %s: %s", e.Name, e.Line, e.Step, e.Msg)
	if e.Seen != "" {
		s += "\n" + e.Seen
	}
	return s
}

// Play sets the scenario up on rig's repository (permissions, teams, config),
// performs each action, waits for the bot to settle after each, and checks
// each expectation. It writes a timeline to out (nil: none) and returns the
// first failed step as a *PlayError.
func (s *Scenario) Play(ctx context.Context, rig *Rig, out io.Writer) error {
	if out == nil {
		out = io.Discard
	}
	p := &player{
		sc: s, rig: rig, gh: rig.GH(), repo: rig.Repo(), out: out,
		bot: rig.GH().BotLogin(), comments: map[string]int64{}, milestones: map[string]int{},
	}
	p.slug = strings.TrimSuffix(p.bot, "[bot]")
	if err := p.setup(ctx); err != nil {
		return err
	}
	p.base = p.snapshot()
	expects := 0
	for i := range s.Steps {
		st := &s.Steps[i]
		if len(st.Notes) > 0 {
			if i > 0 {
				fmt.Fprintln(out)
			}
			fmt.Fprintf(out, "%s\n", strings.Join(st.Notes, "\n"))
		}
		if err := ctx.Err(); err != nil {
			return p.fail(st, fmt.Sprintf("stopped: %v", err), 0)
		}
		if st.Action != nil {
			if err := p.act(ctx, st); err != nil {
				return err
			}
			p.group = nil
			continue
		}
		expects++
		if err := p.check(st); err != nil {
			fmt.Fprintf(out, "    ✗ %s\n", strings.TrimPrefix(st.Text, "expect "))
			return err
		}
		fmt.Fprintf(out, "    ✓ %s\n", strings.TrimPrefix(st.Text, "expect "))
	}
	p.summary(expects)
	return nil
}

type player struct {
	sc         *Scenario
	rig        *Rig
	gh         *githubtest.Server
	repo       string
	out        io.Writer
	bot, slug  string
	comments   map[string]int64 // comment name -> id
	milestones map[string]int   // title -> number of the milestones the scenario created
	base       snapshot         // GitHub before the latest action
	baseMs     map[int]string   // milestone number -> open|closed, before the latest action
	group      *replyGroup      // the run of "expect reply" lines under way
	actions    int
}

// replyGroup is a run of consecutive "expect reply on #N" lines: one comment
// must meet all of them.
type replyGroup struct {
	number     int
	candidates []githubtest.CommentView
}

func (p *player) setup(ctx context.Context) error {
	before := errCount(p.gh.Err())
	for _, pe := range p.sc.People {
		p.gh.SetPermission(p.repo, pe.Login, pe.Permission)
	}
	for _, e := range p.sc.Emails {
		p.gh.SetEmails(e.Login, e.Address)
	}
	owner, _, _ := strings.Cut(p.repo, "/")
	for _, t := range p.sc.Teams {
		p.gh.AddTeam(t.Org, t.Slug, t.Members...)
	}
	if p.sc.Config != "" {
		p.gh.SetFile(p.repo, ConfigPath, p.sc.Config)
	}
	if b, err := p.board(); err == nil { // the configuration names a board: the organization has it
		p.gh.AddProject(b.org, b.number, "Board")
	}
	if errs := errsSince(p.gh.Err(), before); len(errs) > 0 {
		return &PlayError{Name: p.sc.Name, Line: 1, Step: "setup", Msg: errors.Join(errs...).Error()}
	}

	fmt.Fprintf(p.out, "%s\n", p.sc.Title)
	fmt.Fprintf(p.out, "%s\n", strings.Repeat("=", max(len([]rune(p.sc.Title)), 8)))
	if p.sc.Description != "" {
		fmt.Fprintf(p.out, "%s\n", p.sc.Description)
	}
	fmt.Fprintln(p.out)
	fmt.Fprintf(p.out, "  scenario  %s\n", p.sc.Name)
	fmt.Fprintf(p.out, "  repo      %s (bot: %s)\n", p.repo, p.bot)
	if len(p.sc.People) > 0 {
		var ps []string
		for _, pe := range p.sc.People {
			ps = append(ps, fmt.Sprintf("%s (%s)", pe.Login, pe.Permission))
		}
		fmt.Fprintf(p.out, "  people    %s\n", strings.Join(ps, ", "))
	}
	for _, t := range p.sc.Teams {
		org := t.Org
		if strings.EqualFold(org, owner) {
			org = owner
		}
		fmt.Fprintf(p.out, "  team      @%s/%s: %s\n", org, t.Slug, strings.Join(t.Members, ", "))
	}
	if p.sc.Config != "" {
		fmt.Fprintf(p.out, "  config    %s\n", ConfigPath)
		for _, l := range strings.Split(strings.TrimRight(p.sc.Config, "\n"), "\n") {
			fmt.Fprintf(p.out, "              %s\n", l)
		}
	}
	fmt.Fprintln(p.out)
	return p.settle(ctx, &Step{Line: 1, Text: "setup"})
}

func (p *player) settle(ctx context.Context, st *Step) error {
	if err := p.rig.Settle(ctx); err != nil {
		return p.fail(st, "after this step: "+err.Error(), 0)
	}
	return nil
}

// fail builds a PlayError, with what GitHub shows for issue n (0: nothing).
func (p *player) fail(st *Step, msg string, n int) error {
	e := &PlayError{Name: p.sc.Name, Line: st.Line, Step: st.Text, Msg: msg}
	if n > 0 {
		e.Seen = p.seen(n)
	}
	return e
}

// ---- actions ----

func (p *player) act(ctx context.Context, st *Step) error {
	a := st.Action
	p.actions++
	p.base = p.snapshot()
	p.baseMs = p.milestoneStates()
	mark := len(p.gh.Deliveries())
	labelsBefore := p.gh.RepoLabels(p.repo)
	errs := errCount(p.gh.Err())
	desc := st.Text
	if a.Kind == CommentOn || a.Kind == EditCommentOf {
		desc = oneLine(st.Text, 100)
	}

	extra, err := p.perform(a)
	if extra != "" {
		desc += " " + extra
	}
	fmt.Fprintf(p.out, "%2d. %s\n", p.actions, desc)
	if err != nil {
		return p.fail(st, err.Error(), p.subject(a))
	}
	if e := errsSince(p.gh.Err(), errs); len(e) > 0 {
		return p.fail(st, "GitHub refused it: "+errors.Join(e...).Error(), p.subject(a))
	}
	if err := p.settle(ctx, st); err != nil {
		return err
	}
	ds := p.gh.Deliveries()[mark:]
	p.changes(a, p.base, p.snapshot(), ds)
	p.repoLabelChanges(a, labelsBefore, p.gh.RepoLabels(p.repo))
	if dropped := countDropped(ds); dropped > 0 {
		p.linef("(%s dropped: countersign heard nothing of it)", plural(dropped, "webhook"))
	}
	return nil
}

func countDropped(ds []githubtest.SentWebhook) int {
	n := 0
	for _, d := range ds {
		if d.Dropped {
			n++
		}
	}
	return n
}

// repoLabelChanges writes how the repository's labels differ from what a
// rename or deletion of a label left: labels put back, or changed again.
func (p *player) repoLabelChanges(a *Action, before, after []githubtest.LabelView) {
	if a.Kind != RenameLabel && a.Kind != DeleteLabel {
		return
	}
	intended := map[string]bool{}
	for _, l := range before {
		name := l.Name
		if strings.EqualFold(name, a.Label) {
			if a.Kind == DeleteLabel {
				continue
			}
			name = a.NewName
		}
		intended[strings.ToLower(name)] = true
	}
	var added, gone []string
	now := map[string]bool{}
	for _, l := range after {
		now[strings.ToLower(l.Name)] = true
		if !intended[strings.ToLower(l.Name)] {
			added = append(added, fmt.Sprintf("%s (colour %s)", l.Name, l.Color))
		}
	}
	for name := range intended {
		if !now[name] {
			gone = append(gone, name)
		}
	}
	sort.Strings(gone)
	if len(added) == 0 && len(gone) == 0 {
		return
	}
	what := "rename"
	if a.Kind == DeleteLabel {
		what = "deletion"
	}
	var parts []string
	if len(added) > 0 {
		parts = append(parts, "back: "+strings.Join(added, ", "))
	}
	if len(gone) > 0 {
		parts = append(parts, "gone: "+strings.Join(gone, ", "))
	}
	p.linef("repository labels after %s's %s: %s", a.Actor, what, strings.Join(parts, "; "))
}

// perform does the action on the fake GitHub. extra is appended to the
// timeline line.
func (p *player) perform(a *Action) (extra string, err error) {
	gh, repo := p.gh, p.repo
	switch a.Kind {
	case OpenIssue:
		n := gh.OpenIssue(repo, a.Actor, a.Title, a.Body)
		return "", p.numbered("issue", n, a.Number)
	case OpenPR:
		body := a.Body
		var fixes []string
		for _, n := range a.Closes {
			fixes = append(fixes, fmt.Sprintf("Fixes #%d", n))
		}
		if len(fixes) > 0 {
			if body != "" {
				body += "\n\n"
			}
			body += strings.Join(fixes, "\n")
		}
		n, _ := gh.OpenPR(repo, a.Actor, githubtest.PROptions{
			Title: a.Title, Body: body, Draft: a.Draft, Assignees: a.Users,
			Commits: []githubtest.Commit{{Author: a.Actor, Message: commitMessage(a.Title, a.CoAuthors), Files: a.Files}},
		})
		return "", p.numbered("pull request", n, a.Number)
	case Edit:
		v, ok := gh.Issue(repo, a.Number)
		if !ok {
			return "", fmt.Errorf("#%d does not exist", a.Number)
		}
		body := v.Body
		if a.HasBody {
			body = a.Body
		}
		if v.IsPR {
			gh.EditPR(repo, a.Number, a.Actor, a.Title, body)
		} else {
			gh.EditIssue(repo, a.Number, a.Actor, a.Title, body)
		}
	case AssignUsers:
		gh.Assign(repo, a.Number, a.Actor, a.Users...)
	case UnassignUsers:
		gh.Unassign(repo, a.Number, a.Actor, a.Users...)
	case MarkReady:
		v, _ := gh.Issue(repo, a.Number)
		if !v.Draft {
			return "", fmt.Errorf("PR #%d is not a draft", a.Number)
		}
		gh.ReadyForReview(repo, a.Number, a.Actor)
	case PushCommit:
		v, _ := gh.Issue(repo, a.Number)
		sha := gh.Push(repo, a.Number, githubtest.Commit{
			Author: a.Actor, Message: commitMessage("More work on "+v.Title, a.CoAuthors), Files: a.Files,
		})
		if sha != "" {
			return "(head " + short(sha) + ")", nil
		}
	case ReviewPR:
		gh.Review(repo, a.Number, a.Actor, a.Review, a.Body)
	case CommentOn:
		n := a.Number
		if a.Goal != "" {
			if n, err = p.goalIssue(a.Goal); err != nil {
				return "", err
			}
			extra = fmt.Sprintf("(goal #%d)", n)
		}
		for range max(a.Times, 1) {
			id := gh.Comment(repo, n, a.Actor, a.Body)
			if a.Comment != "" {
				p.comments[a.Comment] = id
			}
		}
		return extra, nil
	case EditCommentOf:
		gh.EditComment(repo, p.comments[a.Comment], a.Actor, a.Body)
	case CloseIssue:
		if a.PR || p.sc.issues[a.Number] {
			gh.ClosePR(repo, a.Number, a.Actor)
		} else {
			gh.CloseIssue(repo, a.Number, a.Actor, a.Reason)
		}
	case ReopenIssue:
		if a.PR || p.sc.issues[a.Number] {
			gh.ReopenPR(repo, a.Number, a.Actor)
		} else {
			gh.ReopenIssue(repo, a.Number, a.Actor)
		}
	case AddLabels:
		gh.AddLabels(repo, a.Number, a.Actor, a.Labels...)
	case RemoveLabels:
		for _, l := range a.Labels {
			gh.RemoveLabel(repo, a.Number, a.Actor, l)
		}
	case BoardMove, BoardRemove:
		b, err := p.board()
		if err != nil {
			return "", err
		}
		if a.Kind == BoardMove {
			return "", gh.SetBoardValue(a.Actor, b.org, b.number, repo, a.Number, b.field, a.Status)
		}
		return "", gh.RemoveBoardItem(a.Actor, b.org, b.number, repo, a.Number)
	case MergePR:
		gh.MergePR(repo, a.Number, a.Actor)
	case QueuePR:
		if gh.EnqueuePR(repo, a.Number, a.Actor) == "" {
			return "", fmt.Errorf("PR #%d cannot be queued (closed, a draft, or queued already)", a.Number)
		}
	case DequeuePR:
		if !gh.DequeuePR(repo, a.Number, a.Actor) {
			return "", fmt.Errorf("PR #%d is not in the merge queue", a.Number)
		}
	case MergeQueue:
		if gh.MergeQueueHead(repo, a.Actor) == 0 {
			return "", fmt.Errorf("the merge queue is empty")
		}
	case EditCard:
		for _, cm := range gh.Comments(repo, a.Number) {
			if strings.EqualFold(cm.User, p.bot) && templates.IsCard(cm.Body) {
				body := strings.Replace(cm.Body, a.Replace, a.With, 1)
				if body == cm.Body {
					return "", fmt.Errorf("the card on #%d does not contain %q", a.Number, a.Replace)
				}
				gh.EditComment(repo, cm.ID, a.Actor, body)
				return "", nil
			}
		}
		return "", fmt.Errorf("#%d has no task card", a.Number)
	case LoseStore:
		if err := p.rig.LoseStore(context.Background()); err != nil {
			return "", err
		}
		return "(restarted on an empty store)", nil
	case RenameLabel:
		gh.RenameLabel(repo, a.Actor, a.Label, a.NewName)
	case DeleteLabel:
		gh.DeleteLabel(repo, a.Actor, a.Label)
	case RenameAccount:
		gh.RenameUser(a.Users[0], a.NewName)
	case DropWebhooks, ResumeWebhooks:
		gh.DropWebhooks(a.Kind == DropWebhooks)
	case RedeliverLast:
		ds := gh.Deliveries()
		for i := len(ds) - 1; i >= 0; i-- {
			d := ds[i]
			if d.Event != a.Event || (a.EvAction != "" && d.Action != a.EvAction) ||
				d.Redelivery || strings.EqualFold(d.Sender, p.bot) {
				continue
			}
			if err := gh.Redeliver(d.ID); err != nil {
				return "", err
			}
			about := ""
			if n := payloadNumber(d.Payload); n > 0 {
				about = fmt.Sprintf(" on #%d", n)
			}
			return fmt.Sprintf("(delivery %s: %s by %s%s)", shortID(d.ID), eventName(d.Event, d.Action), d.Sender, about), nil
		}
		return "", fmt.Errorf("no %s webhook from a person was sent yet", eventName(a.Event, a.EvAction))
	case ReportCheckRun:
		v, _ := gh.Issue(repo, a.Number)
		status, conclusion := "completed", a.Status
		if a.Status == "pending" {
			status, conclusion = "in_progress", ""
		}
		for _, name := range a.Checks {
			gh.CheckRun(repo, v.HeadSHA, name, status, conclusion, "")
		}
		return "(head " + short(v.HeadSHA) + ")", nil
	case PostStatus:
		v, _ := gh.Issue(repo, a.Number)
		for _, name := range a.Checks {
			gh.SetStatusBy(repo, v.HeadSHA, a.Actor, name, a.Status, "")
		}
		return "(head " + short(v.HeadSHA) + ")", nil
	case CreateMilestone:
		if m := gh.CreateMilestone(repo, a.Actor, a.Milestone); m > 0 {
			p.milestones[a.Milestone] = m
		}
	case SetMilestone:
		gh.SetMilestone(repo, a.Number, a.Actor, p.milestones[a.Milestone])
	case BlockedBy:
		gh.AddBlockedBy(repo, a.Number, a.Actor, repo, a.Blocker)
	case ClearMilestone:
		if v, _ := gh.Issue(repo, a.Number); v.Milestone == 0 {
			return "", fmt.Errorf("#%d is in no milestone", a.Number)
		}
		gh.SetMilestone(repo, a.Number, a.Actor, 0)
	case CloseMilestone, ReopenMilestone:
		m := p.milestones[a.Milestone]
		ms, ok := gh.Milestone(repo, m)
		if !ok {
			return "", fmt.Errorf("milestone %q does not exist", a.Milestone)
		}
		if a.Kind == CloseMilestone {
			if ms.State == "closed" {
				return "", fmt.Errorf("milestone %q is already closed", a.Milestone)
			}
			gh.CloseMilestone(repo, m, a.Actor)
		} else {
			if ms.State == "open" {
				return "", fmt.Errorf("milestone %q is already open", a.Milestone)
			}
			gh.ReopenMilestone(repo, m, a.Actor)
		}
	default:
		return "", fmt.Errorf("unknown action %q", a.Kind)
	}
	return "", nil
}

func (p *player) numbered(what string, got, want int) error {
	if got == 0 {
		return nil // a misuse: reported from gh.Err
	}
	if got != want {
		hint := "issues and PRs share one sequence"
		if len(p.milestones) > 0 {
			hint += "; countersign opens a goal issue for each milestone"
		}
		return fmt.Errorf("GitHub numbered the %s #%d, but the scenario says #%d (%s)", what, got, want, hint)
	}
	return nil
}

// subject is the issue whose state a failed action shows: the one acted on,
// or the goal issue of the milestone acted on (0: none).
func (p *player) subject(a *Action) int {
	title := a.Goal
	if a.Kind == CloseMilestone || a.Kind == ReopenMilestone || a.Kind == CreateMilestone {
		title = a.Milestone
	}
	if title != "" {
		n, _ := p.goalIssue(title)
		return n
	}
	return a.Number
}

// goalIssue is the goal issue of the milestone the scenario created as
// title: the bot's issue in it whose body starts with the goal marker.
func (p *player) goalIssue(title string) (int, error) {
	m, ok := p.milestones[title]
	if !ok {
		return 0, fmt.Errorf("milestone %q was not created", title)
	}
	for _, n := range p.gh.IssueNumbers(p.repo) {
		if v, ok := p.gh.Issue(p.repo, n); ok && p.isGoal(v) && v.Milestone == m {
			return n, nil
		}
	}
	return 0, fmt.Errorf("milestone %q has no goal issue (countersign opens one for each milestone)", title)
}

// isGoal reports whether v is a goal issue: opened by the bot, its body a
// goal dashboard.
func (p *player) isGoal(v githubtest.IssueView) bool {
	return !v.IsPR && strings.EqualFold(v.User, p.bot) && templates.IsGoal(v.Body)
}

// ref names issue n in the timeline: "#3", or "goal #1" for a goal issue.
func (p *player) ref(n int, v githubtest.IssueView) string {
	if p.isGoal(v) {
		return fmt.Sprintf("goal #%d", n)
	}
	return fmt.Sprintf("#%d", n)
}

func commitMessage(title string, coAuthors []string) string {
	if len(coAuthors) == 0 {
		return title
	}
	var b strings.Builder
	b.WriteString(title)
	b.WriteString("\n")
	for _, u := range coAuthors {
		if strings.Contains(u, "<") { // "Name <email>", as written
			fmt.Fprintf(&b, "\nCo-authored-by: %s", u)
			continue
		}
		fmt.Fprintf(&b, "\nCo-authored-by: %s <%s@users.noreply.github.com>", u, u)
	}
	return b.String()
}

// ---- what GitHub looks like ----

type snapshot map[int]issueSnap

type issueSnap struct {
	view  githubtest.IssueView
	check string // CheckName's status on a PR's head ("none" if none)
}

func (p *player) snapshot() snapshot {
	s := snapshot{}
	for _, n := range p.gh.IssueNumbers(p.repo) {
		v, ok := p.gh.Issue(p.repo, n)
		if !ok {
			continue
		}
		is := issueSnap{view: v}
		if v.IsPR {
			is.check = p.checkStatus(v.HeadSHA)
		}
		s[n] = is
	}
	return s
}

// milestoneStates are the states (open|closed) of the milestones the
// scenario created, by number.
func (p *player) milestoneStates() map[int]string {
	out := map[int]string{}
	for _, m := range p.milestones {
		if ms, ok := p.gh.Milestone(p.repo, m); ok {
			out[m] = ms.State
		}
	}
	return out
}

// milestoneTitles are the titles of the milestones the scenario created, in
// the order of their numbers.
func (p *player) milestoneTitles() []string {
	titles := make([]string, 0, len(p.milestones))
	for t := range p.milestones {
		titles = append(titles, t)
	}
	sort.Slice(titles, func(i, j int) bool { return p.milestones[titles[i]] < p.milestones[titles[j]] })
	return titles
}

// checkStatus is the status of countersign's check run on sha: its
// conclusion once completed, else its status; "none" if there is none.
func (p *player) checkStatus(sha string) string {
	status := "none"
	for _, cr := range p.gh.CheckRuns(p.repo, sha) {
		if cr.Name != CheckName || cr.App != p.slug {
			continue
		}
		if cr.Status == "completed" {
			status = cr.Conclusion
		} else {
			status = cr.Status
		}
	}
	return status
}

// changes writes what changed on GitHub during one action.
func (p *player) changes(a *Action, before, after snapshot, ds []githubtest.SentWebhook) {
	botDid := map[int][]string{}   // issue -> "issues.reopened", ...
	botMsDid := map[int][]string{} // milestone -> "milestone.opened", ...
	for _, d := range ds {
		if !strings.EqualFold(d.Sender, p.bot) {
			continue
		}
		switch d.Event {
		case "issues":
			if n := payloadNumber(d.Payload); n > 0 {
				botDid[n] = append(botDid[n], d.Action)
			}
		case "milestone":
			if m := payloadMilestone(d.Payload); m > 0 {
				botMsDid[m] = append(botMsDid[m], d.Action)
			}
		}
	}
	p.milestoneChanges(a, p.baseMs, p.milestoneStates(), botMsDid)
	nums := make([]int, 0, len(after))
	for n := range after {
		nums = append(nums, n)
	}
	sort.Ints(nums)
	for _, n := range nums {
		b, existed := before[n]
		af := after[n]
		ref := p.ref(n, af.view)
		if !existed {
			switch {
			case (a.Kind == OpenIssue || a.Kind == OpenPR) && a.Number == n:
				b = issueSnap{view: githubtest.IssueView{Number: n, State: "open", IsPR: af.view.IsPR, Draft: af.view.Draft}, check: "none"}
				if af.view.IsPR {
					b.view.HeadSHA = af.view.HeadSHA
				}
			case p.isGoal(af.view) && af.view.Milestone != 0:
				p.linef("%s opened by %s for milestone %q: %q", ref, af.view.User, af.view.MilestoneTitle, af.view.Title)
				b = issueSnap{view: githubtest.IssueView{Number: n, State: "open", Milestone: af.view.Milestone}, check: "none"}
			default:
				p.linef("%s opened by %s: %q", ref, af.view.User, af.view.Title)
				b = issueSnap{view: githubtest.IssueView{Number: n, State: "open"}, check: "none"}
			}
		}
		p.stateChange(a, n, ref, b, af, botDid[n])
		p.issueMilestoneChange(a, n, ref, b, af)
		p.labelChange(a, n, ref, b, af)
		p.assigneeChange(a, n, ref, b, af)
		p.dashboardChange(ref, b, af)
		p.commentChanges(ref, b, af)
		if af.view.IsPR && (af.check != b.check || af.view.HeadSHA != b.view.HeadSHA) && !(af.check == "none" && b.check == "none") {
			if af.view.HeadSHA != b.view.HeadSHA && af.check == "none" {
				p.linef("check %s on #%d: none on the new head %s", CheckName, n, short(af.view.HeadSHA))
			} else {
				p.linef("check %s on #%d: %s", CheckName, n, af.check)
			}
		}
	}
}

// milestoneChanges writes the milestones closed or reopened during the
// action, other than by the action itself, and closes or reopens undone.
func (p *player) milestoneChanges(a *Action, before, after map[int]string, bot map[int][]string) {
	for _, title := range p.milestoneTitles() {
		m := p.milestones[title]
		b, af := before[m], after[m]
		if b == "" || af == "" {
			continue // created by this action: its line says so
		}
		target := a.Milestone == title && (a.Kind == CloseMilestone || a.Kind == ReopenMilestone)
		switch {
		case slices.Contains(bot[m], "opened") && af == "open":
			p.linef("milestone %q reopened by %s", title, p.slug)
		case slices.Contains(bot[m], "closed") && af == "closed":
			p.linef("milestone %q closed by %s", title, p.slug)
		case af != b:
			if !target {
				if af == "closed" {
					p.linef("milestone %q closed", title)
				} else {
					p.linef("milestone %q reopened", title)
				}
			}
		case target && a.Kind == CloseMilestone && af == "open":
			p.linef("milestone %q is open again", title)
		case target && a.Kind == ReopenMilestone && af == "closed":
			p.linef("milestone %q is closed again", title)
		}
	}
}

func (p *player) stateChange(a *Action, n int, ref string, b, af issueSnap, bot []string) {
	if slices.Contains(bot, "reopened") && af.view.State == "open" {
		p.linef("%s reopened by %s", ref, p.slug)
		return
	}
	if slices.Contains(bot, "closed") && af.view.State == "closed" {
		p.linef("%s closed by %s", ref, p.slug)
		return
	}
	target := a.Number == n && (a.Kind == CloseIssue || a.Kind == ReopenIssue || a.Kind == MergePR)
	switch {
	case af.view.Merged && !b.view.Merged:
		if !target {
			p.linef("%s merged", ref)
		}
	case af.view.State != b.view.State:
		if !target {
			if af.view.State == "closed" {
				p.linef("%s closed", ref)
			} else {
				p.linef("%s reopened", ref)
			}
		}
	case target && a.Kind == CloseIssue && af.view.State == "open":
		p.linef("%s is open again", ref)
	case target && a.Kind == ReopenIssue && af.view.State == "closed":
		p.linef("%s is closed again", ref)
	}
}

// issueMilestoneChange writes a change of the issue's milestone the action
// did not make.
func (p *player) issueMilestoneChange(a *Action, n int, ref string, b, af issueSnap) {
	if af.view.Milestone == b.view.Milestone {
		return
	}
	if a.Number == n && ((a.Kind == SetMilestone && af.view.Milestone == p.milestones[a.Milestone]) ||
		(a.Kind == ClearMilestone && af.view.Milestone == 0)) {
		return // just what the action did
	}
	if af.view.Milestone == 0 {
		p.linef("%s milestone: (none)", ref)
		return
	}
	p.linef("%s milestone: %q", ref, af.view.MilestoneTitle)
}

func (p *player) labelChange(a *Action, n int, ref string, b, af issueSnap) {
	intended := b.view.Labels
	switch {
	case a.Number == n && (a.Kind == AddLabels || a.Kind == RemoveLabels):
		intended = applyLabels(b.view.Labels, a)
	case a.Kind == RenameLabel || a.Kind == DeleteLabel:
		intended = repoLabelApplied(b.view.Labels, a)
	}
	switch {
	case !slices.Equal(af.view.Labels, b.view.Labels):
		p.linef("%s labels: %s", ref, list(af.view.Labels))
	case !slices.Equal(intended, b.view.Labels):
		p.linef("%s labels: %s again (%s reverted %s's change)", ref, list(af.view.Labels), p.slug, a.Actor)
	}
}

// repoLabelApplied is an issue's labels after the rename or deletion of a
// repository label.
func repoLabelApplied(ls []string, a *Action) []string {
	var out []string
	for _, l := range ls {
		switch {
		case !strings.EqualFold(l, a.Label):
			out = append(out, l)
		case a.Kind == RenameLabel:
			out = append(out, a.NewName)
		}
	}
	sort.Strings(out)
	return out
}

func applyLabels(ls []string, a *Action) []string {
	out := slices.Clone(ls)
	for _, l := range a.Labels {
		i := slices.IndexFunc(out, func(x string) bool { return strings.EqualFold(x, l) })
		if a.Kind == AddLabels && i < 0 {
			out = append(out, l)
		}
		if a.Kind == RemoveLabels && i >= 0 {
			out = slices.Delete(out, i, i+1)
		}
	}
	sort.Strings(out)
	return out
}

func (p *player) assigneeChange(a *Action, n int, ref string, b, af issueSnap) {
	if sameSet(af.view.Assignees, b.view.Assignees) {
		return
	}
	if a.Number == n && (a.Kind == AssignUsers || a.Kind == UnassignUsers) {
		want := slices.Clone(b.view.Assignees)
		for _, u := range a.Users {
			i := slices.IndexFunc(want, func(x string) bool { return strings.EqualFold(x, u) })
			if a.Kind == AssignUsers && i < 0 {
				want = append(want, u)
			}
			if a.Kind == UnassignUsers && i >= 0 {
				want = slices.Delete(want, i, i+1)
			}
		}
		if sameSet(af.view.Assignees, want) {
			return // just what the action did
		}
	}
	p.linef("%s assignees: %s", ref, list(af.view.Assignees))
}

// dashboardChange writes the goal dashboard's state line when it changed.
func (p *player) dashboardChange(ref string, b, af issueSnap) {
	if !p.isGoal(af.view) || b.view.Body == af.view.Body {
		return
	}
	old := ""
	if p.isGoal(b.view) {
		old = goalSummary(b.view.Body)
	}
	if now := goalSummary(af.view.Body); now != old {
		p.linef("dashboard on %s: %s", ref, now)
	}
}

func (p *player) commentChanges(ref string, b, af issueSnap) {
	old := map[int64]string{}
	for _, c := range b.view.Comments {
		old[c.ID] = c.Body
	}
	for _, c := range af.view.Comments {
		if !strings.EqualFold(c.User, p.bot) {
			continue
		}
		prev, existed := old[c.ID]
		switch {
		case !existed && isCard(c.Body):
			p.linef("%s posted the task card on %s: %s", p.slug, ref, cardSummary(c.Body))
		case !existed:
			p.linef("%s commented on %s:", p.slug, ref)
			for _, l := range replyLines(c.Body, 14) {
				p.linef("    %s", l)
			}
		case prev != c.Body && isCard(c.Body):
			if news := cardNews(prev, c.Body); news != "" {
				p.linef("card on %s updated: %s (%s)", ref, cardSummary(c.Body), news)
			} else {
				p.linef("card on %s updated: %s", ref, cardSummary(c.Body))
			}
		case prev != c.Body:
			p.linef("%s edited its comment on %s", p.slug, ref)
		}
	}
}

func (p *player) linef(format string, args ...any) {
	fmt.Fprintln(p.out, strings.TrimRight("    "+fmt.Sprintf(format, args...), " "))
}

// ---- expectations ----

func (p *player) check(st *Step) error {
	e := st.Expect
	if e.Kind != ExpectReply || e.Not {
		p.group = nil
	}
	if e.Milestone != "" {
		return p.checkMilestone(st)
	}
	if e.Kind == ExpectRepoLabel {
		return p.checkRepoLabel(st)
	}
	n, ref := e.Number, fmt.Sprintf("#%d", e.Number)
	if e.Goal != "" {
		var err error
		if n, err = p.goalIssue(e.Goal); err != nil {
			return p.fail(st, err.Error(), 0)
		}
		ref = fmt.Sprintf("goal #%d", n)
	}
	v, ok := p.gh.Issue(p.repo, n)
	if !ok {
		return p.fail(st, fmt.Sprintf("%s does not exist", ref), 0)
	}
	if e.PR && !v.IsPR {
		return p.fail(st, fmt.Sprintf("%s is not a pull request", ref), n)
	}
	switch e.Kind {
	case ExpectBoard:
		b, err := p.board()
		if err != nil {
			return p.fail(st, err.Error(), n)
		}
		got, on := p.gh.BoardValue(b.org, b.number, p.repo, n, b.field)
		switch {
		case e.Not && on:
			return p.fail(st, fmt.Sprintf("%s is on the board (at %q)", ref, got), n)
		case !e.Not && !on:
			return p.fail(st, fmt.Sprintf("%s is not on the board", ref), n)
		case !e.Not && got != e.State:
			return p.fail(st, fmt.Sprintf("%s is on the board at %q", ref, got), n)
		}
	case ExpectState:
		var states []string
		for _, l := range v.Labels {
			if strings.HasPrefix(l, "state:") {
				states = append(states, l)
			}
		}
		if len(states) != 1 || states[0] != "state:"+e.State {
			got := "no state label"
			if len(states) > 0 {
				got = strings.Join(states, " and ")
			}
			return p.fail(st, fmt.Sprintf("want exactly state:%s, got %s", e.State, got), n)
		}
	case ExpectLabeled:
		for _, l := range e.Labels {
			has := slices.ContainsFunc(v.Labels, func(x string) bool { return strings.EqualFold(x, l) })
			if has == e.Not {
				if e.Not {
					return p.fail(st, fmt.Sprintf("%s is labeled %s", ref, l), n)
				}
				return p.fail(st, fmt.Sprintf("%s is not labeled %s", ref, l), n)
			}
		}
	case ExpectOpen, ExpectClosed:
		want := "open"
		if e.Kind == ExpectClosed {
			want = "closed"
		}
		if v.State != want {
			return p.fail(st, fmt.Sprintf("%s is %s", ref, v.State), n)
		}
	case ExpectAssigned:
		for _, u := range e.Users {
			if !slices.ContainsFunc(v.Assignees, func(x string) bool { return strings.EqualFold(x, u) }) {
				return p.fail(st, fmt.Sprintf("%s is not assigned (assignees: %s)", u, list(v.Assignees)), n)
			}
		}
	case ExpectCheck:
		if e.Group {
			sha := ""
			for _, g := range p.gh.MergeQueue(p.repo) {
				if g.PR == n {
					sha = g.HeadSHA
				}
			}
			if got := "none"; sha == "" && e.Status != got {
				return p.fail(st, fmt.Sprintf("%s is not in the merge queue", ref), n)
			}
			if got := p.checkStatus(sha); sha != "" && got != e.Status {
				return p.fail(st, fmt.Sprintf("%s on the merge-queue group %s of %s is %s", CheckName, short(sha), ref, got), n)
			}
			break
		}
		if got := p.checkStatus(v.HeadSHA); got != e.Status {
			return p.fail(st, fmt.Sprintf("%s on the head %s of %s is %s", CheckName, short(v.HeadSHA), ref, got), n)
		}
	case ExpectGoalState:
		var states []string
		for _, l := range v.Labels {
			if strings.HasPrefix(l, "goal:") {
				states = append(states, l)
			}
		}
		if !slices.Contains(v.Labels, "goal") || len(states) != 1 || states[0] != "goal:"+e.State {
			return p.fail(st, fmt.Sprintf("want goal and exactly goal:%s, got %s", e.State, list(v.Labels)), n)
		}
	case ExpectGoal:
		if !containsFold(v.Body, e.Text) {
			return p.fail(st, fmt.Sprintf("the dashboard on %s does not contain %q", ref, e.Text), n)
		}
	case ExpectCard:
		cards := 0
		var found bool
		for _, c := range v.Comments {
			if strings.EqualFold(c.User, p.bot) && isCard(c.Body) {
				cards++
				found = found || containsFold(c.Body, e.Text)
			}
		}
		if e.Not {
			if cards > 0 {
				return p.fail(st, fmt.Sprintf("%s has a task card", ref), n)
			}
			return nil
		}
		if cards == 0 {
			return p.fail(st, fmt.Sprintf("%s has no task card", ref), n)
		}
		if !found {
			return p.fail(st, fmt.Sprintf("the card does not contain %q", e.Text), n)
		}
	case ExpectReplies:
		got := len(p.newReplies(n))
		if got > e.Count || (!e.AtMost && got < e.Count) {
			want := fmt.Sprint(e.Count)
			if e.AtMost {
				want = "at most " + want
			}
			return p.fail(st, fmt.Sprintf("%s replied %s on %s since the previous action began, want %s",
				p.slug, plural(got, "time"), ref, want), n)
		}
	case ExpectReply:
		all := p.newReplies(n)
		if e.Not {
			for _, c := range all {
				if e.Text == "" {
					return p.fail(st, fmt.Sprintf("%s replied on %s since the previous action", p.slug, ref), n)
				}
				if containsFold(c.Body, e.Text) {
					return p.fail(st, fmt.Sprintf("a new reply on %s contains %q", ref, e.Text), n)
				}
			}
			return nil
		}
		cands, grouped := all, p.group != nil && p.group.number == n
		if grouped {
			cands = p.group.candidates
		}
		var match []githubtest.CommentView
		for _, c := range cands {
			if containsFold(c.Body, e.Text) {
				match = append(match, c)
			}
		}
		p.group = &replyGroup{number: n, candidates: match}
		if len(match) == 0 {
			switch {
			case len(all) == 0:
				return p.fail(st, fmt.Sprintf("%s did not reply on %s since the previous action", p.slug, ref), n)
			case grouped:
				return p.fail(st, fmt.Sprintf("no single new reply on %s contains %q and the text the expect reply lines above ask for", ref, e.Text), n)
			default:
				return p.fail(st, fmt.Sprintf("no new reply on %s contains %q", ref, e.Text), n)
			}
		}
	}
	return nil
}

// checkMilestone checks "expect milestone "Title" open|closed".
func (p *player) checkMilestone(st *Step) error {
	e := st.Expect
	want := "open"
	if e.Kind == ExpectClosed {
		want = "closed"
	}
	ms, ok := p.gh.Milestone(p.repo, p.milestones[e.Milestone])
	if !ok {
		return p.fail(st, fmt.Sprintf("milestone %q does not exist", e.Milestone), 0)
	}
	if ms.State == want {
		return nil
	}
	g, _ := p.goalIssue(e.Milestone)
	err := p.fail(st, fmt.Sprintf("milestone %q is %s", e.Milestone, ms.State), g).(*PlayError)
	line := fmt.Sprintf("  what GitHub shows for milestone %q: %s; %d open and %d closed issues", ms.Title, ms.State, ms.OpenIssues, ms.ClosedIssues)
	err.Seen = strings.TrimRight(line+"\n"+err.Seen, "\n")
	return err
}

// checkRepoLabel checks "expect repository label NAME present|absent".
func (p *player) checkRepoLabel(st *Step) error {
	e := st.Expect
	labels := p.gh.RepoLabels(p.repo)
	var names []string
	var found *githubtest.LabelView
	for i, l := range labels {
		names = append(names, l.Name)
		if strings.EqualFold(l.Name, e.Label) {
			found = &labels[i]
		}
	}
	fail := func(msg string) error {
		err := p.fail(st, msg, 0).(*PlayError)
		err.Seen = "  repository labels: " + list(names)
		return err
	}
	switch {
	case e.Not && found != nil:
		return fail(fmt.Sprintf("the repository has a label %s", found.Name))
	case !e.Not && found == nil:
		return fail(fmt.Sprintf("the repository has no label %s", e.Label))
	case !e.Not && e.Color != "" && !strings.EqualFold(found.Color, e.Color):
		return fail(fmt.Sprintf("label %s has colour %s", found.Name, found.Color))
	}
	return nil
}

// newReplies are the bot's comments on n, other than task cards, posted
// since the previous action began.
func (p *player) newReplies(n int) []githubtest.CommentView {
	old := map[int64]bool{}
	for _, c := range p.base[n].view.Comments {
		old[c.ID] = true
	}
	var out []githubtest.CommentView
	for _, c := range p.gh.Comments(p.repo, n) {
		if strings.EqualFold(c.User, p.bot) && !isCard(c.Body) && !old[c.ID] {
			out = append(out, c)
		}
	}
	return out
}

// seen describes issue n for a failure message: state, labels, assignees,
// checks, the card and the bot's recent comments.
func (p *player) seen(n int) string {
	v, ok := p.gh.Issue(p.repo, n)
	if !ok {
		return ""
	}
	var b strings.Builder
	kind := "issue"
	if v.IsPR {
		kind = "PR"
	}
	goal := p.isGoal(v)
	if goal {
		kind = "goal issue"
	}
	fmt.Fprintf(&b, "  what GitHub shows for %s #%d %q:\n", kind, n, v.Title)
	fmt.Fprintf(&b, "    %s; labels: %s; assignees: %s\n", v.State, list(v.Labels), list(v.Assignees))
	if v.IsPR {
		fmt.Fprintf(&b, "    head %s; %s: %s; draft: %v\n", short(v.HeadSHA), CheckName, p.checkStatus(v.HeadSHA), v.Draft)
	}
	if goal {
		fmt.Fprintf(&b, "    milestone %q; dashboard: %s\n", v.MilestoneTitle, goalSummary(v.Body))
		for _, part := range []struct{ header, name string }{
			{"| task | title", "task"}, {"| # | when", "rejection"}, {"| when | change", "history"},
		} {
			rows := tableRows(v.Body, part.header)
			if len(rows) > 6 {
				fmt.Fprintf(&b, "      (%d earlier %s rows)\n", len(rows)-6, part.name)
				rows = rows[len(rows)-6:]
			}
			for _, r := range rows {
				fmt.Fprintf(&b, "      %s: %s\n", part.name, strings.TrimRight(strings.Join(r, " · "), " ·"))
			}
		}
	}
	var bot []githubtest.CommentView
	for _, c := range v.Comments {
		if strings.EqualFold(c.User, p.bot) {
			if isCard(c.Body) {
				fmt.Fprintf(&b, "    card: %s\n", cardSummary(c.Body))
				for _, l := range cardHistory(c.Body, 4) {
					fmt.Fprintf(&b, "      %s\n", l)
				}
				continue
			}
			bot = append(bot, c)
		}
	}
	newSince := map[int64]bool{}
	for _, c := range p.newReplies(n) {
		newSince[c.ID] = true
	}
	switch {
	case len(bot) == 0 && goal:
		fmt.Fprintf(&b, "    no comments by %s\n", p.bot)
	case len(bot) == 0:
		fmt.Fprintf(&b, "    no comments by %s other than the card\n", p.bot)
	}
	if len(bot) > 3 {
		fmt.Fprintf(&b, "    (%d older comments by %s)\n", len(bot)-3, p.bot)
		bot = bot[len(bot)-3:]
	}
	for _, c := range bot {
		when := "earlier"
		if newSince[c.ID] {
			when = "since the previous action"
		}
		fmt.Fprintf(&b, "    %s commented (%s):\n", p.slug, when)
		for _, l := range replyLines(c.Body, 10) {
			fmt.Fprintln(&b, strings.TrimRight("      "+l, " "))
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func (p *player) summary(expects int) {
	fmt.Fprintf(p.out, "\nFinal state of %s:\n", p.repo)
	w := tabwriter.NewWriter(p.out, 0, 4, 2, ' ', 0)
	for _, n := range p.gh.IssueNumbers(p.repo) {
		v, ok := p.gh.Issue(p.repo, n)
		if !ok {
			continue
		}
		state := v.State
		if v.Merged {
			state = "merged"
		}
		if v.IsPR {
			fmt.Fprintf(w, "  PR #%d\t%s\t%s: %s\t%s\n", n, state, CheckName, p.checkStatus(v.HeadSHA), v.Title)
			continue
		}
		fmt.Fprintf(w, "  #%d\t%s\t%s\t%s\n", n, state, list(v.Labels), v.Title)
	}
	for _, title := range p.milestoneTitles() {
		if ms, ok := p.gh.Milestone(p.repo, p.milestones[title]); ok {
			fmt.Fprintf(w, "  milestone %d\t%s\t%d open, %d closed issues\t%s\n", ms.Number, ms.State, ms.OpenIssues, ms.ClosedIssues, ms.Title)
		}
	}
	w.Flush()
	fmt.Fprintf(p.out, "\n%s, %s met.\n", plural(p.actions, "action"), plural(expects, "expectation"))
}

// ---- text helpers ----

func isCard(body string) bool { return strings.HasPrefix(body, cardPrefix) }

// cardSummary is the card's state line, without Markdown: "State: review ·
// Attempt: 1".
func cardSummary(body string) string { return stateLine(body, 100) }

// goalSummary is a goal dashboard's state line, without Markdown: "State:
// active · milestone open · 1 of 3 tasks verified".
func goalSummary(body string) string { return stateLine(body, 160) }

// stateLine is the first line after the marker line that mentions the state
// (else the first line), without Markdown, at most maxLen characters.
func stateLine(body string, maxLen int) string {
	lines := strings.Split(body, "\n")
	var first string
	for _, l := range lines[1:] {
		t := plain(l)
		if t == "" || strings.HasPrefix(strings.TrimSpace(l), "#") || strings.HasPrefix(t, "<!--") {
			continue
		}
		if first == "" {
			first = t
		}
		if strings.Contains(strings.ToLower(t), "state") {
			return oneLine(t, maxLen)
		}
	}
	if first == "" {
		return "(empty card)"
	}
	return oneLine(first, maxLen)
}

// cardHistory is the last n rows of the card's history table (the first
// table with a "when" or "change" column), as plain text.
func cardHistory(body string, n int) []string {
	rows := historyRows(body)
	if len(rows) > n {
		rows = rows[len(rows)-n:]
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = "history: " + strings.Join(r, " · ")
	}
	return out
}

// historyRows are the cells of the card's history table, row by row.
func historyRows(body string) [][]string {
	var rows [][]string
	inHistory := false
	for _, l := range strings.Split(body, "\n") {
		t := strings.TrimSpace(l)
		if !strings.HasPrefix(t, "|") {
			if inHistory && len(rows) > 0 {
				break
			}
			continue
		}
		if strings.Trim(t, "|-: ") == "" {
			continue
		}
		lower := strings.ToLower(t)
		if !inHistory {
			inHistory = strings.Contains(lower, "| change") || strings.Contains(lower, "| when")
			continue
		}
		cells := strings.Split(strings.Trim(t, "|"), "|")
		for i := range cells {
			cells[i] = plain(cells[i])
		}
		rows = append(rows, cells)
	}
	return rows
}

// tableRows are the cells of the first table in body whose header row starts
// with header (lower case), row by row.
func tableRows(body, header string) [][]string {
	var rows [][]string
	in := false
	for _, l := range strings.Split(body, "\n") {
		t := strings.TrimSpace(l)
		if !strings.HasPrefix(t, "|") {
			if in {
				break
			}
			continue
		}
		if !in {
			in = strings.HasPrefix(strings.ToLower(t), header)
			continue
		}
		if strings.Trim(t, "|-: ") == "" {
			continue
		}
		cells := strings.Split(strings.Trim(t, "|"), "|")
		for i := range cells {
			cells[i] = plain(cells[i])
		}
		rows = append(rows, cells)
	}
	return rows
}

// cardNews is the last history entry a card update added ("" if none): its
// last cell, the why.
func cardNews(before, after string) string {
	old, rows := historyRows(before), historyRows(after)
	if len(rows) <= len(old) {
		return ""
	}
	last := rows[len(rows)-1]
	return oneLine(last[len(last)-1], 110)
}

// replyLines is a comment as indented plain lines: hidden HTML comment lines
// dropped, runs of blank lines collapsed, at most max lines.
func replyLines(body string, maxLines int) []string {
	var out []string
	blank := false
	for _, l := range strings.Split(strings.ReplaceAll(body, "\r", ""), "\n") {
		t := strings.TrimRight(l, " \t")
		if s := strings.TrimSpace(t); strings.HasPrefix(s, "<!--") && strings.HasSuffix(s, "-->") {
			continue
		}
		if t == "" {
			blank = len(out) > 0
			continue
		}
		if blank {
			out = append(out, "")
			blank = false
		}
		out = append(out, t)
	}
	if len(out) > maxLines {
		more := len(out) - maxLines + 1
		out = append(out[:maxLines-1], fmt.Sprintf("… (%d more lines)", more))
	}
	return out
}

// plain strips Markdown emphasis and code marks from a line.
func plain(s string) string {
	s = strings.TrimSpace(s)
	for _, m := range []string{"**", "__", "`"} {
		s = strings.ReplaceAll(s, m, "")
	}
	return strings.TrimSpace(s)
}

func oneLine(s string, maxLen int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > maxLen {
		s = string(r[:maxLen-1]) + "…"
	}
	return s
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

func list(ss []string) string {
	if len(ss) == 0 {
		return "(none)"
	}
	return strings.Join(ss, ", ")
}

func sameSet(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	for i := range x {
		x[i] = strings.ToLower(x[i])
	}
	for i := range y {
		y[i] = strings.ToLower(y[i])
	}
	sort.Strings(x)
	sort.Strings(y)
	return slices.Equal(x, y)
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// payloadMilestone is the number of the milestone a milestone webhook
// payload is about.
func payloadMilestone(payload []byte) int {
	var env struct {
		Milestone *struct {
			Number int `json:"number"`
		} `json:"milestone"`
	}
	if json.Unmarshal(payload, &env) != nil || env.Milestone == nil {
		return 0
	}
	return env.Milestone.Number
}

// payloadNumber is the issue or PR number a webhook payload is about.
func payloadNumber(payload []byte) int {
	var env struct {
		Issue *struct {
			Number int `json:"number"`
		} `json:"issue"`
		PullRequest *struct {
			Number int `json:"number"`
		} `json:"pull_request"`
	}
	if json.Unmarshal(payload, &env) != nil {
		return 0
	}
	if env.Issue != nil {
		return env.Issue.Number
	}
	if env.PullRequest != nil {
		return env.PullRequest.Number
	}
	return 0
}

func errCount(err error) int {
	if err == nil {
		return 0
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return len(j.Unwrap())
	}
	return 1
}

func errsSince(err error, n int) []error {
	if err == nil {
		return nil
	}
	all := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		all = j.Unwrap()
	}
	if n >= len(all) {
		return nil
	}
	return all[n:]
}

// boardRef is the board the scenario's configuration names.
type boardRef struct {
	org    string
	number int
	field  string
}

// board is the board the configuration names (board.project, board.field).
func (p *player) board() (boardRef, error) {
	cfg, err := rules.ParseConfig([]byte(p.sc.Config))
	if err != nil || !cfg.Board.On() {
		return boardRef{}, fmt.Errorf("the configuration names no board (board: {project: https://github.com/orgs/ORG/projects/N})")
	}
	pr, err := rules.ParseBoardProject(cfg.Board.Project)
	if err != nil {
		return boardRef{}, err
	}
	return boardRef{org: pr.Org, number: pr.Number, field: cfg.Board.Field}, nil
}

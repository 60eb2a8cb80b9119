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

	"github.com/countersign/countersign/app/githubtest"
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
		bot: rig.GH().BotLogin(), comments: map[string]int64{},
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
	sc        *Scenario
	rig       *Rig
	gh        *githubtest.Server
	repo      string
	out       io.Writer
	bot, slug string
	comments  map[string]int64 // comment name -> id
	base      snapshot         // GitHub before the latest action
	group     *replyGroup      // the run of "expect reply" lines under way
	actions   int
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
	owner, _, _ := strings.Cut(p.repo, "/")
	for _, t := range p.sc.Teams {
		p.gh.AddTeam(t.Org, t.Slug, t.Members...)
	}
	if p.sc.Config != "" {
		p.gh.SetFile(p.repo, ConfigPath, p.sc.Config)
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
	mark := len(p.gh.Deliveries())
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
		return p.fail(st, err.Error(), a.Number)
	}
	if e := errsSince(p.gh.Err(), errs); len(e) > 0 {
		return p.fail(st, "GitHub refused it: "+errors.Join(e...).Error(), a.Number)
	}
	if err := p.settle(ctx, st); err != nil {
		return err
	}
	p.changes(a, p.base, p.snapshot(), p.gh.Deliveries()[mark:])
	return nil
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
			Title: a.Title, Body: body, Draft: a.Draft,
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
		id := gh.Comment(repo, a.Number, a.Actor, a.Body)
		if a.Comment != "" {
			p.comments[a.Comment] = id
		}
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
	case MergePR:
		gh.MergePR(repo, a.Number, a.Actor)
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
		return fmt.Errorf("GitHub numbered the %s #%d, but the scenario says #%d (issues and PRs share one sequence)", what, got, want)
	}
	return nil
}

func commitMessage(title string, coAuthors []string) string {
	if len(coAuthors) == 0 {
		return title
	}
	var b strings.Builder
	b.WriteString(title)
	b.WriteString("\n")
	for _, u := range coAuthors {
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
	botDid := map[int][]string{} // issue -> "issues.reopened", ...
	for _, d := range ds {
		if strings.EqualFold(d.Sender, p.bot) && d.Event == "issues" {
			if n := payloadNumber(d.Payload); n > 0 {
				botDid[n] = append(botDid[n], d.Action)
			}
		}
	}
	nums := make([]int, 0, len(after))
	for n := range after {
		nums = append(nums, n)
	}
	sort.Ints(nums)
	for _, n := range nums {
		b, existed := before[n]
		af := after[n]
		if !existed {
			if (a.Kind == OpenIssue || a.Kind == OpenPR) && a.Number == n {
				b = issueSnap{view: githubtest.IssueView{Number: n, State: "open", IsPR: af.view.IsPR, Draft: af.view.Draft}, check: "none"}
				if af.view.IsPR {
					b.view.HeadSHA = af.view.HeadSHA
				}
			} else {
				p.linef("#%d opened by %s: %q", n, af.view.User, af.view.Title)
				b = issueSnap{view: githubtest.IssueView{Number: n, State: "open"}, check: "none"}
			}
		}
		p.stateChange(a, n, b, af, botDid[n])
		p.labelChange(a, n, b, af)
		p.assigneeChange(a, n, b, af)
		p.commentChanges(n, b, af)
		if af.view.IsPR && (af.check != b.check || af.view.HeadSHA != b.view.HeadSHA) && !(af.check == "none" && b.check == "none") {
			if af.view.HeadSHA != b.view.HeadSHA && af.check == "none" {
				p.linef("check %s on #%d: none on the new head %s", CheckName, n, short(af.view.HeadSHA))
			} else {
				p.linef("check %s on #%d: %s", CheckName, n, af.check)
			}
		}
	}
}

func (p *player) stateChange(a *Action, n int, b, af issueSnap, bot []string) {
	if slices.Contains(bot, "reopened") && af.view.State == "open" {
		p.linef("#%d reopened by %s", n, p.slug)
		return
	}
	if slices.Contains(bot, "closed") && af.view.State == "closed" {
		p.linef("#%d closed by %s", n, p.slug)
		return
	}
	target := a.Number == n && (a.Kind == CloseIssue || a.Kind == ReopenIssue || a.Kind == MergePR)
	switch {
	case af.view.Merged && !b.view.Merged:
		if !target {
			p.linef("#%d merged", n)
		}
	case af.view.State != b.view.State:
		if !target {
			if af.view.State == "closed" {
				p.linef("#%d closed", n)
			} else {
				p.linef("#%d reopened", n)
			}
		}
	case target && a.Kind == CloseIssue && af.view.State == "open":
		p.linef("#%d is open again", n)
	case target && a.Kind == ReopenIssue && af.view.State == "closed":
		p.linef("#%d is closed again", n)
	}
}

func (p *player) labelChange(a *Action, n int, b, af issueSnap) {
	intended := b.view.Labels
	if a.Number == n && (a.Kind == AddLabels || a.Kind == RemoveLabels) {
		intended = applyLabels(b.view.Labels, a)
	}
	switch {
	case !slices.Equal(af.view.Labels, b.view.Labels):
		p.linef("#%d labels: %s", n, list(af.view.Labels))
	case !slices.Equal(intended, b.view.Labels):
		p.linef("#%d labels: %s again (%s reverted %s's change)", n, list(af.view.Labels), p.slug, a.Actor)
	}
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

func (p *player) assigneeChange(a *Action, n int, b, af issueSnap) {
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
	p.linef("#%d assignees: %s", n, list(af.view.Assignees))
}

func (p *player) commentChanges(n int, b, af issueSnap) {
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
			p.linef("%s posted the task card on #%d: %s", p.slug, n, cardSummary(c.Body))
		case !existed:
			p.linef("%s commented on #%d:", p.slug, n)
			for _, l := range replyLines(c.Body, 14) {
				p.linef("    %s", l)
			}
		case prev != c.Body && isCard(c.Body):
			if news := cardNews(prev, c.Body); news != "" {
				p.linef("card on #%d updated: %s (%s)", n, cardSummary(c.Body), news)
			} else {
				p.linef("card on #%d updated: %s", n, cardSummary(c.Body))
			}
		case prev != c.Body:
			p.linef("%s edited its comment on #%d", p.slug, n)
		}
	}
}

func (p *player) linef(format string, args ...any) {
	fmt.Fprintln(p.out, strings.TrimRight("    "+fmt.Sprintf(format, args...), " "))
}

// ---- expectations ----

func (p *player) check(st *Step) error {
	e := st.Expect
	v, ok := p.gh.Issue(p.repo, e.Number)
	if !ok {
		return p.fail(st, fmt.Sprintf("#%d does not exist", e.Number), 0)
	}
	if e.PR && !v.IsPR {
		return p.fail(st, fmt.Sprintf("#%d is not a pull request", e.Number), e.Number)
	}
	if e.Kind != ExpectReply || e.Not {
		p.group = nil
	}
	switch e.Kind {
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
			return p.fail(st, fmt.Sprintf("want exactly state:%s, got %s", e.State, got), e.Number)
		}
	case ExpectLabeled:
		for _, l := range e.Labels {
			has := slices.ContainsFunc(v.Labels, func(x string) bool { return strings.EqualFold(x, l) })
			if has == e.Not {
				if e.Not {
					return p.fail(st, fmt.Sprintf("#%d is labeled %s", e.Number, l), e.Number)
				}
				return p.fail(st, fmt.Sprintf("#%d is not labeled %s", e.Number, l), e.Number)
			}
		}
	case ExpectOpen, ExpectClosed:
		want := "open"
		if e.Kind == ExpectClosed {
			want = "closed"
		}
		if v.State != want {
			return p.fail(st, fmt.Sprintf("#%d is %s", e.Number, v.State), e.Number)
		}
	case ExpectAssigned:
		for _, u := range e.Users {
			if !slices.ContainsFunc(v.Assignees, func(x string) bool { return strings.EqualFold(x, u) }) {
				return p.fail(st, fmt.Sprintf("%s is not assigned (assignees: %s)", u, list(v.Assignees)), e.Number)
			}
		}
	case ExpectCheck:
		if got := p.checkStatus(v.HeadSHA); got != e.Status {
			return p.fail(st, fmt.Sprintf("%s on the head %s of #%d is %s", CheckName, short(v.HeadSHA), e.Number, got), e.Number)
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
		if cards == 0 {
			return p.fail(st, fmt.Sprintf("#%d has no task card", e.Number), e.Number)
		}
		if !found {
			return p.fail(st, fmt.Sprintf("the card does not contain %q", e.Text), e.Number)
		}
	case ExpectReply:
		all := p.newReplies(e.Number)
		if e.Not {
			if len(all) > 0 {
				return p.fail(st, fmt.Sprintf("%s replied on #%d since the previous action", p.slug, e.Number), e.Number)
			}
			return nil
		}
		cands, grouped := all, p.group != nil && p.group.number == e.Number
		if grouped {
			cands = p.group.candidates
		}
		var match []githubtest.CommentView
		for _, c := range cands {
			if containsFold(c.Body, e.Text) {
				match = append(match, c)
			}
		}
		p.group = &replyGroup{number: e.Number, candidates: match}
		if len(match) == 0 {
			switch {
			case len(all) == 0:
				return p.fail(st, fmt.Sprintf("%s did not reply on #%d since the previous action", p.slug, e.Number), e.Number)
			case grouped:
				return p.fail(st, fmt.Sprintf("no single new reply on #%d contains %q and the text the expect reply lines above ask for", e.Number, e.Text), e.Number)
			default:
				return p.fail(st, fmt.Sprintf("no new reply on #%d contains %q", e.Number, e.Text), e.Number)
			}
		}
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
	fmt.Fprintf(&b, "  what GitHub shows for %s #%d %q:\n", kind, n, v.Title)
	fmt.Fprintf(&b, "    %s; labels: %s; assignees: %s\n", v.State, list(v.Labels), list(v.Assignees))
	if v.IsPR {
		fmt.Fprintf(&b, "    head %s; %s: %s; draft: %v\n", short(v.HeadSHA), CheckName, p.checkStatus(v.HeadSHA), v.Draft)
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
	if len(bot) == 0 {
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
	w.Flush()
	fmt.Fprintf(p.out, "\n%s, %s met.\n", plural(p.actions, "action"), plural(expects, "expectation"))
}

// ---- text helpers ----

func isCard(body string) bool { return strings.HasPrefix(body, cardPrefix) }

// cardSummary is the card's state line, without Markdown: "State: review ·
// Attempt: 1".
func cardSummary(body string) string {
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
			return oneLine(t, 100)
		}
	}
	if first == "" {
		return "(empty card)"
	}
	return oneLine(first, 100)
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

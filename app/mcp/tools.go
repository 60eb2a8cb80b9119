package mcp

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/app/mcp/ghread"
	"github.com/countersign/countersign/rules"
)

// ---- inputs and outputs ----

type CreateGoalIn struct {
	Repo        string `json:"repo" jsonschema:"the repository, owner/name"`
	Title       string `json:"title" jsonschema:"the goal's title: the milestone countersign tracks as the goal"`
	Description string `json:"description,omitempty" jsonschema:"what the goal delivers"`
}

type GoalInfo struct {
	Repo   string `json:"repo" jsonschema:"the repository, owner/name"`
	Number int    `json:"number" jsonschema:"the milestone's number"`
	Title  string `json:"title" jsonschema:"the milestone's title"`
	State  string `json:"state,omitempty" jsonschema:"the goal's state from countersign's goal label: open, active, pending-verify or verified"`
}

type CreateGoalOut struct {
	Goal GoalInfo `json:"goal"`
	Note string   `json:"note,omitempty" jsonschema:"what is not done yet, if anything"`
}

type CreateTaskIn struct {
	Repo      string   `json:"repo" jsonschema:"the repository, owner/name"`
	Title     string   `json:"title" jsonschema:"the task's title"`
	Body      string   `json:"body,omitempty" jsonschema:"what is to be done; paths named here shape its verification contract"`
	Assignees []string `json:"assignees,omitempty" jsonschema:"logins of who builds it"`
	Goal      *GoalRef `json:"goal,omitempty" jsonschema:"the goal to put it in: a number is a milestone number; a string is a milestone title (a string of digits means the milestone of that number only when no milestone has it as its title)"`
}

type CreateTaskOut struct {
	Task  string `json:"task" jsonschema:"the new task, owner/repo#N"`
	State string `json:"state" jsonschema:"its state from countersign's label"`
	Note  string `json:"note,omitempty" jsonschema:"what GitHub or countersign did not do, if anything"`
}

type LinkIn struct {
	Task string  `json:"task" jsonschema:"the task, owner/repo#N"`
	Goal GoalRef `json:"goal" jsonschema:"the goal, in the task's repository: a number is a milestone number; a string is a milestone title (a string of digits means the milestone of that number only when no milestone has it as its title)"`
}

type GoalRefOut struct {
	Repo   string `json:"repo"`
	Number int    `json:"number"`
	Title  string `json:"title"`
}

type LinkOut struct {
	Task string     `json:"task"`
	Goal GoalRefOut `json:"goal"`
}

type AssignIn struct {
	Task      string   `json:"task" jsonschema:"the task, owner/repo#N"`
	Assignees []string `json:"assignees" jsonschema:"logins to assign"`
}

type TaskIn struct {
	Task string `json:"task" jsonschema:"the task, owner/repo#N"`
}

type SubmitIn struct {
	Task    string `json:"task" jsonschema:"the task, owner/repo#N"`
	Summary string `json:"summary,omitempty" jsonschema:"what was done (one line)"`
}

type VerifyIn struct {
	Task  string `json:"task" jsonschema:"the task, owner/repo#N"`
	Notes string `json:"notes,omitempty" jsonschema:"what you checked (one line)"`
}

type RejectIn struct {
	Task   string `json:"task" jsonschema:"the task, owner/repo#N"`
	Reason string `json:"reason" jsonschema:"what is wrong, so the builder knows what to fix (required)"`
}

type GoalIn struct {
	Repo string  `json:"repo" jsonschema:"the repository, owner/name"`
	Goal GoalRef `json:"goal" jsonschema:"the goal: a number is a milestone number; a string is a milestone title (a string of digits means the milestone of that number only when no milestone has it as its title)"`
}

type VerifyGoalIn struct {
	Repo  string  `json:"repo" jsonschema:"the repository, owner/name"`
	Goal  GoalRef `json:"goal" jsonschema:"the goal: a number is a milestone number; a string is a milestone title (a string of digits means the milestone of that number only when no milestone has it as its title)"`
	Notes string  `json:"notes,omitempty" jsonschema:"how the integrated result was checked (one line)"`
}

type RejectGoalIn struct {
	Repo   string  `json:"repo" jsonschema:"the repository, owner/name"`
	Goal   GoalRef `json:"goal" jsonschema:"the goal: a number is a milestone number; a string is a milestone title (a string of digits means the milestone of that number only when no milestone has it as its title)"`
	Reason string  `json:"reason" jsonschema:"what fails in the integrated result (required)"`
}

type MyWorkIn struct {
	Repo string `json:"repo,omitempty" jsonschema:"only this repository, owner/name; without it: every repository with a task assigned to you"`
}

// ---- registration ----

// goalRefSchema is a goal reference: a milestone number or title.
var goalRefSchema = &jsonschema.Schema{Types: []string{"integer", "string"}}

func schemaFor[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[GoalRef](): goalRefSchema,
	}})
	if err != nil {
		panic(fmt.Sprintf("schema of %T: %v", *new(T), err))
	}
	return s
}

func tool[In, Out any](srv *sdk.Server, name, desc string, h sdk.ToolHandlerFor[In, Out]) {
	sdk.AddTool(srv, &sdk.Tool{Name: name, Description: desc, InputSchema: schemaFor[In](), OutputSchema: schemaFor[Out]()},
		func(ctx context.Context, req *sdk.CallToolRequest, in In) (*sdk.CallToolResult, Out, error) {
			ctx, cancel := requestScoped(ctx, req)
			defer cancel()
			return h(ctx, req, in)
		})
}

func (s *server) register(srv *sdk.Server) {
	tool(srv, "create_goal", "Create a goal: a milestone in the repository, which countersign tracks with a goal issue and its dashboard.", s.createGoal)
	tool(srv, "create_task", "Create a task: an issue, optionally assigned and put in a goal. Returns its state once countersign tracks it.", s.createTask)
	tool(srv, "link_task_to_goal", "Put a task in a goal (set the issue's milestone).", s.linkTask)
	tool(srv, "assign_task", "Assign people to a task; countersign moves a pending task to assigned.", s.assignTask)
	tool(srv, "start_task", "Start a task assigned to you (/start): assigned → in-progress.", s.startTask)
	tool(srv, "submit_for_review", "Submit a task with no pull request for review (/submit summary): in-progress → review. A task with a pull request is submitted by marking the pull request ready.", s.submitTask)
	tool(srv, "approve_task", "Approve a task you did not build: an approving review of its pull requests, or /approve for a task with none. review → completed.", s.approveTask)
	tool(srv, "verify_task", "Verify a completed task you neither built nor approved (/verify notes): completed → verified, once every criterion of its contract passed.", s.verifyTask)
	tool(srv, "reject_verification", "Send a completed task back to its builders with a reason (/reject reason): completed → in-progress.", s.rejectTask)
	tool(srv, "verify_goal", "Confirm a goal whose tasks are all verified, after testing the integrated result (lead only; /verify-goal notes): pending-verify → verified.", s.verifyGoal)
	tool(srv, "reject_goal", "Send a goal back with a reason (lead only; /reject-goal reason): pending-verify or verified → active. Verified tasks stay verified.", s.rejectGoal)
	tool(srv, "task_status", "A task's state, roles, contract with each criterion's result, attempts, rejections, what it needs next and who may verify it.", s.taskStatus)
	tool(srv, "goal_status", "A goal's state, the count of its tasks in each state, and each task with its state.", s.goalStatus)
	tool(srv, "my_work", "What is assigned to you, what awaits your verification, and what was sent back to you.", s.myWork)
}

// ---- goals and tasks ----

func (s *server) createGoal(ctx context.Context, req *sdk.CallToolRequest, in CreateGoalIn) (*sdk.CallToolResult, CreateGoalOut, error) {
	if err := checkRepo(in.Repo); err != nil {
		return nil, CreateGoalOut{}, err
	}
	if strings.TrimSpace(in.Title) == "" {
		return nil, CreateGoalOut{}, fmt.Errorf("a goal needs a title")
	}
	c, err := s.caller(ctx, req)
	if err != nil {
		return nil, CreateGoalOut{}, err
	}
	m, err := c.gh.CreateMilestone(ctx, in.Repo, in.Title, in.Description)
	if err != nil {
		return nil, CreateGoalOut{}, notVisible(fmt.Sprintf("create the milestone in %s (GitHub answers 404 too when the token may not create milestones there: that takes write access)", in.Repo), err)
	}
	out := CreateGoalOut{Goal: GoalInfo{Repo: in.Repo, Number: m.Number, Title: m.Title}}
	st, err := s.awaitGoalIssue(ctx, c, in.Repo, m.Number)
	if err != nil {
		return nil, out, err
	}
	out.Goal.State = st
	if st == "" {
		out.Note = fmt.Sprintf("countersign had not opened the goal's issue within %s; goal_status will show it", s.opts.Wait)
	}
	return nil, out, nil
}

// awaitGoalIssue waits, bounded, for countersign to open milestone m's goal
// issue, and reads its state ("" if it did not within the wait).
func (s *server) awaitGoalIssue(ctx context.Context, c *caller, repo string, m int) (string, error) {
	var st string
	err := s.poll(ctx, func(ctx context.Context) (bool, error) {
		goal, _, err := ghread.GoalIssues(ctx, c.gh, s.bot(), repo, m)
		if err != nil || goal == nil || ghread.GoalKind.Shown(goal) == ghread.Untracked {
			return false, err
		}
		st, _, err = ghread.Settled(ctx, c.gh, s.bot(), repo, goal, ghread.GoalKind)
		return err == nil, err
	})
	return st, err
}

func (s *server) createTask(ctx context.Context, req *sdk.CallToolRequest, in CreateTaskIn) (*sdk.CallToolResult, CreateTaskOut, error) {
	if err := checkRepo(in.Repo); err != nil {
		return nil, CreateTaskOut{}, err
	}
	if strings.TrimSpace(in.Title) == "" {
		return nil, CreateTaskOut{}, fmt.Errorf("a task needs a title")
	}
	c, err := s.caller(ctx, req)
	if err != nil {
		return nil, CreateTaskOut{}, err
	}
	var m ghread.Milestone
	if in.Goal != nil && !in.Goal.zero() {
		if m, err = s.milestone(ctx, c, in.Repo, *in.Goal); err != nil {
			return nil, CreateTaskOut{}, err
		}
	}
	is, err := c.gh.CreateIssue(ctx, in.Repo, ghread.NewIssue{Title: in.Title, Body: in.Body, Assignees: in.Assignees, Milestone: m.Number})
	if err != nil {
		return nil, CreateTaskOut{}, notVisible("open the task in "+in.Repo, err)
	}
	ref := taskRef{Repo: in.Repo, Number: is.Number}
	out := CreateTaskOut{Task: ref.String()}
	var notes []string
	if missing := missingFrom(is.Assignees, in.Assignees); len(missing) > 0 {
		notes = append(notes, fmt.Sprintf("GitHub did not assign %s (it drops assignees set without push access, and people who cannot be assigned here)", strings.Join(missing, ", ")))
	}
	if m.Number > 0 && is.Milestone != m.Number {
		notes = append(notes, "GitHub did not put it in the goal (it drops a milestone set without push access)")
	}
	want := rules.Pending
	if len(is.Assignees) > 0 {
		want = rules.Assigned
	}
	v, err := s.wait(ctx, c, await{repo: in.Repo, n: is.Number, kind: ghread.TaskKind, before: ghread.Untracked,
		done: func(st string) bool { return st == string(want) }, waitsFor: "countersign to start tracking the task"})
	if err != nil {
		return nil, out, err
	}
	out.State = v.State
	if v.Pending {
		notes = append(notes, v.Reason)
	}
	out.Note = strings.Join(notes, "; ")
	return nil, out, nil
}

// missingFrom are the logins of want not in got (case-insensitive).
func missingFrom(got, want []string) []string {
	var out []string
	for _, w := range want {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.EqualFold(g, strings.TrimPrefix(w, "@")) }) {
			out = append(out, w)
		}
	}
	return out
}

func (s *server) linkTask(ctx context.Context, req *sdk.CallToolRequest, in LinkIn) (*sdk.CallToolResult, LinkOut, error) {
	c, err := s.caller(ctx, req)
	if err != nil {
		return nil, LinkOut{}, err
	}
	ref, _, err := s.task(ctx, c, in.Task)
	if err != nil {
		return nil, LinkOut{}, err
	}
	m, err := s.milestone(ctx, c, ref.Repo, in.Goal)
	if err != nil {
		return nil, LinkOut{}, err
	}
	is, err := c.gh.SetMilestone(ctx, ref.Repo, ref.Number, m.Number)
	if err != nil {
		return nil, LinkOut{}, err
	}
	if is.Milestone != m.Number {
		return nil, LinkOut{}, fmt.Errorf("GitHub did not put %s in milestone %d: setting a milestone takes triage or write access on %s", ref, m.Number, ref.Repo)
	}
	return nil, LinkOut{Task: ref.String(), Goal: GoalRefOut{Repo: ref.Repo, Number: m.Number, Title: m.Title}}, nil
}

func (s *server) assignTask(ctx context.Context, req *sdk.CallToolRequest, in AssignIn) (*sdk.CallToolResult, Verdict, error) {
	if len(in.Assignees) == 0 {
		return nil, Verdict{}, fmt.Errorf("assignees are required: the logins to assign")
	}
	c, err := s.caller(ctx, req)
	if err != nil {
		return nil, Verdict{}, err
	}
	ref, task, err := s.task(ctx, c, in.Task)
	if err != nil {
		return nil, Verdict{}, err
	}
	before, why, err := ghread.Settled(ctx, c.gh, s.bot(), ref.Repo, task, ghread.TaskKind)
	if err != nil {
		return nil, Verdict{}, err
	}
	logins := make([]string, len(in.Assignees))
	for i, a := range in.Assignees {
		logins[i] = strings.TrimPrefix(strings.TrimSpace(a), "@")
	}
	is, err := c.gh.AddAssignees(ctx, ref.Repo, ref.Number, logins)
	if err != nil {
		return nil, Verdict{}, err
	}
	if missing := missingFrom(is.Assignees, logins); len(missing) > 0 {
		return nil, Verdict{Accepted: false, State: before, Reason: fmt.Sprintf(
			"GitHub did not assign %s: assigning takes triage or write access on %s, and only people who can be assigned there can be",
			strings.Join(missing, ", "), ref.Repo)}, nil
	}
	assigned := func(st string) bool {
		return st != string(rules.Pending) && st != ghread.Untracked && st != ghread.Unsettled
	}
	if assigned(before) {
		// GitHub made the assignment; countersign has no state to move:
		// it records the new assignees on its card.
		return nil, Verdict{Accepted: true, State: before}, nil
	}
	waitsFor := "countersign to move the task from pending to assigned"
	if why != "" {
		waitsFor += " (its state is unsettled: " + why + ")"
	}
	v, err := s.wait(ctx, c, await{repo: ref.Repo, n: ref.Number, kind: ghread.TaskKind, before: before, done: assigned, waitsFor: waitsFor})
	return nil, v, err
}

// before is the state an action starts from, as far as its verdict needs it:
// the state is's labels show when that is not the action's state (done), else
// the state countersign set (unsettled when its label is not countersign's).
func (s *server) before(ctx context.Context, c *caller, repo string, is *ghread.Issue, k ghread.Kind, done func(string) bool) (string, error) {
	if st := k.Shown(is); !done(st) {
		return st, nil
	}
	st, _, err := ghread.Settled(ctx, c.gh, s.bot(), repo, is, k)
	return st, err
}

// command posts line on issue is as the caller and waits for the verdict:
// the issue's move (of its kind k of state) to state to, or countersign's
// reply. The state before is read first.
func (s *server) command(ctx context.Context, c *caller, repo string, is *ghread.Issue, line string, k ghread.Kind, to, waitsFor string) (Verdict, error) {
	done := func(st string) bool { return st == to }
	before, err := s.before(ctx, c, repo, is, k, done)
	if err != nil {
		return Verdict{}, err
	}
	cm, err := c.gh.Comment(ctx, repo, is.Number, line)
	if err != nil {
		return Verdict{}, notVisible(fmt.Sprintf("comment on %s#%d", repo, is.Number), err)
	}
	return s.wait(ctx, c, await{repo: repo, n: is.Number, cmd: cm, line: line, kind: k, before: before, done: done, waitsFor: waitsFor})
}

// taskCommand is command on a task, moving it to state to.
func (s *server) taskCommand(ctx context.Context, req *sdk.CallToolRequest, task, line string, to rules.State) (*sdk.CallToolResult, Verdict, error) {
	c, err := s.caller(ctx, req)
	if err != nil {
		return nil, Verdict{}, err
	}
	ref, is, err := s.task(ctx, c, task)
	if err != nil {
		return nil, Verdict{}, err
	}
	cmd, _, _ := strings.Cut(line, " ")
	v, err := s.command(ctx, c, ref.Repo, is, line, ghread.TaskKind, string(to),
		fmt.Sprintf("countersign to answer %s on %s (the task moves to %s, or countersign replies why not)", cmd, ref, to))
	return nil, v, err
}

func withArgs(cmd, args string) string {
	if a := oneLine(args); a != "" {
		return cmd + " " + a
	}
	return cmd
}

func (s *server) startTask(ctx context.Context, req *sdk.CallToolRequest, in TaskIn) (*sdk.CallToolResult, Verdict, error) {
	return s.taskCommand(ctx, req, in.Task, "/start", rules.InProgress)
}

func (s *server) submitTask(ctx context.Context, req *sdk.CallToolRequest, in SubmitIn) (*sdk.CallToolResult, Verdict, error) {
	return s.taskCommand(ctx, req, in.Task, withArgs("/submit", in.Summary), rules.Review)
}

func (s *server) verifyTask(ctx context.Context, req *sdk.CallToolRequest, in VerifyIn) (*sdk.CallToolResult, Verdict, error) {
	return s.taskCommand(ctx, req, in.Task, withArgs("/verify", in.Notes), rules.Verified)
}

func (s *server) rejectTask(ctx context.Context, req *sdk.CallToolRequest, in RejectIn) (*sdk.CallToolResult, Verdict, error) {
	if oneLine(in.Reason) == "" {
		return nil, Verdict{}, fmt.Errorf("a reason is required: say what is wrong, so the builder knows what to fix")
	}
	return s.taskCommand(ctx, req, in.Task, withArgs("/reject", in.Reason), rules.InProgress)
}

// approveTask approves the way countersign counts an approval: an approving
// review of every open pull request linked to the task (as its card
// records them), or /approve for a task with none.
func (s *server) approveTask(ctx context.Context, req *sdk.CallToolRequest, in TaskIn) (*sdk.CallToolResult, Verdict, error) {
	c, err := s.caller(ctx, req)
	if err != nil {
		return nil, Verdict{}, err
	}
	ref, is, err := s.task(ctx, c, in.Task)
	if err != nil {
		return nil, Verdict{}, err
	}
	rec, _, _, err := ghread.Card(ctx, c.gh, s.bot(), ref.Repo, ref.Number)
	if err != nil {
		return nil, Verdict{}, err
	}
	var prs []int
	if rec != nil {
		prs = rec.OpenPRs()
	}
	if len(prs) == 0 {
		v, err := s.command(ctx, c, ref.Repo, is, "/approve", ghread.TaskKind, string(rules.Completed),
			fmt.Sprintf("countersign to answer /approve on %s (the task moves to completed, or countersign replies why not)", ref))
		return nil, v, err
	}
	completed := func(st string) bool { return st == string(rules.Completed) }
	before, err := s.before(ctx, c, ref.Repo, is, ghread.TaskKind, completed)
	if err != nil {
		return nil, Verdict{}, err
	}
	for _, pr := range prs {
		if err := c.gh.Approve(ctx, ref.Repo, pr); err != nil {
			st, _, rerr := ghread.Settled(ctx, c.gh, s.bot(), ref.Repo, is, ghread.TaskKind)
			if rerr != nil {
				st = before
			}
			return nil, Verdict{Accepted: false, State: st, Reason: err.Error()}, nil
		}
	}
	v, err := s.wait(ctx, c, await{repo: ref.Repo, n: ref.Number, kind: ghread.TaskKind, before: before, done: completed,
		waitsFor: fmt.Sprintf("countersign to count the approving review of #%s; an approval by a builder of the task does not count",
			joinInts(prs, ", #"))})
	return nil, v, err
}

func joinInts(ns []int, sep string) string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = fmt.Sprint(n)
	}
	return strings.Join(out, sep)
}

// goalCommand posts line on the goal issue of a goal and waits for the goal
// to reach state to.
func (s *server) goalCommand(ctx context.Context, req *sdk.CallToolRequest, repo string, ref GoalRef, line string, to rules.GoalState) (*sdk.CallToolResult, Verdict, error) {
	c, err := s.caller(ctx, req)
	if err != nil {
		return nil, Verdict{}, err
	}
	m, err := s.milestone(ctx, c, repo, ref)
	if err != nil {
		return nil, Verdict{}, err
	}
	goal, _, err := ghread.GoalIssues(ctx, c.gh, s.bot(), repo, m.Number)
	if err != nil {
		return nil, Verdict{}, err
	}
	if goal == nil {
		return nil, Verdict{}, fmt.Errorf("goal %s of %s has no goal issue: countersign has not tracked milestone %d yet", ref, repo, m.Number)
	}
	cmd, _, _ := strings.Cut(line, " ")
	v, err := s.command(ctx, c, repo, goal, line, ghread.GoalKind, string(to),
		fmt.Sprintf("countersign to answer %s on the goal issue #%d (the goal moves to %s, or countersign replies why not)", cmd, goal.Number, to))
	return nil, v, err
}

func (s *server) verifyGoal(ctx context.Context, req *sdk.CallToolRequest, in VerifyGoalIn) (*sdk.CallToolResult, Verdict, error) {
	return s.goalCommand(ctx, req, in.Repo, in.Goal, withArgs("/verify-goal", in.Notes), rules.GoalVerified)
}

func (s *server) rejectGoal(ctx context.Context, req *sdk.CallToolRequest, in RejectGoalIn) (*sdk.CallToolResult, Verdict, error) {
	if oneLine(in.Reason) == "" {
		return nil, Verdict{}, fmt.Errorf("a reason is required: say what fails in the integrated result")
	}
	return s.goalCommand(ctx, req, in.Repo, in.Goal, withArgs("/reject-goal", in.Reason), rules.GoalActive)
}

// poll runs f until it is done or the wait runs out (not an error).
func (s *server) poll(ctx context.Context, f func(context.Context) (bool, error)) error {
	wctx, cancel := context.WithTimeout(ctx, s.opts.Wait)
	defer cancel()
	for {
		done, err := f(wctx)
		if wctx.Err() != nil {
			return nil
		}
		if err != nil || done {
			return err
		}
		select {
		case <-wctx.Done():
			return nil
		case <-time.After(s.opts.Poll):
		}
	}
}

package mcp

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/app/mcp/ghread"
	"github.com/countersign/countersign/rules"
)

type TaskStatusOut struct {
	Task  string `json:"task"`
	Title string `json:"title"`
	State string `json:"state" jsonschema:"the state from countersign's owned label, believed only when countersign set it: unsettled otherwise, untracked without one"`
	// StateUnsettled says why the state is unsettled.
	StateUnsettled string   `json:"state_unsettled,omitempty" jsonschema:"why the state is unsettled: who else set the label"`
	Open           bool     `json:"open"`
	Assignees      []string `json:"assignees,omitempty"`
	Goal           int      `json:"goal,omitempty" jsonschema:"the milestone (goal) number, if any"`
	// Details come from countersign's task card, when it can be trusted.
	Details *TaskDetails `json:"details,omitempty" jsonschema:"from countersign's task card, when it is countersign's own and nobody else edited it"`
	// DetailsUnavailable says why there are no details.
	DetailsUnavailable string `json:"details_unavailable,omitempty" jsonschema:"why the details are unavailable"`
}

type TaskDetails struct {
	Attempt    int          `json:"attempt"`
	Roles      Roles        `json:"roles"`
	Contract   *ContractV   `json:"contract,omitempty"`
	Rejections []RejectionV `json:"rejections,omitempty"`
	// Missing is what the task needs for its next state.
	Missing string `json:"missing,omitempty" jsonschema:"what the task needs for its next state"`
	// MayVerify says who may verify it.
	MayVerify string `json:"may_verify" jsonschema:"who may verify it"`
	Escalated bool   `json:"escalated,omitempty"`
	// Blockers are the issues linked as blocking it, each with whether it
	// blocks now; Cycle the dependency cycle it is in.
	Blockers []BlockerV `json:"blockers,omitempty" jsonschema:"issues GitHub links as blocking the task (blocked by, and its sub-issues): /verify waits while one blocks"`
	Cycle    string     `json:"cycle,omitempty" jsonschema:"the dependency cycle the task is in: a lead breaks it"`
	// RecordState is the state the card's record says, when it differs from the label.
	RecordState string `json:"record_state,omitempty" jsonschema:"the card's state when it differs from the label's (the card is being updated, or the label is unsettled)"`
}

type BlockerV struct {
	Issue  string `json:"issue" jsonschema:"#N, or owner/name#N in another repository"`
	Link   string `json:"link" jsonschema:"blocked-by or sub-issue"`
	Status string `json:"status"`
	Blocks bool   `json:"blocks"`
}

type Roles struct {
	Opener    string    `json:"opener,omitempty"`
	Assignees []string  `json:"assignees,omitempty"`
	Builders  []MemberV `json:"builders,omitempty"`
	Approvers []string  `json:"approvers,omitempty"`
	Verifier  string    `json:"verifier,omitempty"`
	PRs       []int     `json:"pull_requests,omitempty"`
}

type MemberV struct {
	Login string `json:"login"`
	As    string `json:"as"`
}

type ContractV struct {
	Type     string       `json:"type" jsonschema:"verifiable, advisory or skip"`
	Why      string       `json:"why,omitempty"`
	Criteria []CriterionV `json:"criteria"`
}

type CriterionV struct {
	Criterion   string `json:"criterion"`
	Description string `json:"description"`
	Result      string `json:"result" jsonschema:"pass, fail, pending, deferred or unchecked"`
	Detail      string `json:"detail,omitempty"`
}

type RejectionV struct {
	By      string    `json:"by"`
	At      time.Time `json:"at"`
	Reason  string    `json:"reason"`
	Attempt int       `json:"attempt"`
}

func (s *server) taskStatus(ctx context.Context, req *sdk.CallToolRequest, in TaskIn) (*sdk.CallToolResult, TaskStatusOut, error) {
	c, err := s.caller(ctx, req)
	if err != nil {
		return nil, TaskStatusOut{}, err
	}
	ref, is, err := s.task(ctx, c, in.Task)
	if err != nil {
		return nil, TaskStatusOut{}, err
	}
	st, why, err := ghread.Settled(ctx, c.gh, s.bot(), ref.Repo, is, ghread.TaskKind)
	if err != nil {
		return nil, TaskStatusOut{}, err
	}
	out := TaskStatusOut{Task: ref.String(), Title: is.Title, State: st, StateUnsettled: why, Open: is.Open, Assignees: is.Assignees, Goal: is.Milestone}
	rec, _, why, err := ghread.Card(ctx, c.gh, s.bot(), ref.Repo, ref.Number)
	if err != nil {
		return nil, out, err
	}
	if rec == nil {
		out.DetailsUnavailable = why
		return nil, out, nil
	}
	out.Details = details(rec, out.State)
	return nil, out, nil
}

// details is what a trusted card's record says of its task.
func details(t *rules.Task, labelState string) *TaskDetails {
	d := &TaskDetails{Attempt: t.Attempt, Missing: rules.Missing(t), Escalated: t.Escalated}
	if string(t.State) != labelState {
		d.RecordState = string(t.State)
	}
	d.Roles.Opener = t.Opener.Login
	d.Roles.Assignees = rules.Logins(t.Assignees)
	for _, b := range t.Builders {
		d.Roles.Builders = append(d.Roles.Builders, MemberV{Login: b.Login, As: b.As})
	}
	d.Roles.Approvers = rules.Logins(t.Approvers)
	d.Roles.Verifier = t.Verifier.Login
	d.Roles.PRs = t.OpenPRs()
	if k := t.Contract; k != nil {
		cv := &ContractV{Type: string(k.Type), Why: k.Why, Criteria: []CriterionV{}}
		for _, cr := range k.Criteria {
			cv.Criteria = append(cv.Criteria, CriterionV{Criterion: cr.Key(), Description: cr.Description, Result: resultName(cr.Result), Detail: cr.Detail})
		}
		d.Contract = cv
	}
	for _, r := range t.Rejections {
		d.Rejections = append(d.Rejections, RejectionV{By: r.By.Login, At: r.At, Reason: r.Reason, Attempt: r.Attempt})
	}
	for _, b := range t.Blockers {
		d.Blockers = append(d.Blockers, BlockerV{Issue: b.Ref(t.Repo), Link: string(b.Via), Status: strings.Trim(b.Status(), "`"), Blocks: b.Blocks()})
	}
	d.Cycle = t.CycleText()
	d.MayVerify = mayVerify(t)
	return d
}

func resultName(r rules.Result) string {
	if r == "" {
		return "pending"
	}
	return string(r)
}

// mayVerify says who may verify t, in words: countersign's rule, with the
// people it rules out named.
func mayVerify(t *rules.Task) string {
	var out []string
	for _, b := range t.Builders {
		out = append(out, "@"+b.Login)
	}
	var builders, approvers string
	if len(out) > 0 {
		builders = " It may not be a builder: " + strings.Join(out, ", ") + "."
	}
	if ls := rules.Logins(t.Approvers); len(ls) > 0 {
		approvers = " Nor, when three or more people can verify (separation: auto), an approver of this attempt: @" + strings.Join(ls, ", @") + "."
	}
	who := "Someone with write permission on the repository (or listed in `verifiers:` of .github/countersign.yml)."
	if t.Contract != nil && t.Contract.Type == rules.Advisory {
		who = "A lead: the task is advisory, so a lead reviews its output and verifies it."
	}
	return who + builders + approvers
}

// ---- goals ----

type GoalTaskV struct {
	Task           string `json:"task"`
	Title          string `json:"title"`
	State          string `json:"state"`
	StateUnsettled string `json:"state_unsettled,omitempty" jsonschema:"why the state is unsettled"`
	// WaitsFor are the blockers that block it now, from its trusted card
	// (read only for tasks GitHub says have blockers or sub-issues).
	WaitsFor []string `json:"waits_for,omitempty" jsonschema:"the issues that block the task now (#N, or owner/name#N): /verify waits for them"`
	// BlockersUnavailable says why its blockers could not be read.
	BlockersUnavailable string `json:"blockers_unavailable,omitempty" jsonschema:"why the task's blockers could not be read from its card"`
}

type Counts struct {
	Pending    int `json:"pending"`
	Assigned   int `json:"assigned"`
	InProgress int `json:"in_progress"`
	Review     int `json:"review"`
	Completed  int `json:"completed"`
	Verified   int `json:"verified"`
	// Unsettled counts tasks whose state label countersign did not set.
	Unsettled int `json:"unsettled,omitempty" jsonschema:"tasks whose state label countersign did not set"`
}

func (c *Counts) add(st string) {
	switch rules.State(st) {
	case rules.Pending:
		c.Pending++
	case rules.Assigned:
		c.Assigned++
	case rules.InProgress:
		c.InProgress++
	case rules.Review:
		c.Review++
	case rules.Completed:
		c.Completed++
	case rules.Verified:
		c.Verified++
	case ghread.Unsettled:
		c.Unsettled++
	}
}

type GoalStatusOut struct {
	Goal  GoalRefOut `json:"goal"`
	State string     `json:"state" jsonschema:"from countersign's owned goal label: open, active, pending-verify or verified; unsettled when countersign did not set it"`
	// StateUnsettled says why the goal's state is unsettled.
	StateUnsettled string      `json:"state_unsettled,omitempty" jsonschema:"why the goal's state is unsettled"`
	Counts         Counts      `json:"counts"`
	Tasks          []GoalTaskV `json:"tasks"`
}

func (s *server) goalStatus(ctx context.Context, req *sdk.CallToolRequest, in GoalIn) (*sdk.CallToolResult, GoalStatusOut, error) {
	c, err := s.caller(ctx, req)
	if err != nil {
		return nil, GoalStatusOut{}, err
	}
	m, err := s.milestone(ctx, c, in.Repo, in.Goal)
	if err != nil {
		return nil, GoalStatusOut{}, err
	}
	goal, tasks, err := ghread.GoalIssues(ctx, c.gh, s.bot(), in.Repo, m.Number)
	if err != nil {
		return nil, GoalStatusOut{}, err
	}
	out := GoalStatusOut{Goal: GoalRefOut{Repo: in.Repo, Number: m.Number, Title: m.Title}, State: ghread.Untracked, Tasks: []GoalTaskV{}}
	if goal != nil {
		if out.State, out.StateUnsettled, err = ghread.Settled(ctx, c.gh, s.bot(), in.Repo, goal, ghread.GoalKind); err != nil {
			return nil, GoalStatusOut{}, err
		}
	}
	for _, is := range tasks {
		st, why, err := ghread.Settled(ctx, c.gh, s.bot(), in.Repo, is, ghread.TaskKind)
		if err != nil {
			return nil, GoalStatusOut{}, err
		}
		out.Counts.add(st)
		v := GoalTaskV{Task: taskRef{Repo: in.Repo, Number: is.Number}.String(), Title: is.Title, State: st, StateUnsettled: why}
		if is.Linked {
			rec, _, why, err := ghread.Card(ctx, c.gh, s.bot(), in.Repo, is.Number)
			if err != nil {
				return nil, GoalStatusOut{}, err
			}
			if rec == nil {
				v.BlockersUnavailable = why
			}
			if rec != nil {
				for _, b := range rec.Waits() {
					v.WaitsFor = append(v.WaitsFor, b.Ref(in.Repo))
				}
			}
		}
		out.Tasks = append(out.Tasks, v)
	}
	return nil, out, nil
}

// ---- my work ----

type WorkItem struct {
	Task   string `json:"task"`
	Title  string `json:"title"`
	State  string `json:"state"`
	Reason string `json:"reason,omitempty" jsonschema:"why it was sent back, or why its details are unavailable"`
}

type MyWorkOut struct {
	Me       string     `json:"me" jsonschema:"the token's account"`
	Assigned []WorkItem `json:"assigned" jsonschema:"open tasks assigned to you"`
	ToVerify []WorkItem `json:"to_verify" jsonschema:"completed tasks you neither built nor approved, awaiting verification"`
	SentBack []WorkItem `json:"sent_back" jsonschema:"tasks assigned to you that a rejection or a failed check sent back"`
}

func (s *server) myWork(ctx context.Context, req *sdk.CallToolRequest, in MyWorkIn) (*sdk.CallToolResult, MyWorkOut, error) {
	if in.Repo != "" {
		if err := checkRepo(in.Repo); err != nil {
			return nil, MyWorkOut{}, err
		}
	}
	c, err := s.caller(ctx, req)
	if err != nil {
		return nil, MyWorkOut{}, err
	}
	out := MyWorkOut{Me: c.me.Login, Assigned: []WorkItem{}, ToVerify: []WorkItem{}, SentBack: []WorkItem{}}
	mine, err := c.gh.AssignedToMe(ctx)
	if err != nil {
		return nil, out, err
	}
	repos := map[string]bool{}
	if in.Repo != "" {
		repos[in.Repo] = true
	}
	for _, is := range mine {
		if in.Repo != "" && !strings.EqualFold(is.Repo, in.Repo) {
			continue
		}
		if len(ghread.TaskKind.Labels(is)) == 0 {
			continue // not a task countersign tracks
		}
		repos[is.Repo] = true
		st, why, err := ghread.Settled(ctx, c.gh, s.bot(), is.Repo, is, ghread.TaskKind)
		if err != nil {
			return nil, out, err
		}
		item := WorkItem{Task: taskRef{Repo: is.Repo, Number: is.Number}.String(), Title: is.Title, State: st}
		if why != "" {
			item.Reason = "state unsettled: " + why
		}
		out.Assigned = append(out.Assigned, item)
		if st != string(rules.InProgress) {
			continue
		}
		rec, _, _, err := ghread.Card(ctx, c.gh, s.bot(), is.Repo, is.Number)
		if err != nil {
			return nil, out, err
		}
		switch {
		case rec == nil:
		case rec.Failing && len(rec.Rejections) > 0 && rec.Rejections[len(rec.Rejections)-1].Attempt == rec.Attempt-1:
			r := rec.Rejections[len(rec.Rejections)-1]
			item.Reason = fmt.Sprintf("rejected by @%s: %s", r.By.Login, r.Reason)
			out.SentBack = append(out.SentBack, item)
		case rec.Failing:
			item.Reason = "its last attempt failed its contract's checks"
			out.SentBack = append(out.SentBack, item)
		}
	}
	names := make([]string, 0, len(repos))
	for r := range repos {
		names = append(names, r)
	}
	sort.Strings(names)
	me := rules.User{ID: c.me.ID, Login: c.me.Login}
	for _, repo := range names {
		done, err := c.gh.Issues(ctx, repo, 0, rules.Completed.Label())
		if err != nil {
			return nil, out, notVisible("repository "+repo, err)
		}
		for _, is := range done {
			if st, _, err := ghread.Settled(ctx, c.gh, s.bot(), repo, is, ghread.TaskKind); err != nil {
				return nil, out, err
			} else if st != string(rules.Completed) {
				continue // only a task countersign itself labeled completed awaits verification
			}
			item := WorkItem{Task: taskRef{Repo: repo, Number: is.Number}.String(), Title: is.Title, State: string(rules.Completed)}
			rec, _, why, err := ghread.Card(ctx, c.gh, s.bot(), repo, is.Number)
			if err != nil {
				return nil, out, err
			}
			if rec == nil {
				item.Reason = "details unavailable: " + why
			} else if rec.IsBuilder(me) || containsUser(rec.Approvers, me) {
				continue
			}
			out.ToVerify = append(out.ToVerify, item)
		}
	}
	return nil, out, nil
}

func containsUser(list []rules.User, u rules.User) bool {
	for _, x := range list {
		if x.Is(u) {
			return true
		}
	}
	return false
}

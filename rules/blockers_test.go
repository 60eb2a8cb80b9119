package rules

import (
	"slices"
	"strings"
	"testing"
)

// blk is a blocker of the fixture's task: a task of acme/app in state s, or
// (s "") an issue that is no task with status is.
func blk(repo string, n int, s State, is IssueStatus) Blocker {
	return Blocker{Repo: repo, Number: n, Via: LinkBlockedBy, Task: s != "", State: s, Issue: is}
}

func TestBlockerBlocks(t *testing.T) {
	for _, c := range []struct {
		name   string
		b      Blocker
		blocks bool
		status string
	}{
		{"a pending task", blk(fxRepo, 3, Pending, ""), true, "`pending`"},
		{"a task in progress", blk(fxRepo, 3, InProgress, ""), true, "`in-progress`"},
		{"a completed task (approved, not verified)", blk(fxRepo, 3, Completed, ""), true, "`completed`"},
		{"a verified task", blk(fxRepo, 3, Verified, ""), false, "`verified`"},
		{"a verified task, closed", Blocker{Repo: fxRepo, Number: 3, Task: true, State: Verified, Closed: true}, false, "`verified`"},
		{"a task a lead closed as not planned", Blocker{Repo: fxRepo, Number: 3, Task: true, State: Review, Closed: true}, false, "closed as not planned"},
		{"a deleted task", Blocker{Repo: fxRepo, Number: 3, Task: true, State: Review, Issue: IssueDeleted}, false, "deleted"},
		{"a transferred task", Blocker{Repo: fxRepo, Number: 3, Task: true, State: Review, Issue: IssueTransferred}, false, "transferred"},
		{"an open issue that is no task", blk(fxRepo, 3, "", IssueOpen), true, "open (no task)"},
		{"an issue of no known status", blk(fxRepo, 3, "", ""), true, "open (no task)"},
		{"an issue closed as completed", blk(fxRepo, 3, "", IssueCompleted), false, "closed as completed (no task)"},
		{"an issue closed as not planned", blk(fxRepo, 3, "", IssueNotPlanned), false, "closed as not planned"},
		{"a deleted issue", blk(fxRepo, 3, "", IssueDeleted), false, "deleted"},
		{"a transferred issue", blk(fxRepo, 3, "", IssueTransferred), false, "transferred"},
		{"a task of another repository, in review", blk("acme/api", 9, Review, ""), true, "`review`"},
		{"a task of another repository, verified", blk("acme/api", 9, Verified, ""), false, "`verified`"},
		{"an open issue of another repository", blk("other/lib", 9, "", IssueOpen), true, "open (no task)"},
	} {
		if got := c.b.Blocks(); got != c.blocks {
			t.Errorf("%s: Blocks() = %v, want %v", c.name, got, c.blocks)
		}
		if got := c.b.Status(); got != c.status {
			t.Errorf("%s: Status() = %q, want %q", c.name, got, c.status)
		}
		if (c.b.Why() == "") != c.blocks {
			t.Errorf("%s: Why() = %q while Blocks() = %v", c.name, c.b.Why(), c.blocks)
		}
	}
}

func TestIssueStatusOf(t *testing.T) {
	for _, c := range []struct {
		state, reason string
		want          IssueStatus
	}{
		{"open", "", IssueOpen}, {"open", "reopened", IssueOpen},
		{"closed", "completed", IssueCompleted}, {"closed", "", IssueCompleted},
		{"closed", "not_planned", IssueNotPlanned}, {"closed", "duplicate", IssueNotPlanned},
	} {
		if got := IssueStatusOf(c.state, c.reason); got != c.want {
			t.Errorf("IssueStatusOf(%q, %q) = %q, want %q", c.state, c.reason, got, c.want)
		}
	}
}

func TestBlockerRef(t *testing.T) {
	b := blk("acme/api", 9, Review, "")
	if got := b.Ref("acme/api"); got != "#9" {
		t.Errorf("same repository: %q", got)
	}
	if got := b.Ref("Acme/API"); got != "#9" {
		t.Errorf("repositories are named case-insensitively: %q", got)
	}
	if got := b.Ref(fxRepo); got != "acme/api#9" {
		t.Errorf("other repository: %q", got)
	}
	s := Blocker{Repo: fxRepo, Number: 4, Via: LinkSubIssue, Task: true, State: Assigned}
	if got := s.Describe(fxRepo); got != "#4 (`assigned`, a sub-issue)" {
		t.Errorf("a sub-issue is described %q", got)
	}
}

func TestApplyLink(t *testing.T) {
	a := blk(fxRepo, 3, InProgress, "")
	b := blk("acme/api", 9, "", IssueOpen)
	sub := Blocker{Repo: fxRepo, Number: 3, Via: LinkSubIssue, Task: true, State: InProgress}
	for _, c := range []struct {
		name   string
		have   []Blocker
		change LinkChange
		want   []Blocker
	}{
		{"added to none", nil, LinkChange{Blocker: a}, []Blocker{a}},
		{"added again (a redelivery)", []Blocker{a}, LinkChange{Blocker: a}, []Blocker{a}},
		{"a second blocker", []Blocker{a}, LinkChange{Blocker: b}, []Blocker{a, b}},
		{"the same issue as a sub-issue too", []Blocker{a}, LinkChange{Blocker: sub}, []Blocker{a, sub}},
		{"removed", []Blocker{a, b}, LinkChange{Blocker: a, Removed: true}, []Blocker{b}},
		{"the sub-issue link removed, the dependency kept", []Blocker{a, sub}, LinkChange{Blocker: sub, Removed: true}, []Blocker{a}},
		{"removed, not there", []Blocker{b}, LinkChange{Blocker: a, Removed: true}, []Blocker{b}},
		{"an update of a blocker there (every link)", []Blocker{a, sub, b},
			LinkChange{Blocker: Blocker{Repo: fxRepo, Number: 3, Task: true, State: Verified}, Update: true},
			[]Blocker{{Repo: fxRepo, Number: 3, Via: LinkBlockedBy, Task: true, State: Verified},
				{Repo: fxRepo, Number: 3, Via: LinkSubIssue, Task: true, State: Verified}, b}},
		{"an update of a blocker not there adds nothing", []Blocker{b}, LinkChange{Blocker: a, Update: true}, []Blocker{b}},
	} {
		before := slices.Clone(c.have)
		got := ApplyLink(c.have, c.change)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
		if !slices.Equal(c.have, before) {
			t.Errorf("%s: ApplyLink changed its argument", c.name)
		}
	}
}

func TestFindCycle(t *testing.T) {
	graph := func(edges string) func(string) []string {
		g := map[string][]string{}
		for _, e := range strings.Fields(edges) {
			from, to, _ := strings.Cut(e, ">")
			g[from] = append(g[from], to)
		}
		return func(k string) []string { return g[k] }
	}
	for _, c := range []struct {
		name, edges string
		limit       int
		want        []string
	}{
		{"no links", "", 10, nil},
		{"a chain", "a>b b>c", 10, nil},
		{"blocked by itself", "a>a", 10, []string{"a"}},
		{"two tasks blocking each other", "a>b b>a", 10, []string{"a", "b"}},
		{"three", "a>b b>c c>a", 10, []string{"a", "b", "c"}},
		{"the shortest of two", "a>b b>c c>a a>d d>a", 10, []string{"a", "d"}},
		{"a cycle that does not pass through the task", "a>b b>c c>b", 10, nil},
		{"a diamond, no cycle", "a>b a>c b>d c>d", 10, nil},
		{"a cycle past the search bound", "a>b b>c c>d d>a", 2, nil},
	} {
		got := FindCycle("a", graph(c.edges), c.limit)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestSplitTaskKey(t *testing.T) {
	for _, c := range []struct {
		key  string
		repo string
		n    int
		ok   bool
	}{
		{"acme/app#7", "acme/app", 7, true}, {"acme/app#0", "", 0, false}, {"acme/app", "", 0, false},
		{"#7", "", 0, false}, {"acme/app#7x", "", 0, false}, {"acme/app#07", "", 0, false},
	} {
		repo, n, ok := SplitTaskKey(c.key)
		if repo != c.repo || n != c.n || ok != c.ok {
			t.Errorf("SplitTaskKey(%q) = %q %d %v", c.key, repo, n, ok)
		}
	}
}

// links is an event that tells the task its blockers.
func linksEvent(cycle []string, blockers ...Blocker) Event {
	ev := fxEvent(LinksChanged, "lead")
	ev.Links = &Links{Blockers: blockers, Cycle: cycle}
	return ev
}

func historyHas(t *Task, part string) bool {
	return slices.ContainsFunc(t.History, func(h Transition) bool { return strings.Contains(h.Why, part) })
}

// A blocked task may be worked on, but /verify is refused naming each
// blocker and its state; when the last blocker is verified the card says it
// is unblocked and the verifier who was refused is told, once.
func TestBlockedVerifyThenUnblocked(t *testing.T) {
	task := fxTask(Completed, false)
	a := blk(fxRepo, 3, InProgress, "")
	b := blk("acme/api", 9, Review, "")
	c := Blocker{Repo: fxRepo, Number: 4, Via: LinkSubIssue, Task: false, Issue: IssueOpen}

	d := DecideTask(task, linksEvent(nil, a, b, c), fxFacts("lead"))
	if d.Task == nil || len(d.Task.Blockers) != 3 || !historyHas(d.Task, "now waits for acme/api#9 (`review`)") {
		t.Fatalf("the blockers were not taken in: %+v", d.Task)
	}
	if d.Task.State != Completed {
		t.Fatalf("a blocker moved the task to %s", d.Task.State)
	}
	task = d.Task

	d = DecideTask(task, fxComment("bob", "/verify looks good"), fxFacts("bob"))
	n := noticeOf(d, NoticeRefused)
	if n == nil || d.Task == nil || d.Task.State != Completed {
		t.Fatalf("/verify of a blocked task: %+v", d)
	}
	why := n.Refusals[0].Reason
	for _, want := range []string{"#3 (`in-progress`)", "acme/api#9 (`review`)", "#4 (open (no task), a sub-issue)"} {
		if !strings.Contains(why, want) {
			t.Errorf("the refusal %q does not name %s", why, want)
		}
	}
	if !containsUser(d.Task.Waiting, u("bob")) {
		t.Fatalf("bob, refused, is not remembered: %+v", d.Task.Waiting)
	}
	task = d.Task

	// One blocker verified, another closed as completed: one still blocks.
	d = DecideTask(task, linksEvent(nil, blk(fxRepo, 3, Verified, ""), b, Blocker{Repo: fxRepo, Number: 4, Via: LinkSubIssue, Issue: IssueCompleted}), fxFacts("lead"))
	if noticeOf(d, NoticeUnblocked) != nil || !historyHas(d.Task, "#3 no longer blocks it: `verified`") {
		t.Fatalf("partly unblocked: %+v", d.Task.History)
	}
	task = d.Task

	// The last is verified: unblocked, bob told.
	d = DecideTask(task, linksEvent(nil, blk(fxRepo, 3, Verified, ""), blk("acme/api", 9, Verified, ""), Blocker{Repo: fxRepo, Number: 4, Via: LinkSubIssue, Issue: IssueCompleted}), fxFacts("lead"))
	un := noticeOf(d, NoticeUnblocked)
	if un == nil || !slices.Equal(un.Mentions, []string{"bob"}) || !historyHas(d.Task, "unblocked") {
		t.Fatalf("unblocked: notice %+v, history %+v", un, d.Task.History)
	}
	if len(d.Task.Waiting) != 0 {
		t.Fatalf("bob is still waiting: %+v", d.Task.Waiting)
	}
	task = d.Task

	// Told once: the same links again change nothing.
	if d = DecideTask(task, linksEvent(nil, task.Blockers...), fxFacts("lead")); d.Task != nil || len(d.Effects) != 0 {
		t.Fatalf("the same links decided again: %+v", d)
	}
	again := fxComment("bob", "/verify")
	again.CommentID = 901
	d = DecideTask(task, again, fxFacts("bob"))
	if d.Task == nil || d.Task.State != Verified {
		t.Fatalf("/verify after unblocking: %+v", d)
	}
}

// A blocker closed as not planned, deleted or transferred stops blocking, and
// the card says why.
func TestBlockerStopsBlocking(t *testing.T) {
	for _, c := range []struct {
		name string
		now  Blocker
		want string
	}{
		{"not planned", blk(fxRepo, 3, "", IssueNotPlanned), "#3 no longer blocks it: closed as not planned: it stops blocking"},
		{"deleted", Blocker{Repo: fxRepo, Number: 3, Via: LinkBlockedBy, Task: true, State: InProgress, Issue: IssueDeleted}, "#3 no longer blocks it: deleted: it stops blocking"},
		{"transferred", blk(fxRepo, 3, "", IssueTransferred), "#3 no longer blocks it: transferred: it stops blocking"},
		{"a task closed as not planned", Blocker{Repo: fxRepo, Number: 3, Via: LinkBlockedBy, Task: true, State: Assigned, Closed: true}, "#3 no longer blocks it: closed as not planned: it stops blocking"},
	} {
		task := DecideTask(fxTask(Completed, false), linksEvent(nil, blk(fxRepo, 3, "", IssueOpen)), fxFacts("lead")).Task
		d := DecideTask(task, linksEvent(nil, c.now), fxFacts("lead"))
		if d.Task == nil || !historyHas(d.Task, c.want) || len(d.Task.Waits()) != 0 {
			t.Errorf("%s: %+v", c.name, d.Task)
		}
		if d = DecideTask(d.Task, fxComment("bob", "/verify"), fxFacts("bob")); d.Task == nil || d.Task.State != Verified {
			t.Errorf("%s: /verify refused: %+v", c.name, noticesOf(d))
		}
	}
}

// A removed link no longer blocks; a link added to an unblocked task blocks.
func TestLinkRemovedAndAdded(t *testing.T) {
	task := DecideTask(fxTask(Completed, false), linksEvent(nil, blk(fxRepo, 3, Review, "")), fxFacts("lead")).Task
	d := DecideTask(task, linksEvent(nil), fxFacts("lead"))
	if d.Task == nil || len(d.Task.Blockers) != 0 || !historyHas(d.Task, "dependency on #3 removed") || !historyHas(d.Task, "unblocked") {
		t.Fatalf("removed: %+v", d.Task)
	}
	d = DecideTask(d.Task, linksEvent(nil, Blocker{Repo: fxRepo, Number: 5, Via: LinkSubIssue, Task: true, State: Pending}), fxFacts("lead"))
	if !historyHas(d.Task, "now waits for #5 (`pending`, a sub-issue)") {
		t.Fatalf("a sub-issue added: %+v", d.Task.History)
	}
	d = DecideTask(d.Task, linksEvent(nil, blk(fxRepo, 5, Verified, "")), fxFacts("lead"))
	if !historyHas(d.Task, "sub-issue #5 removed") {
		t.Fatalf("the sub-issue link replaced by a dependency: %+v", d.Task.History)
	}
}

// A cycle is shown on the card, blocks until a lead breaks it, and its
// breaking is recorded.
func TestDependencyCycle(t *testing.T) {
	cycle := []string{TaskKey(fxRepo, fxIssue), TaskKey(fxRepo, 3)}
	d := DecideTask(fxTask(Completed, false), linksEvent(cycle, blk(fxRepo, 3, Completed, "")), fxFacts("lead"))
	if d.Task == nil || !historyHas(d.Task, "dependency cycle: #7 → #3 → #7") {
		t.Fatalf("the cycle is not on the card: %+v", d.Task)
	}
	d2 := DecideTask(d.Task, fxComment("bob", "/verify"), fxFacts("bob"))
	if n := noticeOf(d2, NoticeRefused); n == nil || !strings.Contains(n.Refusals[0].Reason, "dependency cycle (#7 → #3 → #7)") {
		t.Fatalf("/verify in a cycle: %+v", noticesOf(d2))
	}
	// The same cycle seen from #3 is the same cycle: nothing new.
	rotated := []string{TaskKey(fxRepo, 3), TaskKey(fxRepo, fxIssue)}
	if d3 := DecideTask(d.Task, linksEvent(rotated, blk(fxRepo, 3, Completed, "")), fxFacts("lead")); d3.Task != nil {
		t.Fatalf("the same cycle from another start changed the task: %+v", d3.Task.History)
	}
	// A lead breaks it by removing the link.
	d4 := DecideTask(d2.Task, linksEvent(nil), fxFacts("lead"))
	if d4.Task == nil || !historyHas(d4.Task, "dependency cycle #7 → #3 → #7 broken") || len(d4.Task.Cycle) != 0 {
		t.Fatalf("the cycle broken: %+v", d4.Task)
	}
	if noticeOf(d4, NoticeUnblocked) == nil {
		t.Fatal("bob, refused in the cycle, is not told it is unblocked")
	}
}

// A lead's override of a blocked task stays possible and is logged with the
// blockers it overrides.
func TestOverrideOfABlockedTask(t *testing.T) {
	task := DecideTask(fxTask(Completed, false), linksEvent(nil, blk("acme/api", 9, InProgress, "")), fxFacts("lead")).Task
	d := DecideTask(task, fxComment("lead", "/skip-verify the API change is behind a flag"), fxFacts("lead"))
	if d.Task == nil || d.Task.State != Verified || !historyHas(d.Task, "overriding blockers: acme/api#9 (`in-progress`)") {
		t.Fatalf("/skip-verify of a blocked task: %+v", d.Task)
	}
	task = DecideTask(fxTask(InProgress, false), linksEvent(nil, blk("acme/api", 9, InProgress, "")), fxFacts("lead")).Task
	d = DecideTask(task, fxComment("lead", "/force-complete OVERRIDE release day"), fxFacts("lead"))
	if d.Task == nil || d.Task.State != Verified || !historyHas(d.Task, "overriding blockers: acme/api#9") {
		t.Fatalf("/force-complete of a blocked task: %+v", d.Task)
	}
}

// A blocked task may start: blockers stop only verification.
func TestBlockedTaskMayStart(t *testing.T) {
	task := DecideTask(fxTask(Assigned, false), linksEvent(nil, blk(fxRepo, 3, Pending, "")), fxFacts("lead")).Task
	d := DecideTask(task, fxComment("alice", "/start"), fxFacts("alice"))
	if d.Task == nil || d.Task.State != InProgress {
		t.Fatalf("/start of a blocked task: %+v", noticesOf(d))
	}
}

// The goal sees each task's blockers: every link, and which block now.
func TestGoalTaskBlockers(t *testing.T) {
	task := DecideTask(fxTask(Review, false), linksEvent(nil, blk(fxRepo, 3, Verified, ""), blk("acme/api", 9, Review, "")), fxFacts("lead")).Task
	gt := GoalTaskOf(task)
	if !slices.Equal(gt.Blockers, []string{"#3", "acme/api#9"}) || !slices.Equal(gt.Waits, []string{"acme/api#9"}) {
		t.Fatalf("goal task: %+v %+v", gt.Blockers, gt.Waits)
	}
}

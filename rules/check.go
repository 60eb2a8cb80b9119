package rules

// CheckName is the check run countersign owns on every linked pull request's
// head commit. It never changes: branch protection requires it by name.
const CheckName = "countersign/verification"

// Check is what the verification check run on a pull request's head says.
type Check struct {
	Status     string      `json:"status"`               // "in_progress" or "completed"
	Conclusion string      `json:"conclusion,omitempty"` // "success" or "failure" when completed
	Tasks      []CheckTask `json:"tasks"`
	// Untracked is set when the pull request closes no task: how
	// gate.untracked answered it (UntrackedFails, UntrackedPasses,
	// UntrackedExempts).
	Untracked string `json:"untracked,omitempty"`
	// Note says what decided the verdict beyond the tasks' states.
	Note string `json:"note,omitempty"`
	// Queue is set on the check of a merge-queue group: the entry it is for.
	Queue *QueueEntry `json:"queue,omitempty"`
}

// QueueEntry is a merge-queue group as its check names it: GitHub's
// temporary branch that merges pull request PR into Base.
type QueueEntry struct {
	PR   int    `json:"pr"`
	Ref  string `json:"ref"`            // gh-readonly-queue/<base>/pr-<N>-<sha>
	Base string `json:"base"`           // the branch it merges into
	Head string `json:"head,omitempty"` // the pull request's head that was queued
	// Ahead is the pull request of the group this one is built on, when
	// that group's answer (failing, or not yet given) decided this one's.
	Ahead int `json:"ahead,omitempty"`
	// On is the commit this group is built on when it waits for a group
	// countersign cannot name: neither the base branch's head nor a group
	// it has been asked about.
	On string `json:"on,omitempty"`
}

// CheckTask is one task a pull request closes, as its check reports it.
type CheckTask struct {
	Number     int    `json:"number"`
	Title      string `json:"title"`
	State      State  `json:"state"`
	Verifier   string `json:"verifier,omitempty"`
	Failing    bool   `json:"failing,omitempty"`
	Reason     string `json:"reason,omitempty"` // the latest rejection's reason, when failing
	Missing    string `json:"missing,omitempty"`
	Unverified bool   `json:"unverified,omitempty"`
	Forced     bool   `json:"forced,omitempty"`
	// Evidence is the task's evidence chain (nil: not a task).
	Evidence *Evidence `json:"evidence,omitempty"`
}

// CheckFor works out the check of pull request pr from the records of the
// tasks it closes: tasks[i] is the record of pr.Links[i], nil when there is
// none. It succeeds when every task is verified and has seen this pull request
// at this head (a task not yet told of a push or a link does not count, nor
// does an issue that is no task: the gate opens for verified work only); it
// fails when a task was rejected (or failed a criterion) and no new attempt
// was submitted since; it is in progress otherwise.
func CheckFor(pr *PullRequest, tasks []*Task) Check {
	c := Check{Status: "in_progress", Tasks: []CheckTask{}}
	verified, failing := 0, false
	for i, n := range pr.Links {
		var t *Task
		if i < len(tasks) {
			t = tasks[i]
		}
		if t == nil {
			c.Tasks = append(c.Tasks, CheckTask{Number: n, Missing: "It is not a task countersign tracks."})
			continue
		}
		ct := CheckTask{Number: t.Number, Title: t.Title, State: t.State, Verifier: t.Verifier.Login, Failing: t.Failing,
			Unverified: t.Unverified, Forced: t.Forced}
		if t.Failing {
			ct.Reason = failingReason(t)
		}
		ev := EvidenceOf(t)
		ct.Evidence = &ev
		lp := t.pr(pr.Number)
		switch {
		case lp == nil || lp.Head != pr.Head || !(lp.Open || lp.Merged):
			ct.Missing = "countersign is still taking in this pull request's latest commits for it."
		case t.State == Verified:
			verified++
		default:
			ct.Missing = Missing(t)
		}
		failing = failing || t.Failing
		c.Tasks = append(c.Tasks, ct)
	}
	switch {
	case failing:
		c.Status, c.Conclusion = "completed", "failure"
	case len(pr.Links) > 0 && verified == len(pr.Links):
		c.Status, c.Conclusion = "completed", "success"
	}
	return c
}

// failingReason is why the task's last attempt failed: the latest rejection or
// failed criterion.
func failingReason(t *Task) string {
	var rej *Rejection
	var fail *Failure
	if n := len(t.Rejections); n > 0 {
		rej = &t.Rejections[n-1]
	}
	if n := len(t.Failures); n > 0 {
		fail = &t.Failures[n-1]
	}
	switch {
	case fail != nil && (rej == nil || fail.At.After(rej.At)):
		return "failed its contract: " + fail.Reason
	case rej != nil:
		return "rejected by @" + rej.By.Login + ": " + rej.Reason
	}
	return "the last attempt failed"
}

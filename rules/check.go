package rules

// CheckName is the check run countersign owns on every linked pull request's
// head commit. It never changes: branch protection requires it by name.
const CheckName = "countersign/verification"

// Check is what the verification check run on a pull request's head says.
type Check struct {
	Status     string      `json:"status"`               // "in_progress" or "completed"
	Conclusion string      `json:"conclusion,omitempty"` // "success" or "failure" when completed
	Tasks      []CheckTask `json:"tasks"`
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
}

// CheckFor works out the check of a pull request that closes tasks: success
// when every task is verified; failure when one was rejected (or failed a
// criterion) and no new attempt was submitted since; in progress otherwise. A
// pull request that closes no tracked task is in progress: the gate does not
// open for work that claims no task.
func CheckFor(tasks []*Task) Check {
	c := Check{Status: "in_progress", Tasks: []CheckTask{}}
	verified, failing := 0, false
	for _, t := range tasks {
		ct := CheckTask{Number: t.Number, Title: t.Title, State: t.State, Verifier: t.Verifier, Failing: t.Failing,
			Unverified: t.Unverified, Forced: t.Forced}
		if t.Failing && len(t.Rejections) > 0 {
			ct.Reason = t.Rejections[len(t.Rejections)-1].Reason
		}
		if t.State == Verified {
			verified++
		} else {
			ct.Missing = Missing(t)
		}
		failing = failing || t.Failing
		c.Tasks = append(c.Tasks, ct)
	}
	switch {
	case failing:
		c.Status, c.Conclusion = "completed", "failure"
	case len(tasks) > 0 && verified == len(tasks):
		c.Status, c.Conclusion = "completed", "success"
	}
	return c
}

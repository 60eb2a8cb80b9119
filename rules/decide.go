package rules

import "time"

// EventKind names what happened, in the domain's terms.
type EventKind string

// The events rules decides on.
const (
	IssueOpened EventKind = "issue.opened"
)

// Event is one thing that happened to a task, with the facts rules needs.
type Event struct {
	Kind  EventKind
	Actor string    // login of who caused it
	At    time.Time // when it happened (from the delivery, never the clock)
	Issue IssueFacts
}

// IssueFacts describe the issue an event is about, as GitHub reported it.
type IssueFacts struct {
	Repo      string
	Number    int
	Title     string
	Body      string
	Assignees []string
	Labels    []string
}

// EffectKind names a change to make on GitHub. Every effect is idempotent: it
// states what GitHub must look like, so applying it twice changes nothing more.
type EffectKind string

// The effects.
const (
	// EffectSetState makes the issue carry State's label and no other state label.
	EffectSetState EffectKind = "set-state"
	// EffectSyncCard makes the task card (one comment, found by its marker) show
	// the task record as it is when the effect is applied.
	EffectSyncCard EffectKind = "sync-card"
)

// Effect is one change to make on GitHub for a task.
type Effect struct {
	Kind   EffectKind `json:"kind"`
	Repo   string     `json:"repo"`
	Number int        `json:"number"`
	State  State      `json:"state,omitempty"`
}

// Decision is what rules decided for one event: the task record to keep (nil
// when nothing changed) and the effects to apply, in order.
type Decision struct {
	Task    *Task
	Effects []Effect
}

// DecideTask decides what event ev means for task t (nil when the issue is not
// tracked yet).
func DecideTask(t *Task, ev Event) Decision {
	switch ev.Kind {
	case IssueOpened:
		if t != nil {
			return Decision{} // already tracked: an opened event changes nothing
		}
		nt := &Task{
			Repo:    ev.Issue.Repo,
			Number:  ev.Issue.Number,
			Title:   ev.Issue.Title,
			State:   Pending,
			Opener:  ev.Actor,
			Attempt: 1,
			History: []Transition{{To: Pending, Actor: ev.Actor, At: ev.At, Why: "issue opened"}},
		}
		return Decision{Task: nt, Effects: []Effect{
			{Kind: EffectSetState, Repo: nt.Repo, Number: nt.Number, State: Pending},
			{Kind: EffectSyncCard, Repo: nt.Repo, Number: nt.Number},
		}}
	}
	return Decision{}
}

// Package rules is countersign's domain, pure: task and goal state machines,
// separation of roles, command parsing, contracts. Facts and an event go in, a
// decision (the new record, the effects to apply to GitHub) comes out. Nothing
// here does I/O, reads the clock or knows about go-github.
package rules

import (
	"fmt"
	"time"
)

// State is a task's lifecycle state; each is carried on GitHub as one label.
type State string

// The task states, in lifecycle order (DESIGN §2).
const (
	Pending    State = "pending"
	Assigned   State = "assigned"
	InProgress State = "in-progress"
	Review     State = "review"
	Completed  State = "completed"
	Verified   State = "verified"
)

// States lists every task state in lifecycle order.
var States = []State{Pending, Assigned, InProgress, Review, Completed, Verified}

// StateLabelPrefix starts every task state label.
const StateLabelPrefix = "state:"

// Label is the GitHub label that carries s.
func (s State) Label() string { return StateLabelPrefix + string(s) }

// Valid reports whether s is one of States.
func (s State) Valid() bool {
	for _, v := range States {
		if s == v {
			return true
		}
	}
	return false
}

// StateFromLabel returns the state a label names, if it is a state label.
func StateFromLabel(label string) (State, bool) {
	if len(label) <= len(StateLabelPrefix) || label[:len(StateLabelPrefix)] != StateLabelPrefix {
		return "", false
	}
	s := State(label[len(StateLabelPrefix):])
	return s, s.Valid()
}

// Task is the record countersign keeps for one tracked issue. It is stored in
// the store and, as a copy, in the task card's hidden marker on GitHub.
type Task struct {
	Repo    string       `json:"repo"`   // "owner/name"
	Number  int          `json:"number"` // issue number
	Title   string       `json:"title"`
	State   State        `json:"state"`
	Opener  string       `json:"opener"`
	Attempt int          `json:"attempt"` // 1 for the first attempt; a rejection starts the next
	History []Transition `json:"history"`
}

// Key is the ordering key of a task: one task's events are decided one at a time.
func (t *Task) Key() string { return TaskKey(t.Repo, t.Number) }

// TaskKey is the ordering key of the task that issue number n of repo would be.
func TaskKey(repo string, n int) string { return fmt.Sprintf("%s#%d", repo, n) }

// Transition is one line of a task's history.
type Transition struct {
	From  State     `json:"from,omitempty"`
	To    State     `json:"to"`
	Actor string    `json:"actor"`
	At    time.Time `json:"at"`
	Why   string    `json:"why,omitempty"`
}

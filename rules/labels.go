package rules

import "strings"

// The labels countersign owns besides the state labels.
const (
	LabelEscalated  = "escalated"
	LabelUnverified = "unverified"
	LabelForced     = "forced"
	LabelGoal       = "goal"
)

// LabelSpec is how countersign creates one of its labels in a repository.
type LabelSpec struct {
	Name        string
	Color       string // hex, no '#'
	Description string
}

var stateLabelSpecs = map[State]LabelSpec{
	Pending:    {Color: "ededed", Description: "countersign: created, not yet assigned"},
	Assigned:   {Color: "c5def5", Description: "countersign: assigned, not started"},
	InProgress: {Color: "1d76db", Description: "countersign: being built"},
	Review:     {Color: "fbca04", Description: "countersign: submitted for review"},
	Completed:  {Color: "0e8a16", Description: "countersign: approved, awaiting independent verification"},
	Verified:   {Color: "5319e7", Description: "countersign: independently verified"},
}

var otherLabelSpecs = map[string]LabelSpec{
	LabelEscalated:  {Color: "b60205", Description: "countersign: repeated rejection or failure; a lead must triage"},
	LabelUnverified: {Color: "d93f0b", Description: "countersign: marked verified by a lead without verification"},
	LabelForced:     {Color: "d93f0b", Description: "countersign: a lead bypassed every gate"},
	LabelGoal:       {Color: "0052cc", Description: "countersign: a milestone's goal dashboard"},
}

// Spec returns how countersign creates the label name, for the labels it owns;
// ok is false for any other label.
func Spec(name string) (LabelSpec, bool) {
	if s, ok := StateFromLabel(name); ok {
		spec := stateLabelSpecs[s]
		spec.Name = name
		return spec, true
	}
	if spec, ok := otherLabelSpecs[name]; ok {
		spec.Name = name
		return spec, true
	}
	if strings.HasPrefix(name, "goal:") {
		return LabelSpec{Name: name, Color: "0052cc", Description: "countersign: goal state"}, true
	}
	return LabelSpec{}, false
}

// TaskOwned reports whether only countersign may put label on, or take it off,
// a task: its state labels and escalated, unverified, forced, and the goal
// labels (a task is never a goal). GitHub's label names are case-insensitive,
// and so is this.
func TaskOwned(label string) bool {
	l := strings.ToLower(label)
	return strings.HasPrefix(l, StateLabelPrefix) || l == LabelEscalated || l == LabelUnverified || l == LabelForced || GoalOwned(l)
}

// Owned reports whether label is one of the repository labels countersign
// owns (a task's or a goal's): a rename or deletion of one is undone.
func Owned(label string) bool { return TaskOwned(label) }

// LabelRepair is what countersign does when someone changes a repository
// label (a label webhook: action "edited" with the name it had, from, or
// "deleted"): the labels it owns are its own. A rename of an owned label is
// undone, and so is a rename onto an owned name (it would put that state on
// every issue carrying the label); a deleted owned label is created again
// (the tasks that carried it get it back from their records). Any other
// change is no concern of countersign's.
func LabelRepair(repo, action, name, from string) []Effect {
	switch action {
	case "edited":
		if from == "" || from == name || !(Owned(from) || Owned(name)) {
			return nil
		}
		return []Effect{{Kind: EffectRenameLabel, Repo: repo, Label: name, RenameTo: from}}
	case "deleted":
		if uses(strings.ToLower(name)) {
			return []Effect{{Kind: EffectCreateLabel, Repo: repo, Label: strings.ToLower(name)}}
		}
	}
	return nil
}

// uses reports whether label is one countersign puts on issues.
func uses(label string) bool {
	if _, ok := StateFromLabel(label); ok {
		return true
	}
	if _, ok := GoalStateFromLabel(label); ok {
		return true
	}
	_, ok := otherLabelSpecs[label]
	return ok
}

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
// a task: its state labels and escalated, unverified, forced.
func TaskOwned(label string) bool {
	return strings.HasPrefix(label, StateLabelPrefix) || label == LabelEscalated || label == LabelUnverified || label == LabelForced
}

package mcp

import (
	"context"
	"fmt"
	"strings"

	"github.com/countersign/countersign/rules"
)

// unsettled is what a state reads while its owned label is not one
// countersign's bot set (a person put it on, and countersign has not put its
// own back yet).
const unsettled = "unsettled"

// stateKind is which owned labels carry a state: a task's state:* or a
// goal's goal:*.
type stateKind int

const (
	taskKind stateKind = iota
	goalKind
)

// of is the state label l says, if it is an owned label of k.
func (k stateKind) of(l string) (string, bool) {
	if k == goalKind {
		st, ok := rules.GoalStateFromLabel(l)
		return string(st), ok
	}
	st, ok := rules.StateFromLabel(l)
	return string(st), ok
}

// labels are the owned labels of k on is.
func (k stateKind) labels(is *Issue) []string {
	var out []string
	for _, l := range is.Labels {
		if _, ok := k.of(l); ok {
			out = append(out, l)
		}
	}
	return out
}

// shown is the state is's labels show, believed or not: untracked without
// an owned label, unsettled with more than one.
func (k stateKind) shown(is *Issue) string {
	ls := k.labels(is)
	switch len(ls) {
	case 0:
		return untracked
	case 1:
		st, _ := k.of(ls[0])
		return st
	}
	return unsettled
}

// settled is the state is's owned label says, believed only when
// countersign's bot put that label on: the latest labeled event of the label
// (GitHub's issue events) must be the bot's. Otherwise the state is
// unsettled, and why says why. An issue without an owned label is
// untracked (no events are read for it).
func (s *server) settled(ctx context.Context, c *caller, repo string, is *Issue, k stateKind) (state, why string, err error) {
	ls := k.labels(is)
	if len(ls) == 0 {
		return untracked, "", nil
	}
	evs, err := c.gh.LabelEvents(ctx, repo, is.Number)
	if err != nil {
		return "", "", err
	}
	return s.judgeLabels(ls, evs, k)
}

// judgeLabels believes the owned labels ls only when the bot put each on
// last (evs oldest first).
func (s *server) judgeLabels(ls []string, evs []LabelEvent, k stateKind) (string, string, error) {
	var doubts []string
	for _, l := range ls {
		var last *LabelEvent
		for i := range evs {
			if strings.EqualFold(evs[i].Label, l) {
				last = &evs[i]
			}
		}
		switch {
		case last == nil:
			doubts = append(doubts, fmt.Sprintf("GitHub has no record of who put %s on (a renamed label?)", l))
		case !last.Labeled:
			doubts = append(doubts, fmt.Sprintf("%s was taken off by @%s just now: the state is changing", l, last.Actor))
		case !s.isBot(last.Actor, last.Bot):
			doubts = append(doubts, fmt.Sprintf("%s was put on by @%s at %s, not by countersign; countersign puts its own label back once it hears of it",
				l, last.Actor, last.At.UTC().Format("2006-01-02 15:04:05 UTC")))
		}
	}
	if len(doubts) > 0 {
		return unsettled, strings.Join(doubts, "; "), nil
	}
	if len(ls) > 1 {
		return unsettled, fmt.Sprintf("countersign's labels %s are all on it: the state is changing", strings.Join(ls, ", ")), nil
	}
	st, _ := k.of(ls[0])
	return st, "", nil
}

package ghread

import (
	"context"
	"fmt"
	"strings"

	"github.com/countersign/countersign/rules"
)

// Unsettled is what a state reads while its owned label is not one
// countersign's bot set (a person put it on, and countersign has not put its
// own back yet).
const Unsettled = "unsettled"

// Untracked is what a state reads when countersign has not labeled it.
const Untracked = "untracked"

// Kind is which owned labels carry a state: a task's state:* or a
// goal's goal:*.
type Kind int

const (
	TaskKind Kind = iota
	GoalKind
)

// Bot is countersign's bot login: the App's slug and "[bot]".
type Bot string

// Is reports whether an account (a comment's or issue's author, an event's
// actor) is countersign's bot: its login, and an account of type Bot (which
// no person's account is).
func (b Bot) Is(login string, bot bool) bool {
	return bot && strings.EqualFold(login, string(b))
}

// slug is the App's slug, as GitHub's GraphQL API names its bot.
func (b Bot) slug() string { return strings.TrimSuffix(string(b), "[bot]") }

// isActor reports whether a GraphQL Actor is countersign's bot: GitHub
// names an App's bot by its slug, at /apps/<slug>.
func (b Bot) isActor(e Editor) bool {
	return strings.EqualFold(e.Path, "/apps/"+b.slug()) &&
		(strings.EqualFold(e.Login, b.slug()) || strings.EqualFold(e.Login, string(b)))
}

// of is the state label l says, if it is an owned label of k.
func (k Kind) of(l string) (string, bool) {
	if k == GoalKind {
		st, ok := rules.GoalStateFromLabel(l)
		return string(st), ok
	}
	st, ok := rules.StateFromLabel(l)
	return string(st), ok
}

// Labels are the owned labels of k on is.
func (k Kind) Labels(is *Issue) []string {
	var out []string
	for _, l := range is.Labels {
		if _, ok := k.of(l); ok {
			out = append(out, l)
		}
	}
	return out
}

// Shown is the state is's labels show, believed or not: untracked without
// an owned label, unsettled with more than one.
func (k Kind) Shown(is *Issue) string {
	ls := k.Labels(is)
	switch len(ls) {
	case 0:
		return Untracked
	case 1:
		st, _ := k.of(ls[0])
		return st
	}
	return Unsettled
}

// Settled is the state is's owned label says, believed only when
// countersign's bot put that label on: the latest labeled event of the label
// (GitHub's issue events) must be the bot's. Otherwise the state is
// unsettled, and why says why. An issue without an owned label is
// untracked (no events are read for it).
func Settled(ctx context.Context, gh GitHub, bot Bot, repo string, is *Issue, k Kind) (state, why string, err error) {
	ls := k.Labels(is)
	if len(ls) == 0 {
		return Untracked, "", nil
	}
	evs, err := gh.LabelEvents(ctx, repo, is.Number)
	if err != nil {
		return "", "", err
	}
	return judgeLabels(bot, ls, evs, k)
}

// judgeLabels believes the owned labels ls only when the bot put each on
// last (evs oldest first).
func judgeLabels(bot Bot, ls []string, evs []LabelEvent, k Kind) (string, string, error) {
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
		case !bot.Is(last.Actor, last.Bot):
			doubts = append(doubts, fmt.Sprintf("%s was put on by @%s at %s, not by countersign; countersign puts its own label back once it hears of it",
				l, last.Actor, last.At.UTC().Format("2006-01-02 15:04:05 UTC")))
		}
	}
	if len(doubts) > 0 {
		return Unsettled, strings.Join(doubts, "; "), nil
	}
	if len(ls) > 1 {
		return Unsettled, fmt.Sprintf("countersign's labels %s are all on it: the state is changing", strings.Join(ls, ", ")), nil
	}
	st, _ := k.of(ls[0])
	return st, "", nil
}

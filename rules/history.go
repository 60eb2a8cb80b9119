package rules

import (
	"fmt"
	"slices"
)

// A task's history is bounded, so that no one can grow its card (which
// carries it twice: record and table) past GitHub's 65,536 characters by
// repeating an event that changes nothing (closing and reopening a pull
// request, unlinking and relinking it, toggling an owned label, deleting the
// card):
//   - a note (an entry that changes no state) identical to one recorded
//     since the last change of state, among the last repeatWindow entries,
//     is counted there (Repeats, Last) instead of added;
//   - the record keeps at most maxHistory entries: the first historyHead,
//     one entry counting those left out (Omitted), and the latest;
//   - the card shows and carries fewer still (CardView).
const (
	repeatWindow = 10
	maxHistory   = 300
	historyHead  = 20
)

// repeated counts note e on an identical note recorded since the last change
// of state, among the last repeatWindow entries, and reports whether it did.
func (t *Task) repeated(e Transition) bool {
	for i := len(t.History) - 1; i >= 0 && i >= len(t.History)-repeatWindow; i-- {
		h := &t.History[i]
		if h.From != h.To || h.Omitted > 0 {
			return false // a change of state: the note starts a new run
		}
		if h.To == e.To && h.Actor == e.Actor && h.Why == e.Why {
			h.Repeats++
			h.Last = e.At
			return true
		}
	}
	return false
}

// boundHistory leaves out entries from the middle of h so that at most max
// remain: the first head, one entry counting those left out (itself a note,
// in the state the left-out entries ended in), and the latest.
func boundHistory(h []Transition, max, head int) []Transition {
	if len(h) <= max || max < head+2 {
		return h
	}
	tail := max - head - 1
	gone := h[head : len(h)-tail]
	n := 0
	for _, g := range gone {
		n += max1(g.Omitted) + g.Repeats
	}
	last := gone[len(gone)-1]
	out := slices.Clone(h[:head])
	out = append(out, Transition{From: last.To, To: last.To, At: last.At, Omitted: n,
		Why: fmt.Sprintf("%d entries left out to keep the history bounded", n)})
	return append(out, h[len(h)-tail:]...)
}

func max1(n int) int { return max(n, 1) }

// CardView levels: each shows less of the task, for a card that would not
// fit in GitHub's comment limit otherwise.
const CardViewLevels = 4

// CardView is the copy of t a task card shows and carries in its signed
// record at level (0: most; CardViewLevels-1: least): its history
// compacted to the first and latest entries and, from level 1 on, its
// rejections, unlinked identities, CI runs and closed pull requests trimmed.
// It keeps what a rebuild needs: the state, the roles, the open and merged
// pull requests, the latest history; the store keeps the rest.
func (t *Task) CardView(level int) *Task {
	c := t.Clone()
	head, tail := []int{10, 3, 1, 1}[min(level, 3)], []int{40, 12, 4, 2}[min(level, 3)]
	c.History = boundHistory(c.History, head+tail+1, head)
	if level < 1 {
		return c
	}
	keep := []int{0, 5, 2, 1}[min(level, 3)]
	if n := len(c.Rejections); n > keep {
		c.Rejections = c.Rejections[n-keep:]
	}
	for i := range c.Rejections {
		c.Rejections[i].Reason = clip(c.Rejections[i].Reason, maxWhy)
	}
	for i := range c.History {
		c.History[i].Why = clip(c.History[i].Why, 120)
	}
	identities := []int{0, 3, 1, 0}[min(level, 3)]
	prs := c.PRs[:0:0]
	for _, p := range c.PRs {
		if level >= 2 && !p.CarriesCode() {
			continue // a closed, unmerged pull request carries none of the work
		}
		if n := len(p.Unresolved); n > identities {
			p.Unresolved = slices.Clone(p.Unresolved[:identities])
			for i := range p.Unresolved {
				p.Unresolved[i] = clip(p.Unresolved[i], 100)
			}
			p.Unresolved = append(p.Unresolved, fmt.Sprintf("%d more, listed by countersign proofpack", n-identities))
		}
		if level >= 3 {
			p.Runs, p.Suites = nil, nil // read again at the next CI result
		}
		prs = append(prs, p)
	}
	c.PRs = prs
	return c
}

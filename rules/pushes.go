package rules

import (
	"slices"
	"time"
)

// Pushes are what countersign keeps of a repository's pushes, whatever ref
// they went to, so that whoever pushed the commits a pull request carries is
// one of its builders wherever they pushed them (DESIGN §1): a commit pushed
// to branch "wip" by bob and then to the pull request's branch by dave (`git
// push origin wip:login`) was pushed by both.

// Push is one push (a push webhook): who pushed, the ref and the commit it
// moved to (After), and the commits it brought (the webhook's commits, oldest
// first, at most MaxPushCommits of them).
type Push struct {
	By      User      `json:"by"`
	Ref     string    `json:"ref,omitempty"`
	After   string    `json:"after"`
	Commits []string  `json:"commits,omitempty"`
	At      time.Time `json:"at"`
}

// The bounds of what is kept of a repository's pushes. Only the newest
// MaxPushes pushes of the last PushTTL are kept, with at most MaxPushShas
// commit ids in all; of each push, its tip and its MaxPushCommits oldest
// commits. A pull request's commits are a chain from its base, so if it
// carries any commit of a push it carries that push's oldest one (unless the
// base has it already): those are the ones worth keeping. Older pushes are
// known only as GitHub's repository activity lists them (app/decide:
// headPushers): someone who waits for MaxPushes later pushes, and for the
// activity read to pass them too, before their commits are copied to a pull
// request's branch is not known as their pusher. At the bounds the record is
// about 200 bytes a push (one commit), 450 KB at most.
const (
	MaxPushes      = 1000
	MaxPushShas    = 10000
	MaxPushCommits = 50
	PushTTL        = 90 * 24 * time.Hour
)

// RecordPush is pushes (oldest first) with p added, within the bounds as of
// now. A push that moves a ref to a commit names its pusher whether or not
// its commits are new to the repository. A push by no one (the account is
// unknown), of nothing (a deletion: After empty) or already kept (the same
// pusher, ref and tip: a redelivery) leaves pushes as they are (changed is
// false).
func RecordPush(pushes []Push, p Push, now time.Time) (out []Push, changed bool) {
	if p.By.IsZero() || p.After == "" {
		return pushes, false
	}
	if slices.ContainsFunc(pushes, func(q Push) bool { return q.By.Is(p.By) && q.Ref == p.Ref && q.After == p.After }) {
		return pushes, false
	}
	if len(p.Commits) > MaxPushCommits {
		p.Commits = p.Commits[:MaxPushCommits]
	}
	p.Commits = slices.DeleteFunc(slices.Clone(p.Commits), func(s string) bool { return s == "" || s == p.After })
	if len(p.Commits) == 0 {
		p.Commits = nil
	}
	// Drop the expired, then the oldest while over a bound (never p).
	out = slices.DeleteFunc(slices.Clone(pushes), func(q Push) bool { return now.Sub(q.At) > PushTTL })
	out = append(out, p)
	shas := 0
	for _, q := range out {
		shas += 1 + len(q.Commits)
	}
	drop := 0
	for drop < len(out)-1 && (len(out)-drop > MaxPushes || shas > MaxPushShas) {
		shas -= 1 + len(out[drop].Commits)
		drop++
	}
	return out[drop:], true
}

// PushersOf are, once each in the order pushes have them, everyone who
// pushed one of the commits shas: a push whose tip or one of whose commits
// is among them.
func PushersOf(pushes []Push, shas map[string]bool) []User {
	var out []User
	for _, p := range pushes {
		if slices.ContainsFunc(out, p.By.Is) {
			continue
		}
		if shas[p.After] || slices.ContainsFunc(p.Commits, func(s string) bool { return shas[s] }) {
			out = append(out, p.By)
		}
	}
	return out
}

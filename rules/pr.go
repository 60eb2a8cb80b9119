package rules

import (
	"slices"
	"time"
)

// PullRequest is the record countersign keeps for a pull request: the facts
// its tasks see, and which tasks it closes.
type PullRequest struct {
	Repo string `json:"repo"`
	PRFacts
	// Links are the issues its body closes (ClosingRefs), in order.
	Links []int `json:"links,omitempty"`
	// CommittersHead is the head for which Committers (and the pushers
	// GitHub's repository activity names for HeadRef) were read.
	CommittersHead string `json:"committers_head,omitempty"`
	// HeadRef is the branch its head is on, in repository HeadRepo (a fork's
	// for a pull request from a fork).
	HeadRef  string `json:"head_ref,omitempty"`
	HeadRepo string `json:"head_repo,omitempty"`
	// HeadOwner is the owner of HeadRepo, and HeadOwnerOrg whether it is an
	// organization. Anyone may open a pull request from any fork's branch:
	// the fork's owner, who can push to it, need not be its author.
	HeadOwner    User `json:"head_owner,omitzero"`
	HeadOwnerOrg bool `json:"head_owner_org,omitempty"`
	// TooMany is how many issues its description names when that is more
	// than tasks.max_per_pr: it then links none of them (Links is empty).
	TooMany int `json:"too_many,omitempty"`
	// Named are the issues its description closes, as last decided (Links
	// holds those it may link), and Refused those an outsider's pull request
	// may not link (PRFacts.Outsider).
	Named   []int `json:"named,omitempty"`
	Refused []int `json:"refused,omitempty"`
	// Base is its base branch, as the event the record was made from said.
	Base string `json:"base,omitempty"`
	// Changes are what it merges into Base as last read (when its files were):
	// each changed file's name and a fingerprint of its change (MergeEntry).
	// PRFacts.Merges names what approvals count for: read again on a new head;
	// on a base change it stays unless the changes differ in a way a merged
	// pull request into the new base does not account for.
	Changes map[string]string `json:"changes,omitempty"`
	// Excused are the changes of Changes that no approval of it covers but
	// that its base held when its base last changed (a stack's lower pull
	// request, squash-merged): PRFacts.Merges left them out. A push to Base
	// that undoes one makes what it merges read as new (rules.Undone).
	Excused []Excuse `json:"excused,omitempty"`
	// UpdatedAt is when GitHub last changed the pull request, as the event
	// the record was made from said: an older snapshot (a delivery healed or
	// retried late) never restates it.
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// Facts are the pull request as rules' task events see it.
func (p *PullRequest) Facts() *PRFacts {
	f := p.PRFacts
	f.Committers = append([]Member(nil), p.Committers...)
	f.Pushers = append([]User(nil), p.Pushers...)
	f.Unresolved = append([]string(nil), p.Unresolved...)
	return &f
}

// TaskEvent is an event for task Number that a pull request event means.
type TaskEvent struct {
	Number int
	Kind   EventKind
}

// Fanout lists the task events that a pull request event of kind means, given
// the record before the event (nil if there was none) and after it. A task the
// pull request starts to close gets PRLinked first; a task it no longer closes
// (body edited, or closed unmerged) gets PRUnlinked. kind is PRLinked for an
// event that only (re)states the pull request (opened, reopened, edited): the
// tasks it already closed hear of it only when its description changed.
func Fanout(old, cur *PullRequest, kind EventKind) []TaskEvent {
	var before []int
	if old != nil && old.Open {
		before = old.Links
	}
	var out []TaskEvent
	if !cur.Open && !cur.Merged { // closed unmerged: it closes nothing any more
		for _, n := range union(before, cur.Links) {
			if n != cur.Number {
				out = append(out, TaskEvent{n, PRUnlinked})
			}
		}
		return out
	}
	for _, n := range cur.Links {
		if n == cur.Number {
			continue
		}
		if !slices.Contains(before, n) {
			out = append(out, TaskEvent{n, PRLinked})
			if kind == PRLinked || kind == PRPushed || kind == PRReady || kind == PRDraft || kind == PRRetargeted {
				continue // PRLinked already carries the pull request as it is
			}
		}
		if kind != PRLinked || old.Body != cur.Body { // a new description may lift a contradiction
			out = append(out, TaskEvent{n, kind})
		}
	}
	for _, n := range before {
		if n != cur.Number && !slices.Contains(cur.Links, n) {
			out = append(out, TaskEvent{n, PRUnlinked})
		}
	}
	return out
}

func union(a, b []int) []int {
	out := append([]int(nil), a...)
	for _, n := range b {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

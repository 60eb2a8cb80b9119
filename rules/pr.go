package rules

import (
	"regexp"
	"slices"
	"strings"
)

// PullRequest is the record countersign keeps for a pull request: the facts
// its tasks see, and which tasks it closes.
type PullRequest struct {
	Repo string `json:"repo"`
	PRFacts
	// Links are the issues its body closes (ClosingRefs), in order.
	Links []int `json:"links,omitempty"`
	// CommittersHead is the head for which Committers were read.
	CommittersHead string `json:"committers_head,omitempty"`
	// TooMany is how many issues its description names when that is more
	// than tasks.max_per_pr: it then links none of them (Links is empty).
	TooMany int `json:"too_many,omitempty"`
	// Named are the issues its description closes, as last decided (Links
	// holds those it may link), and Refused those an outsider's pull request
	// may not link (PRFacts.Outsider).
	Named   []int `json:"named,omitempty"`
	Refused []int `json:"refused,omitempty"`
}

// Facts are the pull request as rules' task events see it.
func (p *PullRequest) Facts() *PRFacts {
	f := p.PRFacts
	f.Committers = append([]Member(nil), p.Committers...)
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
			if kind == PRLinked || kind == PRPushed || kind == PRReady || kind == PRDraft {
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

// noreplyRE is GitHub's private commit email: "ID+login@users.noreply.github.com"
// or "login@users.noreply.github.com".
var noreplyRE = regexp.MustCompile(`(?i)^(?:\d+\+)?([A-Za-z0-9-]+(?:\[bot\])?)@users\.noreply\.github\.com$`)

// coAuthorRE is a Co-authored-by trailer: "Co-authored-by: Name <email>".
var coAuthorRE = regexp.MustCompile(`(?im)^[ \t]*co-authored-by:[ \t]*([^<\r\n]*?)[ \t]*<([^>\r\n]*)>[ \t]*\r?$`)

// CoAuthors are the logins named by a commit message's Co-authored-by
// trailers. GitHub itself matches co-authors by email; without that lookup a
// trailer's login is read from a GitHub noreply email, else from the name when
// it is shaped like a login. Erring towards more builders only makes
// verification stricter.
func CoAuthors(message string) []string {
	var out []string
	for _, m := range coAuthorRE.FindAllStringSubmatch(message, -1) {
		if login := LoginFromAuthor(m[1], m[2]); login != "" && !slices.ContainsFunc(out, func(o string) bool { return SameLogin(o, login) }) {
			out = append(out, login)
		}
	}
	return out
}

// LoginFromAuthor guesses the login of a commit author GitHub did not match
// to an account: from a noreply email, else a login-shaped name.
func LoginFromAuthor(name, email string) string {
	if m := noreplyRE.FindStringSubmatch(strings.TrimSpace(email)); m != nil && (loginRE.MatchString(m[1]) || botRE.MatchString(m[1])) {
		return m[1]
	}
	if name = strings.TrimSpace(name); loginRE.MatchString(name) {
		return name
	}
	return ""
}

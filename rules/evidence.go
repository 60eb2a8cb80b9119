package rules

import (
	"strings"
	"time"
)

// EvidenceSchema names the version of Evidence's JSON shape (`countersign
// proofpack` prints it): a change that is not purely additive gets a new one.
const EvidenceSchema = "countersign.proofpack/v1"

// Evidence is the proof that a task is done, or of how far it got: who built it, who approved and who verified it and when, with
// their notes; each criterion of its contract with its result and the run or
// status that decided it; the rejections, failed attempts and a lead's
// overrides. The verification check run shows it for each task its pull
// request closes, and `countersign proofpack` prints it as JSON. It is worked
// out from the task's record alone.
type Evidence struct {
	Schema   string            `json:"schema"`
	Repo     string            `json:"repo"`
	Task     int               `json:"task"`
	Title    string            `json:"title"`
	State    State             `json:"state"`
	Attempt  int               `json:"attempt"`
	Closed   bool              `json:"closed"`
	Contract *EvidenceContract `json:"contract,omitempty"`
	// Card is the URL of the task card (filled in by the adapters).
	Card string `json:"card,omitempty"`
	// Source says where the record came from, for an audit (filled in by the
	// adapters): "store", or "card" (its signature verified).
	Source       string             `json:"source,omitempty"`
	Builders     []Member           `json:"builders"`
	Approvals    []EvidenceApproval `json:"approvals"`
	Verification *EvidenceVerdict   `json:"verification,omitempty"`
	Criteria     []Criterion        `json:"criteria"`
	Rejections   []Rejection        `json:"rejections"`
	Failures     []Failure          `json:"failures"`
	Overrides    []EvidenceVerdict  `json:"overrides"`
	PullRequests []EvidencePR       `json:"pull_requests"`
}

// EvidenceContract is how the task's completion is verified.
type EvidenceContract struct {
	Type ContractType `json:"type"`
	Why  string       `json:"why,omitempty"`
	From string       `json:"from"` // "auto", or "lead" after /contract
}

// EvidenceApproval is one approval that counts for the current attempt.
type EvidenceApproval struct {
	By   User      `json:"by"`
	At   time.Time `json:"at"`
	PR   int       `json:"pr,omitempty"`   // 0: /approve
	Head string    `json:"head,omitempty"` // the commit approved
}

// EvidenceVerdict is a verification (/verify), or a lead's override
// (/skip-verify, /force-complete): who, when, and what they wrote.
type EvidenceVerdict struct {
	Kind  string    `json:"kind"` // "verify", "skip-verify", "force-complete"
	By    User      `json:"by"`
	At    time.Time `json:"at"`
	Notes string    `json:"notes,omitempty"`
}

// EvidencePR is a pull request that closes the task.
type EvidencePR struct {
	Number int    `json:"number"`
	Author User   `json:"author"`
	Head   string `json:"head"`
	State  string `json:"state"` // open, draft, merged, closed
}

// EvidenceOf is task t's evidence.
func EvidenceOf(t *Task) Evidence {
	e := Evidence{Schema: EvidenceSchema, Repo: t.Repo, Task: t.Number, Title: t.Title, State: t.State, Attempt: t.Attempt,
		Closed: t.Closed, Builders: append([]Member{}, t.Builders...), Approvals: []EvidenceApproval{},
		Criteria: []Criterion{}, Rejections: append([]Rejection{}, t.Rejections...), Failures: append([]Failure{}, t.Failures...),
		Overrides: []EvidenceVerdict{}, PullRequests: []EvidencePR{}}
	if k := t.Contract; k != nil {
		e.Contract = &EvidenceContract{Type: k.Type, Why: k.Why, From: k.From}
		e.Criteria = append(e.Criteria, k.Criteria...)
	}
	for _, a := range t.Approvals {
		e.Approvals = append(e.Approvals, EvidenceApproval{By: a.By, At: a.At, PR: a.PR, Head: a.Head})
	}
	for _, p := range t.PRs {
		state := "open"
		switch {
		case p.Merged:
			state = "merged"
		case !p.Open:
			state = "closed"
		case p.Draft:
			state = "draft"
		}
		e.PullRequests = append(e.PullRequests, EvidencePR{Number: p.Number, Author: p.Author, Head: p.Head, State: state})
	}
	// The verdicts are in the history: the way into verified of the current
	// attempt is the verification (or an override); earlier overrides stay on
	// record.
	for _, h := range t.History {
		if h.To != Verified || h.From == Verified {
			continue
		}
		v, ok := verdictOf(h)
		if !ok {
			continue
		}
		if v.Kind == "verify" {
			e.Verification = &v
		} else {
			e.Overrides = append(e.Overrides, v)
		}
	}
	if t.State != Verified {
		e.Verification = nil // a verification voided by new commits or /reopen
	} else if e.Verification != nil && !t.Verifier.IsZero() {
		e.Verification.By = t.Verifier // with its id
	}
	return e
}

// verdictOf reads a transition into verified as a verdict.
func verdictOf(h Transition) (EvidenceVerdict, bool) {
	v := EvidenceVerdict{By: User{Login: h.Actor}, At: h.At}
	why := h.Why
	switch {
	case strings.HasPrefix(why, "/verify"):
		v.Kind, v.Notes = "verify", strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(why, "/verify"), ":"))
	case strings.HasPrefix(why, "/skip-verify"):
		v.Kind, v.Notes = "skip-verify", afterColon(why)
	case strings.HasPrefix(why, "/force-complete"):
		v.Kind, v.Notes = "force-complete", afterColon(why)
	default:
		return v, false
	}
	return v, true
}

func afterColon(s string) string {
	_, rest, _ := strings.Cut(s, ": ")
	return strings.TrimSpace(rest)
}

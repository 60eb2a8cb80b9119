package rules

import "time"

// ContractType says how a task's completion can be verified (seed 001).
type ContractType string

// The contract types.
const (
	// Verifiable: automated criteria (CI checks, critics' reviews) say whether it is done.
	Verifiable ContractType = "verifiable"
	// Advisory: exploratory work no automated test can judge; a lead reviews
	// its output and only a lead's /verify completes it.
	Advisory ContractType = "advisory"
	// Skip: trivial work (docs, comments, typos): lint and typecheck only.
	Skip ContractType = "skip"
)

// The activities a criterion can ask for.
const (
	ActTypecheck = "typecheck"
	ActLint      = "lint"
	ActUnitTest  = "unit-test"
	ActE2E       = "e2e"
	ActCritic    = "critic"
)

// E2E timings.
const (
	TimingImmediate = "immediate" // runs on the pull request: blocks /verify
	TimingDeferred  = "deferred"  // runs with the goal's integration check: shown, not blocking
)

// Result is where a criterion stands.
type Result string

// The results.
const (
	ResultPending   Result = "pending"   // not reported yet, or running
	ResultPass      Result = "pass"      // its checks succeeded (or its critic approved)
	ResultFail      Result = "fail"      // a check failed, timed out, was cancelled or needs action
	ResultDeferred  Result = "deferred"  // deferred e2e: checked with the goal, not the task
	ResultUnchecked Result = "unchecked" // nothing automated can check it (no check names mapped, or no pull request): the verifier does
)

// Contract is a task's verification contract: how its completion will be
// verified, written before work starts.
type Contract struct {
	Type ContractType `json:"type"`
	// Why says what decided the type, e.g. `"investigate" in the title`.
	Why      string      `json:"why,omitempty"`
	Criteria []Criterion `json:"criteria"`
	// Expected are the paths the issue body names (at most maxExpected).
	Expected []string `json:"expected,omitempty"`
	// From is how it was generated: "auto", or "lead" after /contract.
	From string    `json:"from"`
	At   time.Time `json:"at"`
}

// Criterion is one thing that must hold before the task can be verified.
type Criterion struct {
	Activity    string `json:"activity"`
	Timing      string `json:"timing,omitempty"` // e2e: immediate or deferred
	Critic      string `json:"critic,omitempty"` // critic: its name, e.g. "frontend-critic"
	Description string `json:"description"`
	// Files are some of the files that call for it (at most 3), MoreFiles how
	// many others do.
	Files     []string `json:"files,omitempty"`
	MoreFiles int      `json:"more_files,omitempty"`

	// Where it stands, filled in from CI and reviews (not by generation).
	Result  Result    `json:"result,omitempty"`
	Detail  string    `json:"detail,omitempty"` // e.g. "test: failure on #2 (abc1234)"
	URL     string    `json:"url,omitempty"`    // the run that decided it
	Attempt int       `json:"attempt,omitempty"`
	At      time.Time `json:"at,omitzero"`
}

// Key identifies a criterion within a contract: its activity, and its timing
// or critic.
func (c Criterion) Key() string {
	switch {
	case c.Critic != "":
		return c.Activity + ":" + c.Critic
	case c.Timing != "":
		return c.Activity + ":" + c.Timing
	}
	return c.Activity
}

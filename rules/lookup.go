// This file declares what a decision asks of the world beyond its event, and
// a lookup whose answers are known in advance.

package rules

import "strings"

// Lookup answers what a task's decision may need to know of the repository's
// people. rules asks it exactly where a decision turns on the answer, and
// nowhere else: an adapter never has to guess in advance what will be asked.
// rules may ask the same question more than once in one decision.
//
// rules stays pure, so a Lookup returns no error. The contract for an
// implementation that reads its answers from somewhere (GitHub): remember each
// answer for the one decision; when an answer cannot be had, answer the zero
// value (Person{}, nil, 0, false) and remember the first error. Its caller
// checks that error once the decision returns and, if there is one, discards
// the decision and fails the delivery (so that it is retried): a decision made
// on a missing answer is never committed.
type Lookup interface {
	// Person is what the repository says about u (the event's actor, or a
	// review's reviewer): lead, writer, eligible to verify.
	Person(u User) Person
	// Critics are the critics (contracts.critics) whose reviewers include u.
	Critics(u User) []string
	// TeamSize is how many people may verify (for separation: auto); 0 when
	// unknown.
	TeamSize() int
	// Leads are the mentions ("alice", "@acme/leads") that reach the leads.
	Leads() []string
	// Pilot is pilot (a login that agents: names) as GitHub knows it, with
	// its id; false when it is not known, and the pilot is then known by its
	// login only.
	Pilot(login string) (User, bool)
}

// GoalLookup answers what a goal's decision may need to know, under the
// same contract as Lookup.
type GoalLookup interface {
	// Person is what the repository says about u.
	Person(u User) Person
	// Leads are the mentions that reach the leads.
	Leads() []string
	// Integration is the state of the integration check
	// (GoalFacts.IntegrationCheck) on the default branch's head: one of
	// IntegrationSuccess, IntegrationFailure, IntegrationPending,
	// IntegrationNone.
	Integration() string
}

// Answers are a lookup's answers known in advance: for tests, and for
// callers that have them. StaticLookup gives them.
type Answers struct {
	// Person is the answer for whoever is asked about.
	Person Person
	// Critics are the critics of whoever is asked about.
	Critics  []string
	TeamSize int
	Leads    []string
	// Pilots are the pilots' accounts, keyed by the pilot's login in lower
	// case; a pilot missing here is not known.
	Pilots      map[string]User
	Integration string
}

// StaticLookup is a Lookup and a GoalLookup that gives Answers as they are
// when asked.
type StaticLookup struct{ Answers *Answers }

// Known is a StaticLookup that gives a.
func Known(a Answers) StaticLookup { return StaticLookup{&a} }

func (s StaticLookup) Person(User) Person    { return s.Answers.Person }
func (s StaticLookup) Critics(User) []string { return s.Answers.Critics }
func (s StaticLookup) TeamSize() int         { return s.Answers.TeamSize }
func (s StaticLookup) Leads() []string       { return s.Answers.Leads }
func (s StaticLookup) Integration() string   { return s.Answers.Integration }
func (s StaticLookup) Pilot(login string) (User, bool) {
	u, ok := s.Answers.Pilots[strings.ToLower(login)]
	return u, ok
}

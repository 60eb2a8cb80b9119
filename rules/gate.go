package rules

import (
	"fmt"
	"slices"
	"strings"
)

// The values of gate.untracked.
const (
	// UntrackedRequire: a pull request that closes no task does not pass.
	UntrackedRequire = "require"
	// UntrackedAllow: a pull request that closes no task passes, saying so.
	UntrackedAllow = "allow"
)

// untrackedModes are the values of gate.untracked.
var untrackedModes = []string{UntrackedRequire, UntrackedAllow}

// GateConfig says what the countersign/verification check answers a pull
// request that closes no task (DESIGN §2: every pull request gets an answer).
type GateConfig struct {
	Untracked string `yaml:"untracked" doc:"A pull request that closes no task: require (its countersign/verification check does not pass) or allow (it passes, saying it closes no task)."`
	// Exempt are the authors whose pull requests may close no task: each
	// login names the account that held it when the configuration first
	// named it (Config.Pins), as leads' and verifiers' logins do.
	Exempt []string `yaml:"exempt" doc:"Logins whose pull requests may close no task (their check passes), e.g. dependabot[bot]."`
}

// rawGate is gate: as written (nil: not given, keep the default).
type rawGate struct {
	Untracked *string   `yaml:"untracked"`
	Exempt    *[]string `yaml:"exempt"`
}

// apply overlays the keys g sets on c.
func (g *rawGate) apply(c *GateConfig) {
	if g == nil {
		return
	}
	set(&c.Untracked, g.Untracked)
	set(&c.Exempt, g.Exempt)
}

// normalize checks gate: (see Config.normalize).
func (g *GateConfig) normalize(at locator) error {
	var (
		errs problems
		err  error
	)
	if !slices.Contains(untrackedModes, g.Untracked) {
		msg := "gate.untracked must be require or allow, not " + quote(g.Untracked)
		errs.add(at.errorf(msg+didYouMean(g.Untracked, untrackedModes), "gate", "untracked"))
	}
	g.Exempt, err = logins(g.Exempt, at, "gate", "exempt")
	errs.add(err)
	return errs.err()
}

// Exempted reports whether login is one of gate.exempt.
func (g GateConfig) Exempted(login string) bool {
	for _, e := range g.Exempt {
		if SameLogin(e, login) {
			return true
		}
	}
	return false
}

// ExemptedUser reports whether account u is one of gate.exempt: its login
// is, and that login was pinned (pins: Config.Pins) to u's account, or to
// none. An account that took the login after its holder gave it up is not
// exempted.
func (g GateConfig) ExemptedUser(u User, pins map[string]int64) bool {
	return g.Exempted(u.Login) && Config{Pins: pins}.Pinned(u.Login, u)
}

// gateRelaxations are the ways next's gate: lets more pull requests through
// than was's (see Relaxations).
func gateRelaxations(was, next GateConfig) []string {
	var out []string
	if was.Untracked == UntrackedRequire && next.Untracked == UntrackedAllow {
		out = append(out, "gate.untracked goes from require to allow: a pull request that closes no task passes the countersign/verification check")
	}
	if extra := added(was.Exempt, next.Exempt); len(extra) > 0 && next.Untracked == UntrackedRequire {
		out = append(out, fmt.Sprintf("gate.exempt gains %s: their pull requests pass the countersign/verification check without closing a task", strings.Join(extra, ", ")))
	}
	return out
}

// Untracked answers on a check that pull request closes no task.
const (
	UntrackedFails   = "require" // it does not pass (gate.untracked: require)
	UntrackedPasses  = "allow"   // it passes (gate.untracked: allow)
	UntrackedExempts = "exempt"  // it passes: its author is in gate.exempt
)

// UntrackedCheck is the check of pull request pr when it links no task: a
// completed run, never one that waits, so that a required check has an
// answer. It passes under gate.untracked allow, or when pr's author is in
// gate.exempt, and only when pr names no issue to close at all: one whose
// named issues could not be linked (too many, or an author who may not build
// here) is not work without a task, and never passes this way. pins are the
// configuration's (Config.Pins): an exemption is of an account.
func UntrackedCheck(pr *PullRequest, g GateConfig, pins map[string]int64) Check {
	c := Check{Status: "completed", Conclusion: "failure", Tasks: []CheckTask{}, Untracked: UntrackedFails}
	switch {
	case pr.TooMany > 0:
		c.Note = fmt.Sprintf("It names %d issues to close, more than a pull request may (`tasks.max_per_pr`), so it links none of them: close fewer per pull request.", pr.TooMany)
	case len(pr.Refused) > 0:
		c.Note = fmt.Sprintf("@%s, who opened it, may not build here (no write permission, not assigned to the issue), so the issues it names are not linked: someone who may build here must open it, or be assigned to the task.", pr.Author.Login)
	case len(pr.Named) > 0:
		c.Note = "The issues it names are not open tasks countersign tracks."
	case g.ExemptedUser(pr.Author, pins) && unexempt(pr, g, pins) == "":
		c.Conclusion, c.Untracked = "success", UntrackedExempts
	case g.Untracked == UntrackedAllow:
		c.Conclusion, c.Untracked = "success", UntrackedPasses
	}
	if c.Note == "" && g.ExemptedUser(pr.Author, pins) {
		if why := unexempt(pr, g, pins); why != "" {
			c.Note = fmt.Sprintf("Its author @%s is in `gate.exempt`, but an exemption holds only while everyone who pushed to it or wrote its commits is exempt too: %s. "+
				"So it is answered as anyone's pull request that closes no task.", pr.Author.Login, why)
		}
	}
	return c
}

// maxUnexempt bounds the people unexempt names.
const maxUnexempt = 5

// unexempt says who, of those who built pr's head, is not in gate.exempt
// (its pushers, its commits' authors, committers and co-authors), or that
// who built it is not known: "" when everyone is exempt. An exempt author's
// pull request is exempt only then (DESIGN §2): anyone else's push or commit
// onto a dependabot[bot] pull request makes it a person's pull request.
func unexempt(pr *PullRequest, g GateConfig, pins map[string]int64) string {
	if pr.CommittersHead != pr.Head {
		return fmt.Sprintf("who built its head %s was not read", short(pr.Head))
	}
	if pr.PushersUnread != "" {
		return "not everyone who pushed to it is known (" + pr.PushersUnread + ")"
	}
	var why []string
	seen := map[string]bool{}
	not := func(u User, did string) {
		if len(why) < maxUnexempt && !seen[strings.ToLower(u.Login)] && !g.ExemptedUser(u, pins) {
			seen[strings.ToLower(u.Login)] = true
			why = append(why, fmt.Sprintf("@%s %s; %s is not in `gate.exempt`", u.Login, did, u.Login))
		}
	}
	for _, u := range pr.Pushers {
		not(u, "pushed to it")
	}
	for _, m := range pr.Committers {
		not(m.User(), "is a "+m.As)
	}
	if len(pr.Unresolved) > 0 && len(why) < maxUnexempt {
		why = append(why, "its commits carry git identities GitHub links to no account ("+clip(strings.Join(pr.Unresolved, "; "), maxWhy)+")")
	}
	return strings.Join(why, "; ")
}

// This file answers rules' questions about people, for one decision, as rules
// asks them.

package people

import (
	"context"
	"fmt"
	"strings"

	"github.com/countersign/countersign/rules"
)

// Sources are what a Lookup reads beside the directory.
type Sources struct {
	// Account is the account a pilot's login names now; nil: pilots are not
	// resolved (rules knows them by login only).
	Account func(ctx context.Context, login string) (rules.User, error)
	// Integration is the state of the integration check on the default
	// branch's head; nil: not reported.
	Integration func(ctx context.Context) (string, error)
}

// Lookup is rules.Lookup and rules.GoalLookup over a Directory, for one
// decision. It reads GitHub only for what rules asks, remembers each answer
// for the decision, and keeps the first error: after that error it answers
// zero values without reading more. Its caller must check Err once rules has
// decided, and fail the delivery instead of committing the decision if it is
// not nil (rules.Lookup's contract).
type Lookup struct {
	// ctx is the decision's: a Lookup lives for one call of rules, which
	// takes no context of its own.
	ctx context.Context
	dir *Directory
	src Sources
	err error

	people      map[string]rules.Person
	critics     map[string][]string
	pilots      map[string]pilot
	team        *int
	leads       *[]string
	integration *string
}

type pilot struct {
	user rules.User
	ok   bool
}

// Ask is a Lookup over d for one decision made under ctx.
func (d *Directory) Ask(ctx context.Context, src Sources) *Lookup {
	return &Lookup{ctx: ctx, dir: d, src: src,
		people: map[string]rules.Person{}, critics: map[string][]string{}, pilots: map[string]pilot{}}
}

// Err is the first error met answering, nil if every answer was had.
func (l *Lookup) Err() error { return l.err }

// failed keeps err if it is the first error, and reports whether there was one.
func (l *Lookup) failed(err error) bool {
	if l.err == nil {
		l.err = err
	}
	return l.err != nil
}

// userKey tells people apart by id and login (a login alone can change hands).
func userKey(u rules.User) string { return fmt.Sprintf("%d\x00%s", u.ID, strings.ToLower(u.Login)) }

// Person is what the repository says about u.
func (l *Lookup) Person(u rules.User) rules.Person {
	key := userKey(u)
	if p, ok := l.people[key]; ok || l.err != nil {
		return p
	}
	p, err := l.dir.Person(l.ctx, u)
	if l.failed(err) {
		return rules.Person{}
	}
	l.people[key] = p
	return p
}

// Critics are the critics whose reviewers include u.
func (l *Lookup) Critics(u rules.User) []string {
	key := userKey(u)
	if c, ok := l.critics[key]; ok || l.err != nil {
		return c
	}
	c, err := l.dir.Critics(l.ctx, u)
	if l.failed(err) {
		return nil
	}
	l.critics[key] = c
	return c
}

// TeamSize is how many people may verify.
func (l *Lookup) TeamSize() int {
	if l.team != nil || l.err != nil {
		return deref(l.team)
	}
	n, err := l.dir.TeamSize(l.ctx)
	if l.failed(err) {
		return 0
	}
	l.team = &n
	return n
}

// Leads are the mentions that reach the leads.
func (l *Lookup) Leads() []string {
	if l.leads != nil || l.err != nil {
		return deref(l.leads)
	}
	leads, err := l.dir.Leads(l.ctx)
	if l.failed(err) {
		return nil
	}
	l.leads = &leads
	return leads
}

// Pilot is the account of login, a pilot agents: names: the account the
// configuration pinned (rules.Config.Pins), else the one the login names now
// (Sources.Account), so that a pilot who renames stays the pilot.
func (l *Lookup) Pilot(login string) (rules.User, bool) {
	key := strings.ToLower(login)
	if p, ok := l.pilots[key]; ok || l.err != nil {
		return p.user, p.ok
	}
	var p pilot
	switch pin := l.dir.cfg.Pins[key]; {
	case pin != 0:
		p = pilot{rules.User{ID: pin, Login: login}, true} // the account agents: named, whatever holds the login now
	case l.src.Account != nil:
		u, err := l.src.Account(l.ctx, login)
		if l.failed(err) {
			return rules.User{}, false
		}
		p = pilot{u, true}
	}
	l.pilots[key] = p
	return p.user, p.ok
}

// Integration is the state of the integration check on the default branch's
// head.
func (l *Lookup) Integration() string {
	if l.integration != nil || l.err != nil || l.src.Integration == nil {
		return deref(l.integration)
	}
	s, err := l.src.Integration(l.ctx)
	if l.failed(err) {
		return rules.IntegrationNone
	}
	l.integration = &s
	return s
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

var (
	_ rules.Lookup     = (*Lookup)(nil)
	_ rules.GoalLookup = (*Lookup)(nil)
)

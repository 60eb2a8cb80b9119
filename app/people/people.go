// Package people answers who is who in a repository: standing, leads,
// critics, team size, as user ids (logins are only for display).
package people

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

// Directory answers who is who in one repository, for one event: who leads,
// who may verify, how big the team is. It reads GitHub (permissions, team
// memberships, collaborators) and remembers answers for the event's duration.
type Directory struct {
	c           *github.Client
	owner, name string
	cfg         rules.Config
	roles       map[string]Access // login -> standing
	members     map[string]bool   // "org/slug\x00login" -> member
}

// New is the directory of repo under configuration cfg, reading GitHub through c.
func New(c *github.Client, repo string, cfg rules.Config) *Directory {
	owner, name, _ := strings.Cut(repo, "/")
	return &Directory{c: c, owner: owner, name: name, cfg: cfg, roles: map[string]Access{}, members: map[string]bool{}}
}

// Access is login's standing on the repository: its role ("admin",
// "maintain", "write", "triage", "read", a custom role's name, or "none") and
// the base permission that role grants ("admin", "write", "read", "none").
type Access struct{ role, permission string }

// Lead reports whether the standing is a lead's (admin, maintain).
func (a Access) Lead() bool { return a.role == "admin" || a.role == "maintain" }

// Writer reports whether the standing may write to the repository.
func (a Access) Writer() bool {
	return a.Lead() || a.role == "write" || a.permission == "admin" || a.permission == "write"
}

func (d *Directory) Access(ctx context.Context, login string) (Access, error) {
	key := strings.ToLower(login)
	if a, ok := d.roles[key]; ok {
		return a, nil
	}
	p, _, err := d.c.Repositories.GetPermissionLevel(ctx, d.owner, d.name, login)
	a := Access{role: "none", permission: "none"}
	switch {
	case fault.IsStatus(err, http.StatusNotFound): // not a user GitHub knows as a collaborator (bots, strangers)
	case err != nil:
		return a, fmt.Errorf("permission of %s: %w", login, err)
	default:
		a.permission = p.GetPermission()
		a.role = p.GetUser().GetRoleName()
		if a.role == "" {
			a.role = a.permission // older servers give only the base permission
		}
	}
	d.roles[key] = a
	return a, nil
}

// Listed reports whether u is one of entries: a login (the account it was
// pinned to when the configuration named it, rules.Config.Pins), or a member
// of an "@org/team" among them.
func (d *Directory) Listed(ctx context.Context, entries []string, u rules.User) (bool, error) {
	for _, e := range entries {
		if org, slug, ok := d.cfg.IsTeam(e); ok {
			Member, err := d.Member(ctx, org, slug, u.Login)
			if err != nil || Member {
				return Member, err
			}
		} else if rules.SameLogin(strings.TrimPrefix(e, "@"), u.Login) && d.cfg.Pinned(e, u) {
			return true, nil
		}
	}
	return false, nil
}

func (d *Directory) Member(ctx context.Context, org, slug, login string) (bool, error) {
	key := strings.ToLower(org + "/" + slug + "\x00" + login)
	if m, ok := d.members[key]; ok {
		return m, nil
	}
	m, _, err := d.c.Teams.GetTeamMembershipBySlug(ctx, org, slug, login)
	Member := err == nil && m.GetState() == "active"
	if err != nil && !fault.IsStatus(err, http.StatusNotFound) {
		return false, fmt.Errorf("membership of %s in @%s/%s: %w", login, org, slug, err)
	}
	d.members[key] = Member
	return Member, nil
}

// Person is what the repository says about u: a lead (leads:, else admin
// or maintain permission); a writer (write permission); eligible to verify and
// reject (verifiers:, else write permission; leads always).
func (d *Directory) Person(ctx context.Context, u rules.User) (rules.Person, error) {
	var p rules.Person
	login := u.Login
	a, err := d.Access(ctx, login)
	if err != nil {
		return p, err
	}
	p.Writer = a.Writer()
	p.Lead = a.Lead()
	if len(d.cfg.Leads) > 0 {
		if p.Lead, err = d.Listed(ctx, d.cfg.Leads, u); err != nil {
			return p, err
		}
	}
	switch {
	case p.Lead:
		p.Eligible = true
	case len(d.cfg.Verifiers) > 0:
		p.Eligible, err = d.Listed(ctx, d.cfg.Verifiers, u)
	default:
		p.Eligible = p.Writer
	}
	return p, err
}

// Critics are the critics (contracts.critics) whose reviewers include u.
func (d *Directory) Critics(ctx context.Context, u rules.User) ([]string, error) {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(d.cfg.Contracts.Critics)) {
		ok, err := d.Listed(ctx, d.cfg.Contracts.Critics[name], u)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, name)
		}
	}
	return out, nil
}

// TeamSize is how many people may verify: the verifiers: (teams expanded)
// and leads: listed, else the collaborators with write permission.
func (d *Directory) TeamSize(ctx context.Context) (int, error) {
	people := map[string]bool{}
	if len(d.cfg.Verifiers) > 0 {
		for _, e := range append(append([]string(nil), d.cfg.Verifiers...), d.cfg.Leads...) {
			if org, slug, ok := d.cfg.IsTeam(e); ok {
				users, err := d.teamMembers(ctx, org, slug)
				if err != nil {
					return 0, err
				}
				for _, u := range users {
					people[strings.ToLower(u)] = true
				}
			} else {
				people[strings.ToLower(strings.TrimPrefix(e, "@"))] = true
			}
		}
		return len(people), nil
	}
	users, err := d.collaborators(ctx)
	if err != nil {
		return 0, err
	}
	for _, u := range users {
		if r := u.GetRoleName(); r == "admin" || r == "maintain" || r == "write" || u.GetPermissions()["push"] {
			people[strings.ToLower(u.GetLogin())] = true
		}
	}
	return len(people), nil
}

// Leads are the mentions that reach the leads: the leads: entries as
// written, else the collaborators with admin or maintain permission.
func (d *Directory) Leads(ctx context.Context) ([]string, error) {
	if len(d.cfg.Leads) > 0 {
		out := make([]string, len(d.cfg.Leads))
		for i, e := range d.cfg.Leads {
			out[i] = strings.TrimPrefix(e, "@")
		}
		return out, nil
	}
	users, err := d.collaborators(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, u := range users {
		if r := u.GetRoleName(); r == "admin" || r == "maintain" {
			out = append(out, u.GetLogin())
		}
	}
	return out, nil
}

func (d *Directory) collaborators(ctx context.Context) ([]*github.User, error) {
	var out []*github.User
	opt := &github.ListCollaboratorsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	for {
		users, resp, err := d.c.Repositories.ListCollaborators(ctx, d.owner, d.name, opt)
		if err != nil {
			return nil, fmt.Errorf("list collaborators: %w", err)
		}
		out = append(out, users...)
		if resp.NextPage == 0 || len(out) >= 1000 {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}

func (d *Directory) teamMembers(ctx context.Context, org, slug string) ([]string, error) {
	var out []string
	opt := &github.TeamListTeamMembersOptions{ListOptions: github.ListOptions{PerPage: 100}}
	for {
		users, resp, err := d.c.Teams.ListTeamMembersBySlug(ctx, org, slug, opt)
		if fault.IsStatus(err, http.StatusNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("members of @%s/%s: %w", org, slug, err)
		}
		for _, u := range users {
			out = append(out, u.GetLogin())
		}
		if resp.NextPage == 0 || len(out) >= 1000 {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}

// Config is the configuration the directory answers under.
func (d *Directory) Config() rules.Config { return d.cfg }

// Client is the GitHub client the directory reads through.
func (d *Directory) Client() *github.Client { return d.c }

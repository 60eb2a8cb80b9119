package app

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

// directory answers who is who in one repository, for one event: who leads,
// who may verify, how big the team is. It reads GitHub (permissions, team
// memberships, collaborators) and remembers answers for the event's duration.
type directory struct {
	c           *github.Client
	owner, name string
	cfg         rules.Config
	roles       map[string]access // login -> standing
	members     map[string]bool   // "org/slug\x00login" -> member
}

func newDirectory(c *github.Client, repo string, cfg rules.Config) *directory {
	owner, name, _ := strings.Cut(repo, "/")
	return &directory{c: c, owner: owner, name: name, cfg: cfg, roles: map[string]access{}, members: map[string]bool{}}
}

// access is login's standing on the repository: its role ("admin",
// "maintain", "write", "triage", "read", a custom role's name, or "none") and
// the base permission that role grants ("admin", "write", "read", "none").
type access struct{ role, permission string }

func (a access) lead() bool { return a.role == "admin" || a.role == "maintain" }
func (a access) writer() bool {
	return a.lead() || a.role == "write" || a.permission == "admin" || a.permission == "write"
}

func (d *directory) access(ctx context.Context, login string) (access, error) {
	key := strings.ToLower(login)
	if a, ok := d.roles[key]; ok {
		return a, nil
	}
	p, _, err := d.c.Repositories.GetPermissionLevel(ctx, d.owner, d.name, login)
	a := access{role: "none", permission: "none"}
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

// listed reports whether u is one of entries: a login (the account it was
// pinned to when the configuration named it, rules.Config.Pins), or a member
// of an "@org/team" among them.
func (d *directory) listed(ctx context.Context, entries []string, u rules.User) (bool, error) {
	for _, e := range entries {
		if org, slug, ok := d.cfg.IsTeam(e); ok {
			member, err := d.member(ctx, org, slug, u.Login)
			if err != nil || member {
				return member, err
			}
		} else if rules.SameLogin(strings.TrimPrefix(e, "@"), u.Login) && d.cfg.Pinned(e, u) {
			return true, nil
		}
	}
	return false, nil
}

func (d *directory) member(ctx context.Context, org, slug, login string) (bool, error) {
	key := strings.ToLower(org + "/" + slug + "\x00" + login)
	if m, ok := d.members[key]; ok {
		return m, nil
	}
	m, _, err := d.c.Teams.GetTeamMembershipBySlug(ctx, org, slug, login)
	member := err == nil && m.GetState() == "active"
	if err != nil && !fault.IsStatus(err, http.StatusNotFound) {
		return false, fmt.Errorf("membership of %s in @%s/%s: %w", login, org, slug, err)
	}
	d.members[key] = member
	return member, nil
}

// person is what the repository says about u: a lead (leads:, else admin
// or maintain permission); a writer (write permission); eligible to verify and
// reject (verifiers:, else write permission; leads always).
func (d *directory) person(ctx context.Context, u rules.User) (rules.Person, error) {
	var p rules.Person
	login := u.Login
	a, err := d.access(ctx, login)
	if err != nil {
		return p, err
	}
	p.Writer = a.writer()
	p.Lead = a.lead()
	if len(d.cfg.Leads) > 0 {
		if p.Lead, err = d.listed(ctx, d.cfg.Leads, u); err != nil {
			return p, err
		}
	}
	switch {
	case p.Lead:
		p.Eligible = true
	case len(d.cfg.Verifiers) > 0:
		p.Eligible, err = d.listed(ctx, d.cfg.Verifiers, u)
	default:
		p.Eligible = p.Writer
	}
	return p, err
}

// critics are the critics (contracts.critics) whose reviewers include u.
func (d *directory) critics(ctx context.Context, u rules.User) ([]string, error) {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(d.cfg.Contracts.Critics)) {
		ok, err := d.listed(ctx, d.cfg.Contracts.Critics[name], u)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, name)
		}
	}
	return out, nil
}

// teamSize is how many people may verify: the verifiers: (teams expanded)
// and leads: listed, else the collaborators with write permission.
func (d *directory) teamSize(ctx context.Context) (int, error) {
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

// leads are the mentions that reach the leads: the leads: entries as
// written, else the collaborators with admin or maintain permission.
func (d *directory) leads(ctx context.Context) ([]string, error) {
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

func (d *directory) collaborators(ctx context.Context) ([]*github.User, error) {
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

func (d *directory) teamMembers(ctx context.Context, org, slug string) ([]string, error) {
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

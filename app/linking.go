package app

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

// Who can link work (DESIGN §2): a pull request links to the tasks it closes
// only if its author may build here: write permission, or an agent account
// whose pilot has it, or an assignee of the task. Anyone else's "Fixes #N"
// moves, blocks and voids nothing. And one pull request may close at most
// tasks.max_per_pr tasks: one that names more links none.

// gateLinks decides which of the issues cur's description closes it links
// to, before the pull request's events are fanned out to them: none when it
// names more than tasks.max_per_pr; for an outsider's pull request only the
// tasks its author (or their agent's pilot) is assigned to, or that it
// already links. It returns the reply the pull request gets, if any: once,
// when it first names too many tasks or an outsider's link is first refused.
func (p *Processor) gateLinks(ctx context.Context, c *github.Client, repo string, old, cur *rules.PullRequest, log *slog.Logger) (*rules.Notice, error) {
	if len(cur.Links) == 0 {
		return nil, nil
	}
	cfg, err := p.config(ctx, c, repo, log)
	if err != nil {
		return nil, err
	}
	if max := cfg.Tasks.MaxPerPR; len(cur.Links) > max {
		cur.TooMany, cur.Links, cur.Refused = len(cur.Links), nil, nil
		if old != nil && old.TooMany > 0 {
			return nil, nil
		}
		log.Warn("pull request names too many tasks: links none", "pr", cur.Number, "named", cur.TooMany, "max", max)
		return &rules.Notice{Kind: rules.NoticeRefused, Actor: cur.Author.Login, ActorID: cur.Author.ID, Refusals: []rules.Refusal{{
			Quote:  fmt.Sprintf("the description of #%d names %d issues to close", cur.Number, cur.TooMany),
			Reason: fmt.Sprintf("a pull request may close at most %d tasks (`tasks.max_per_pr`), so this one links none of them: split the work, or name fewer issues.", max),
		}}}, nil
	}
	if old != nil && old.Author.Is(cur.Author) && slices.Equal(old.Named, cur.Links) {
		cur.Outsider = old.Outsider // the same author and links: decided before
	} else if cur.Outsider, err = p.outsider(ctx, newDirectory(c, repo, cfg), cur.Author); err != nil {
		return nil, err
	}
	cur.Named = append([]int(nil), cur.Links...)
	if !cur.Outsider {
		cur.Refused = nil
		return nil, nil
	}
	var links, refused []int
	for _, n := range cur.Links {
		t, err := loadTask(ctx, p.store, repo, n)
		if err != nil {
			return nil, err
		}
		if t != nil && (t.HasPR(cur.Number) || assignedTo(t, cfg, cur.Author)) {
			links = append(links, n)
		} else {
			refused = append(refused, n)
		}
	}
	cur.Links, cur.Refused = links, refused
	var fresh []int
	for _, n := range refused {
		if old == nil || !slices.Contains(old.Refused, n) {
			fresh = append(fresh, n)
		}
	}
	if len(fresh) == 0 {
		return nil, nil
	}
	log.Info("outsider's pull request links no task", "pr", cur.Number, "author", cur.Author.Login, "refused", fresh)
	return &rules.Notice{Kind: rules.NoticeRefused, Actor: cur.Author.Login, ActorID: cur.Author.ID, Refusals: []rules.Refusal{{
		Quote: fmt.Sprintf("#%d closes %s", cur.Number, issueList(fresh)),
		Reason: fmt.Sprintf("@%s has no write permission on this repository and is not assigned to %s, so this pull request does not count as work on it. "+
			"Someone with write permission can assign the task to @%s (or take the work over in their own pull request).",
			cur.Author.Login, issueList(fresh), cur.Author.Login),
	}}}, nil
}

// outsider reports whether author may not build here: no write permission,
// and not an agent account (agents:) whose pilot has it.
func (p *Processor) outsider(ctx context.Context, dir *directory, author rules.User) (bool, error) {
	if author.Login == "" {
		return true, nil
	}
	a, err := dir.access(ctx, author.Login)
	if err != nil || a.writer() {
		return false, err
	}
	if pilot, ok := dir.cfg.Pilot(author.Login); ok {
		pa, err := dir.access(ctx, pilot)
		if err != nil || pa.writer() {
			return false, err
		}
	}
	return true, nil
}

// assignedTo reports whether author, or the pilot of author's agent account,
// is assigned to task t.
func assignedTo(t *rules.Task, cfg rules.Config, author rules.User) bool {
	if slices.ContainsFunc(t.Assignees, author.Is) {
		return true
	}
	pilot, ok := cfg.Pilot(author.Login)
	return ok && slices.ContainsFunc(t.Assignees, func(u rules.User) bool { return rules.SameLogin(u.Login, pilot) })
}

func issueList(ns []int) string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = fmt.Sprintf("#%d", n)
	}
	return strings.Join(out, ", ")
}

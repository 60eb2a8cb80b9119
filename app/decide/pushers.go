package decide

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/gh"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

// This file holds who built a pull request beyond what its commits name: the
// people who pushed to it, and the commit identities GitHub links to no
// account (DESIGN §1).

// pushedBy says who pushed commits to a pull request, given the head
// countersign recorded for it ("" for none).
type pushedBy func(recorded string) rules.User

// noPusher names no one: the event pushes nothing (a review).
func noPusher(string) rules.User { return rules.User{} }

// pusherOf is who pushed commits to the pull request of e. The sender of
// opened and synchronize pushed them. A closed pull request does not follow
// its branch: commits pushed while it is closed send no synchronize, and
// their head first shows in reopened, so its sender counts as their pusher
// when the head is not the one recorded (or none is). Any other event whose
// head is not the recorded one (a synchronize missed) makes its sender a
// pusher too: erring towards more builders only makes verification
// stricter. The git identity the commits carry may be anyone's, or no one's;
// the account that brought them in is known.
func pusherOf(e *github.PullRequestEvent) pushedBy {
	sender, head, action := gh.User(e.GetSender()), e.GetPullRequest().GetHead().GetSHA(), e.GetAction()
	return func(recorded string) rules.User {
		moved := recorded != "" && head != "" && recorded != head
		switch {
		case action == "opened", action == "synchronize":
			return sender
		case action == "reopened" && (recorded == "" || moved):
			return sender
		case moved:
			return sender
		}
		return rules.User{}
	}
}

// withPusher is pr's record with u among its pushers, or nil when u is zero
// or already there.
func withPusher(pr *rules.PullRequest, u rules.User) *rules.PullRequest {
	if pr == nil || u.IsZero() || slices.ContainsFunc(pr.Pushers, u.Is) {
		return nil
	}
	c := *pr
	c.Pushers = append(slices.Clone(pr.Pushers), u)
	return &c
}

// addPusher adds u to cur's pushers (once).
func addPusher(cur *rules.PullRequest, u rules.User) {
	if np := withPusher(cur, u); np != nil {
		cur.Pushers = np.Pushers
	}
}

// maxUnresolved bounds the unlinked identities a pull request's record keeps
// (the card shows them all).
const maxUnresolved = 20

// unresolved collects, once each, the git identities of a pull request's
// commits that GitHub links to no account.
type unresolved []string

// commit adds cm's author and committer when the REST API names no account
// for them (its author or committer is null). web-flow's merges are GitHub's.
func (u *unresolved) commit(cm *github.RepositoryCommit, n int) {
	if cm.Author == nil {
		u.add(cm.GetCommit().GetAuthor(), fmt.Sprintf("commit author on #%d", n))
	}
	if cm.Committer == nil && !strings.EqualFold(cm.GetCommit().GetCommitter().GetEmail(), "noreply@github.com") {
		u.add(cm.GetCommit().GetCommitter(), fmt.Sprintf("committer on #%d", n))
	}
}

// add adds the identity name <email> in role as, unless known already.
func (u *unresolved) add(a *github.CommitAuthor, as string) {
	u.identity(a.GetName(), a.GetEmail(), as)
}

// maxIdentity bounds the characters of one identity kept (git names and
// emails are anyone's text, of any length).
const maxIdentity = 200

func (u *unresolved) identity(name, email, as string) {
	id := strings.TrimSpace(name) + " <" + strings.TrimSpace(email) + ">"
	if r := []rune(id); len(r) > maxIdentity {
		id = string(r[:maxIdentity-1]) + "…"
	}
	if len(*u) >= maxUnresolved || slices.ContainsFunc(*u, func(s string) bool { return strings.HasPrefix(s, id+" (") }) {
		return
	}
	*u = append(*u, id+" ("+as+")")
}

// maxActivityPages bounds the pages of a head branch's activity read (100
// entries each): a branch pushed to more often than that has pushers
// countersign does not know (PushersUnread).
const maxActivityPages = 3

// activityReader reads a repository's activity (gh.Client does).
type activityReader interface {
	ListRepositoryActivity(ctx context.Context, owner, repo string, opts gh.ActivityOptions) ([]*gh.Activity, *github.Response, error)
}

// headPushers adds to cur's pushers whoever pushed the commits it carries
// (shas: their ids), whenever and wherever they pushed them (DESIGN §1):
// before the pull request was opened too, to its head branch or to any
// other ref, whether or not their push delivery arrived or the store kept
// it. Three sources, each with its bound:
//
//   - the pushes countersign recorded from push webhooks, any ref (free;
//     rules.MaxPushes and the other bounds of rules.Push): a push whose tip
//     or one of whose commits the pull request carries;
//   - the newest page of GitHub's repository activity, every ref (one
//     request): a push, force push, branch creation or merge whose tip the
//     pull request carries, and every entry of its head branch;
//   - when that page does not reach back to its head branch's creation, the
//     activity of the head branch alone, as far back as maxActivityPages
//     pages (one request each; PushersUnread when longer).
//
// On the head branch, every push, force push, branch creation and merge
// counts, since the branch's first activity: a push whose commits are no
// longer carried makes its pusher a builder needlessly, which only makes
// verification stricter.
//
// A pull request from a fork has its branch there, and pushes to a fork
// send the repository no webhook. Anyone may open a pull request from any
// fork's branch, so the fork's owner (by id) is a pusher whoever opened it:
// the owner can push to the fork, and is the one who most likely did. The
// fork's activity is read too; when GitHub does not let the installation
// read it, the fork's owner, the pull request's author and the senders of
// its events count, and when the fork belongs to an organization (no one
// owner; its members push), who pushed is not known (PushersUnread: only a
// lead may verify). One request per head in the common case.
func (p *Decider) headPushers(ctx context.Context, c activityReader, cur *rules.PullRequest, shas map[string]bool) error {
	cur.PushersUnread = ""
	if err := p.recordedPushers(ctx, cur, shas); err != nil {
		return err
	}
	repo := cur.HeadRepo
	if repo == "" {
		repo = cur.Repo
	}
	if !strings.EqualFold(repo, cur.Repo) && !cur.HeadOwnerOrg {
		addPusher(cur, cur.HeadOwner)
	}
	if cur.HeadRef == "" {
		return nil
	}
	ref := "refs/heads/" + cur.HeadRef
	acts, resp, err := c.ListRepositoryActivity(ctx, gh.OwnerOf(repo), gh.NameOf(repo), gh.ActivityOptions{PerPage: 100})
	if done, err := p.forkUnreadable(cur, repo, err); done || err != nil {
		return err
	}
	created := false
	for _, a := range acts {
		switch {
		case a.Ref == ref:
			p.activityPusher(ctx, cur, a)
			created = created || a.ActivityType == "branch_creation"
		case shas[strings.ToLower(a.After)]:
			p.activityPusher(ctx, cur, a)
		}
	}
	if created || resp == nil || resp.After == "" || len(acts) == 0 {
		return nil
	}
	return p.branchPushers(ctx, c, cur, repo)
}

// forkUnreadable reports whether err is GitHub refusing to show the activity
// of a fork (done, with no error), or wraps err. The fork's owner is a
// pusher already (headPushers); an organization's fork has no one owner, so
// who pushed to it is not known then (PushersUnread).
func (p *Decider) forkUnreadable(cur *rules.PullRequest, repo string, err error) (bool, error) {
	if err == nil {
		return false, nil
	}
	if !strings.EqualFold(repo, cur.Repo) && (fault.IsStatus(err, 403) || fault.IsStatus(err, 404)) {
		if cur.HeadOwnerOrg {
			cur.PushersUnread = fmt.Sprintf("its head branch is in %s, a fork that belongs to an organization, and countersign cannot read who pushed there", repo)
		}
		if p.log != nil {
			p.log.Info("the fork's activity is not readable: its owner, the pull request's author and the senders of its events are its pushers",
				"repo", cur.Repo, "number", cur.Number, "fork", repo, "organization", cur.HeadOwnerOrg)
		}
		return true, nil
	}
	return false, fmt.Errorf("read the activity of %s: %w", repo, err)
}

// activityPusher adds the actor of activity a to cur's pushers: not for a
// branch's deletion (it pushes nothing), nor an actor GitHub no longer knows
// (null), web-flow or countersign itself.
func (p *Decider) activityPusher(ctx context.Context, cur *rules.PullRequest, a *gh.Activity) {
	if a.ActivityType == "branch_deletion" {
		return
	}
	u := gh.User(a.Actor)
	if u.IsZero() || isWebFlow(u) {
		return
	}
	if own, err := p.gh.Own(ctx, a.Actor); err == nil && own {
		return
	}
	addPusher(cur, u)
}

// branchPushers adds to cur's pushers everyone the activity of its head
// branch in repo names, since the branch's first activity, up to
// maxActivityPages pages (PushersUnread says when there is more).
func (p *Decider) branchPushers(ctx context.Context, c activityReader, cur *rules.PullRequest, repo string) error {
	opt := gh.ActivityOptions{Ref: "refs/heads/" + cur.HeadRef, PerPage: 100}
	for page := 0; ; page++ {
		if page == maxActivityPages {
			// The branch's name is anyone's text, and this is said in a reply
			// as written: it is not repeated.
			cur.PushersUnread = fmt.Sprintf("its head branch has more than %d pushes and branch changes; the older ones were not read", maxActivityPages*100)
			if p.log != nil {
				p.log.Warn("head branch activity longer than read: older pushers unknown, only a lead may verify",
					"repo", cur.Repo, "number", cur.Number, "ref", cur.HeadRef, "read", maxActivityPages*100)
			}
			return nil
		}
		acts, resp, err := c.ListRepositoryActivity(ctx, gh.OwnerOf(repo), gh.NameOf(repo), opt)
		if done, err := p.forkUnreadable(cur, repo, err); done || err != nil {
			return err
		}
		for _, a := range acts {
			p.activityPusher(ctx, cur, a)
		}
		if resp == nil || resp.After == "" || len(acts) == 0 {
			return nil
		}
		opt.After = resp.After
	}
}

// exemptAuthor reports whether the author of pull request pr is in
// gate.exempt.
func (p *Decider) exemptAuthor(ctx context.Context, c Client, pr *rules.PullRequest) (bool, error) {
	cfg, err := p.look.Config(ctx, c, pr.Repo, p.log)
	if err != nil {
		return false, err
	}
	return cfg.Gate.ExemptedUser(pr.Author, cfg.Pins), nil
}

package decide

import (
	"fmt"
	"slices"
	"strings"

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

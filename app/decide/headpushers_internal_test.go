package decide

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/countersign/countersign/app/gh"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/app/store/bolt"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

// activityPages serves a repository's activity in pages of per entries, as
// GitHub does (Response.After: the next page's cursor), and counts calls.
type activityPages struct {
	repo    string // the repository it serves; any other answers status
	status  int
	entries []*gh.Activity
	per     int
	calls   int
	asked   []gh.ActivityOptions
}

func (a *activityPages) ListRepositoryActivity(_ context.Context, owner, repo string, opts gh.ActivityOptions) ([]*gh.Activity, *github.Response, error) {
	a.calls++
	a.asked = append(a.asked, opts)
	if owner+"/"+repo != a.repo {
		r := &http.Response{StatusCode: a.status, Request: &http.Request{Method: "GET"}}
		return nil, &github.Response{Response: r}, &github.ErrorResponse{Response: r, Message: "Not Found"}
	}
	start := 0
	if opts.After != "" {
		start, _ = strconv.Atoi(opts.After)
	}
	end := min(start+a.per, len(a.entries))
	resp := &github.Response{Response: &http.Response{StatusCode: 200}}
	if end < len(a.entries) {
		resp.After = strconv.Itoa(end)
	}
	return a.entries[start:end], resp, nil
}

func act(kind, login string, id int64) *gh.Activity {
	return actOn("refs/heads/login", "", kind, login, id)
}

// actOn is activity of kind on ref, moving it to after.
func actOn(ref, after, kind, login string, id int64) *gh.Activity {
	a := &gh.Activity{ActivityType: kind, Ref: ref, After: after}
	if login != "" {
		a.Actor = &github.User{ID: github.Int64(id), Login: github.String(login)}
	}
	return a
}

// Everyone GitHub's activity names for the head branch is a pusher: pushes,
// force pushes, the branch's creation and merges into it; not its deletion
// (no commits), an actor GitHub no longer knows (null), nor web-flow. Every
// page is read, up to maxActivityPages: past that, PushersUnread says so.
func TestHeadPushers(t *testing.T) {
	p := &Decider{store: tempStore(t)}
	ctx := context.Background()
	entries := []*gh.Activity{act("force_push", "mallory", 6), act("branch_deletion", "carol", 3), act("push", "", 0),
		act("push", "web-flow", webFlowID), act("pr_merge", "erin", 5), act("push", "dave", 4), act("branch_creation", "bob", 2)}
	src := &activityPages{repo: "acme/app", entries: entries, per: 3}
	pr := &rules.PullRequest{Repo: "acme/app", HeadRef: "login", PRFacts: rules.PRFacts{Number: 7, Pushers: []rules.User{{ID: 4, Login: "dave"}}}}
	if err := p.headPushers(ctx, src, pr, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(pr.Pushers), fmt.Sprint([]rules.User{{ID: 4, Login: "dave"}, {ID: 6, Login: "mallory"}, {ID: 5, Login: "erin"}, {ID: 2, Login: "bob"}}); got != want {
		t.Errorf("pushers %s, want %s", got, want)
	}
	// The first page of every ref's activity, then (it does not reach back
	// to the branch's creation) the branch's own, from its start.
	if src.calls != 4 || src.asked[0].Ref != "" || src.asked[1].Ref != "refs/heads/login" || src.asked[1].After != "" || pr.PushersUnread != "" {
		t.Errorf("%d calls (%+v), unread %q", src.calls, src.asked, pr.PushersUnread)
	}

	// Longer than read: the pushers read count, and the rest is unknown.
	long := &activityPages{repo: "acme/app", per: 100}
	for i := range maxActivityPages*100 + 1 {
		long.entries = append(long.entries, act("push", fmt.Sprintf("u%d", i), int64(100+i)))
	}
	pr = &rules.PullRequest{Repo: "acme/app", HeadRef: "login"}
	if err := p.headPushers(ctx, long, pr, nil); err != nil {
		t.Fatal(err)
	}
	if long.calls != 1+maxActivityPages || len(pr.Pushers) != maxActivityPages*100 || pr.PushersUnread == "" {
		t.Errorf("%d calls, %d pushers, unread %q", long.calls, len(pr.Pushers), pr.PushersUnread)
	}
	// Read again for a new head within the bound, it is known again.
	long.entries, long.calls = long.entries[:5], 0
	if err := p.headPushers(ctx, long, pr, nil); err != nil || pr.PushersUnread != "" {
		t.Errorf("re-read: %v, unread %q", err, pr.PushersUnread)
	}

	// A fork's branch is read on the fork; one the installation cannot read
	// adds no one (its author and the senders of its pushes count) and is no
	// error. The base repository's activity unreadable is one.
	for _, status := range []int{http.StatusNotFound, http.StatusForbidden} {
		fork := &activityPages{repo: "acme/app", status: status, entries: entries, per: 100}
		pr = &rules.PullRequest{Repo: "acme/app", HeadRef: "login", HeadRepo: "mallory/app"}
		if err := p.headPushers(ctx, fork, pr, nil); err != nil || len(pr.Pushers) != 0 || fork.calls != 1 {
			t.Errorf("unreadable fork (%d): %v, pushers %v, %d calls", status, err, pr.Pushers, fork.calls)
		}
	}
	readable := &activityPages{repo: "mallory/app", entries: entries[:1], per: 100}
	pr = &rules.PullRequest{Repo: "acme/app", HeadRef: "login", HeadRepo: "mallory/app"}
	if err := p.headPushers(ctx, readable, pr, nil); err != nil || len(pr.Pushers) != 1 {
		t.Errorf("readable fork: %v, pushers %v", err, pr.Pushers)
	}
	gone := &activityPages{repo: "other/repo", status: http.StatusNotFound}
	pr = &rules.PullRequest{Repo: "acme/app", HeadRef: "login"}
	if err := p.headPushers(ctx, gone, pr, nil); err == nil {
		t.Error("the base repository's activity unreadable is no error")
	}
	// No head branch known (a review's short copy): nothing is asked.
	none := &activityPages{repo: "acme/app"}
	if err := p.headPushers(ctx, none, &rules.PullRequest{Repo: "acme/app"}, nil); err != nil || none.calls != 0 {
		t.Errorf("no head ref: %v, %d calls", err, none.calls)
	}
}

// tempStore is an empty store for one test.
func tempStore(t *testing.T) store.Store {
	t.Helper()
	s, err := bolt.Open(filepath.Join(t.TempDir(), "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Whoever pushed a commit the pull request carries to any other ref is a
// pusher: as the first page of every ref's activity names them (a push,
// force push or branch creation whose tip it carries), and as the pushes
// recorded from push webhooks name them (the tip or any commit of the push).
// Activity of other refs whose tip it does not carry names no one. A first
// page that reaches back to the head branch's creation is all that is read.
func TestHeadPushersOfOtherRefs(t *testing.T) {
	ctx := context.Background()
	st := tempStore(t)
	p := &Decider{store: st}
	carried := map[string]bool{"aaa": true, "bbb": true, "ccc": true}
	pushes := []rules.Push{
		{By: rules.User{ID: 20, Login: "gus"}, Ref: "refs/heads/x", After: "zzz", Commits: []string{"aaa", "yyy"}}, // pushed A and more
		{By: rules.User{ID: 21, Login: "hal"}, Ref: "refs/heads/y", After: "qqq", Commits: []string{"ppp"}},        // other commits
		{By: rules.User{ID: 22, Login: "ida"}, Ref: "refs/tags/v1", After: "ccc"},                                  // tagged C
	}
	b, _ := json.Marshal(pushes)
	if err := st.Put(ctx, "pushes/acme/app", b); err != nil {
		t.Fatal(err)
	}
	src := &activityPages{repo: "acme/app", per: 100, entries: []*gh.Activity{
		act("push", "dave", 4),
		act("branch_creation", "dave", 4),
		actOn("refs/heads/wip", "bbb", "branch_creation", "bob", 2),
		actOn("refs/heads/other", "fff", "push", "carol", 3),
		actOn("refs/heads/old", "bbb", "branch_deletion", "erin", 5),
		actOn("refs/heads/gone", "aaa", "force_push", "", 0),
	}}
	src.per = 3 // more pages than the first: not read, the branch's creation is on it
	pr := &rules.PullRequest{Repo: "acme/app", HeadRef: "login", PRFacts: rules.PRFacts{Number: 7}}
	if err := p.headPushers(ctx, src, pr, carried); err != nil {
		t.Fatal(err)
	}
	want := []rules.User{{ID: 20, Login: "gus"}, {ID: 22, Login: "ida"}, {ID: 4, Login: "dave"}, {ID: 2, Login: "bob"}}
	if got := fmt.Sprint(pr.Pushers); got != fmt.Sprint(want) {
		t.Errorf("pushers %s, want %s", got, fmt.Sprint(want))
	}
	if src.calls != 1 || pr.PushersUnread != "" {
		t.Errorf("%d calls (%+v), unread %q", src.calls, src.asked, pr.PushersUnread)
	}
	// Commits no push or activity names: only the head branch's pushers.
	pr = &rules.PullRequest{Repo: "acme/app", HeadRef: "login", PRFacts: rules.PRFacts{Number: 8}}
	if err := p.headPushers(ctx, src, pr, map[string]bool{"nnn": true}); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(pr.Pushers); got != fmt.Sprint([]rules.User{{ID: 4, Login: "dave"}}) {
		t.Errorf("pushers %s, want dave only", got)
	}
}

// Anyone may open a pull request from any fork's branch, and pushes to a
// fork send the repository no webhook: the fork's owner, who can push to
// it, is a pusher whoever opened the pull request (by id), whether or not
// the fork's activity can be read. A fork that belongs to an organization
// has no one owner: when its activity cannot be read, who pushed to it is
// not known (PushersUnread: only a lead may verify). A branch of the
// repository itself makes its owner no pusher.
func TestHeadPushersForkOwner(t *testing.T) {
	ctx := context.Background()
	p := &Decider{store: tempStore(t)}
	bob := rules.User{ID: 2, Login: "bob"}
	org := rules.User{ID: 50, Login: "forks-inc"}
	acme := rules.User{ID: 60, Login: "acme"}
	for _, c := range []struct {
		name     string
		headRepo string
		owner    rules.User
		org      bool
		readable string // the repository whose activity can be read
		had      []rules.User
		entries  []*gh.Activity
		want     []rules.User
		unread   bool
	}{
		{name: "user's fork, unreadable", headRepo: "bob/app", owner: bob, readable: "acme/app", want: []rules.User{bob}},
		{name: "user's fork, readable, someone else pushed", headRepo: "bob/app", owner: bob, readable: "bob/app",
			entries: []*gh.Activity{act("push", "dave", 4)}, want: []rules.User{bob, {ID: 4, Login: "dave"}}},
		{name: "user's fork, owner renamed since: by id, once", headRepo: "bob/app", owner: rules.User{ID: 2, Login: "robert"}, readable: "acme/app",
			had: []rules.User{bob}, want: []rules.User{bob}},
		{name: "user's fork, another account under a pusher's old login", headRepo: "bob/app", owner: rules.User{ID: 9, Login: "bob"}, readable: "acme/app",
			had: []rules.User{bob}, want: []rules.User{bob, {ID: 9, Login: "bob"}}},
		{name: "organization's fork, unreadable", headRepo: "forks-inc/app", owner: org, org: true, readable: "acme/app", unread: true},
		{name: "organization's fork, readable", headRepo: "forks-inc/app", owner: org, org: true, readable: "forks-inc/app",
			entries: []*gh.Activity{act("push", "dave", 4)}, want: []rules.User{{ID: 4, Login: "dave"}}},
		{name: "the repository's own branch", headRepo: "acme/app", owner: acme, org: true, readable: "acme/app",
			entries: []*gh.Activity{act("push", "dave", 4)}, want: []rules.User{{ID: 4, Login: "dave"}}},
		{name: "the repository's own branch, a user's repository", headRepo: "acme/app", owner: acme, readable: "acme/app",
			entries: []*gh.Activity{act("push", "dave", 4)}, want: []rules.User{{ID: 4, Login: "dave"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := &activityPages{repo: c.readable, status: http.StatusNotFound, entries: c.entries, per: 100}
			pr := &rules.PullRequest{Repo: "acme/app", HeadRef: "login", HeadRepo: c.headRepo, HeadOwner: c.owner, HeadOwnerOrg: c.org,
				PRFacts: rules.PRFacts{Number: 7, Author: rules.User{ID: 1, Login: "alice"}, Pushers: c.had}}
			if err := p.headPushers(ctx, src, pr, nil); err != nil {
				t.Fatal(err)
			}
			if got, want := fmt.Sprint(pr.Pushers), fmt.Sprint(c.want); got != want {
				t.Errorf("pushers %s, want %s", got, want)
			}
			if (pr.PushersUnread != "") != c.unread {
				t.Errorf("unread %q, want unread %v", pr.PushersUnread, c.unread)
			}
		})
	}
}

package decide

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"

	"github.com/countersign/countersign/app/gh"
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
	a := &gh.Activity{ActivityType: kind, Ref: "refs/heads/login"}
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
	p := &Decider{}
	ctx := context.Background()
	entries := []*gh.Activity{act("force_push", "mallory", 6), act("branch_deletion", "carol", 3), act("push", "", 0),
		act("push", "web-flow", webFlowID), act("pr_merge", "erin", 5), act("push", "dave", 4), act("branch_creation", "bob", 2)}
	src := &activityPages{repo: "acme/app", entries: entries, per: 3}
	pr := &rules.PullRequest{Repo: "acme/app", HeadRef: "login", PRFacts: rules.PRFacts{Number: 7, Pushers: []rules.User{{ID: 4, Login: "dave"}}}}
	if err := p.headPushers(ctx, src, pr); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(pr.Pushers), fmt.Sprint([]rules.User{{ID: 4, Login: "dave"}, {ID: 6, Login: "mallory"}, {ID: 5, Login: "erin"}, {ID: 2, Login: "bob"}}); got != want {
		t.Errorf("pushers %s, want %s", got, want)
	}
	if src.calls != 3 || src.asked[0].Ref != "refs/heads/login" || pr.PushersUnread != "" {
		t.Errorf("%d calls (%+v), unread %q", src.calls, src.asked, pr.PushersUnread)
	}

	// Longer than read: the pushers read count, and the rest is unknown.
	long := &activityPages{repo: "acme/app", per: 100}
	for i := range maxActivityPages*100 + 1 {
		long.entries = append(long.entries, act("push", fmt.Sprintf("u%d", i), int64(100+i)))
	}
	pr = &rules.PullRequest{Repo: "acme/app", HeadRef: "login"}
	if err := p.headPushers(ctx, long, pr); err != nil {
		t.Fatal(err)
	}
	if long.calls != maxActivityPages || len(pr.Pushers) != maxActivityPages*100 || pr.PushersUnread == "" {
		t.Errorf("%d calls, %d pushers, unread %q", long.calls, len(pr.Pushers), pr.PushersUnread)
	}
	// Read again for a new head within the bound, it is known again.
	long.entries, long.calls = long.entries[:5], 0
	if err := p.headPushers(ctx, long, pr); err != nil || pr.PushersUnread != "" {
		t.Errorf("re-read: %v, unread %q", err, pr.PushersUnread)
	}

	// A fork's branch is read on the fork; one the installation cannot read
	// adds no one (its author and the senders of its pushes count) and is no
	// error. The base repository's activity unreadable is one.
	for _, status := range []int{http.StatusNotFound, http.StatusForbidden} {
		fork := &activityPages{repo: "acme/app", status: status, entries: entries, per: 100}
		pr = &rules.PullRequest{Repo: "acme/app", HeadRef: "login", HeadRepo: "mallory/app"}
		if err := p.headPushers(ctx, fork, pr); err != nil || len(pr.Pushers) != 0 || fork.calls != 1 {
			t.Errorf("unreadable fork (%d): %v, pushers %v, %d calls", status, err, pr.Pushers, fork.calls)
		}
	}
	readable := &activityPages{repo: "mallory/app", entries: entries[:1], per: 100}
	pr = &rules.PullRequest{Repo: "acme/app", HeadRef: "login", HeadRepo: "mallory/app"}
	if err := p.headPushers(ctx, readable, pr); err != nil || len(pr.Pushers) != 1 {
		t.Errorf("readable fork: %v, pushers %v", err, pr.Pushers)
	}
	gone := &activityPages{repo: "other/repo", status: http.StatusNotFound}
	pr = &rules.PullRequest{Repo: "acme/app", HeadRef: "login"}
	if err := p.headPushers(ctx, gone, pr); err == nil {
		t.Error("the base repository's activity unreadable is no error")
	}
	// No head branch known (a review's short copy): nothing is asked.
	none := &activityPages{repo: "acme/app"}
	if err := p.headPushers(ctx, none, &rules.PullRequest{Repo: "acme/app"}); err != nil || none.calls != 0 {
		t.Errorf("no head ref: %v, %d calls", err, none.calls)
	}
}

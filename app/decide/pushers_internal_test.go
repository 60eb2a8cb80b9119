package decide

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

// The identities GitHub links to no account are kept as written, once each,
// clipped and bounded: the card shows them all.
func TestUnresolvedIdentities(t *testing.T) {
	ident := func(name, email string) *github.CommitAuthor { return &github.CommitAuthor{Name: &name, Email: &email} }
	var u unresolved
	u.commit(&github.RepositoryCommit{Commit: &github.Commit{Author: ident("Bob", "bob@laptop.local"), Committer: ident("Bob", "bob@laptop.local")}}, 5)
	u.commit(&github.RepositoryCommit{Author: &github.User{ID: github.Int64(3)}, Committer: &github.User{ID: github.Int64(3)},
		Commit: &github.Commit{Author: ident("Dave", "dave@example.com"), Committer: ident("Dave", "dave@example.com")}}, 5)
	u.commit(&github.RepositoryCommit{Author: &github.User{ID: github.Int64(3)},
		Commit: &github.Commit{Author: ident("Dave", "dave@example.com"), Committer: ident("GitHub", "noreply@github.com")}}, 5)
	if want := []string{"Bob <bob@laptop.local> (commit author on #5)"}; strings.Join(u, "|") != strings.Join(want, "|") {
		t.Fatalf("unresolved %q, want %q", u, want)
	}
	u.identity(strings.Repeat("x", 5000), "e@f", "co-author on #5")
	if r := []rune(u[1]); len(r) > maxIdentity+len(" (co-author on #5)") {
		t.Fatalf("an identity of %d characters is kept", len(r))
	}
	for i := range 3 * maxUnresolved {
		u.identity("n", strings.Repeat("e", i)+"@x", "co-author on #5")
	}
	if len(u) != maxUnresolved {
		t.Fatalf("%d identities kept, want at most %d", len(u), maxUnresolved)
	}
}

// A pusher joins a pull request's record once.
func TestWithPusher(t *testing.T) {
	pr := &rules.PullRequest{Repo: "acme/app", PRFacts: rules.PRFacts{Number: 5}}
	bob := rules.User{ID: 2, Login: "bob"}
	np := withPusher(pr, bob)
	if np == nil || len(np.Pushers) != 1 || len(pr.Pushers) != 0 {
		t.Fatalf("withPusher: %+v (the original %+v)", np, pr)
	}
	if withPusher(np, rules.User{ID: 2, Login: "bob-renamed"}) != nil || withPusher(np, rules.User{}) != nil {
		t.Fatal("a known pusher or no one changed the record")
	}
}

// Who pushed, by the event's action and the head countersign recorded: the
// sender of opened and synchronize always; of reopened when the head is not
// the recorded one (commits pushed while the pull request was closed) or
// none is recorded; of any other event only when it brings a head not
// recorded.
func TestPusherOf(t *testing.T) {
	for _, c := range []struct {
		action, recorded string
		pushed           bool
	}{
		{"opened", "", true},
		{"synchronize", "h1", true},
		{"reopened", "h1", false},
		{"reopened", "h0", true},
		{"reopened", "", true},
		{"edited", "h1", false},
		{"edited", "h0", true},
		{"edited", "", false},
		{"closed", "h1", false},
		{"closed", "h0", true},
		{"ready_for_review", "h1", false},
	} {
		e := &github.PullRequestEvent{Action: github.String(c.action), Sender: &github.User{ID: github.Int64(9), Login: github.String("eve")},
			PullRequest: &github.PullRequest{Head: &github.PullRequestBranch{SHA: github.String("h1")}}}
		if got := pusherOf(e)(c.recorded); got.IsZero() == c.pushed {
			t.Errorf("%s with %q recorded: pusher %v, want pushed=%v", c.action, c.recorded, got, c.pushed)
		}
	}
	if !noPusher("h0").IsZero() {
		t.Error("a review names a pusher")
	}
}

package people_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/countersign/countersign/app/people"
	"github.com/countersign/countersign/internal/githubtest"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

const repo = "acme/widgets"

// client is people.Client over go-github.
type client struct{ c *github.Client }

func (c client) GetPermissionLevel(ctx context.Context, owner, repo, user string) (*github.RepositoryPermissionLevel, *github.Response, error) {
	return c.c.Repositories.GetPermissionLevel(ctx, owner, repo, user)
}

func (c client) ListCollaborators(ctx context.Context, owner, repo string, opts *github.ListCollaboratorsOptions) ([]*github.User, *github.Response, error) {
	return c.c.Repositories.ListCollaborators(ctx, owner, repo, opts)
}

func (c client) GetTeamMembershipBySlug(ctx context.Context, org, slug, user string) (*github.Membership, *github.Response, error) {
	return c.c.Teams.GetTeamMembershipBySlug(ctx, org, slug, user)
}

func (c client) ListTeamMembersBySlug(ctx context.Context, org, slug string, opts *github.TeamListTeamMembersOptions) ([]*github.User, *github.Response, error) {
	return c.c.Teams.ListTeamMembersBySlug(ctx, org, slug, opts)
}

// fixture is the fake GitHub with repo (alice admin, bob writer) and a
// client of it.
func fixture(t *testing.T) (*githubtest.Server, client) {
	t.Helper()
	gh := githubtest.New(githubtest.Options{})
	t.Cleanup(gh.Close)
	gh.AddRepo(repo, 7)
	gh.SetPermission(repo, "alice", "admin")
	gh.SetPermission(repo, "bob", "write")
	itr, err := ghinstallation.New(http.DefaultTransport, gh.AppID(), 7, gh.PrivateKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	base := strings.TrimRight(gh.URL(), "/") + "/api/v3/"
	itr.BaseURL = strings.TrimSuffix(base, "/")
	c, err := github.NewClient(&http.Client{Transport: itr}).WithEnterpriseURLs(base, base)
	if err != nil {
		t.Fatal(err)
	}
	return gh, client{c}
}

// asked are the requests on the repository GitHub answered, as "METHOD path".
func asked(gh *githubtest.Server) []string {
	var out []string
	for _, r := range gh.Requests() {
		if strings.HasPrefix(r.Path, "/repos/") {
			out = append(out, r.Method+" "+r.Path)
		}
	}
	return out
}

func TestLookupAsksOnlyWhatIsAskedOnce(t *testing.T) {
	gh, c := fixture(t)
	ctx := context.Background()
	accounts := 0
	l := people.New(c, repo, rules.Config{}).Ask(ctx, people.Sources{
		Account: func(_ context.Context, login string) (rules.User, error) {
			accounts++
			return rules.User{ID: 42, Login: login}, nil
		},
	})
	if got := asked(gh); len(got) != 0 {
		t.Fatalf("asked before any question: %v", got)
	}
	alice := rules.User{ID: 1, Login: "alice"}
	for range 2 {
		if p := l.Person(alice); !p.Lead || !p.Eligible {
			t.Fatalf("alice: %+v, want a lead", p)
		}
		if n := l.TeamSize(); n != 2 {
			t.Fatalf("team size %d, want 2", n)
		}
		if u, ok := l.Pilot("Erin"); !ok || u.ID != 42 {
			t.Fatalf("pilot erin: %+v %v", u, ok)
		}
	}
	want := []string{"GET /repos/acme/widgets/collaborators/alice/permission", "GET /repos/acme/widgets/collaborators"}
	if got := asked(gh); strings.Join(got, "\n") != strings.Join(want, "\n") || accounts != 1 {
		t.Fatalf("asked %v and %d accounts, want each once: %v", got, accounts, want)
	}
	if err := l.Err(); err != nil {
		t.Fatalf("Err = %v", err)
	}
}

func TestLookupPinnedPilotAsksNothing(t *testing.T) {
	gh, c := fixture(t)
	l := people.New(c, repo, rules.Config{Pins: map[string]int64{"erin": 5}}).Ask(context.Background(), people.Sources{
		Account: func(context.Context, string) (rules.User, error) {
			t.Fatal("a pinned pilot was looked up")
			return rules.User{}, nil
		},
	})
	if u, ok := l.Pilot("erin"); !ok || u.ID != 5 || u.Login != "erin" {
		t.Fatalf("pilot erin: %+v %v, want the pinned account", u, ok)
	}
	if u, ok := people.New(c, repo, rules.Config{}).Ask(context.Background(), people.Sources{}).Pilot("erin"); ok {
		t.Fatalf("pilot erin without Account: %+v, want not known", u)
	}
	if got := asked(gh); len(got) != 0 {
		t.Fatalf("asked %v", got)
	}
}

func TestLookupKeepsTheFirstError(t *testing.T) {
	gh, c := fixture(t)
	gh.FailNextFor(1, http.StatusInternalServerError, nil, func(_, path string) bool {
		return strings.HasSuffix(path, "/collaborators/bob/permission")
	})
	l := people.New(c, repo, rules.Config{}).Ask(context.Background(), people.Sources{})
	if p := l.Person(rules.User{ID: 2, Login: "bob"}); p != (rules.Person{}) {
		t.Fatalf("bob on a failed read: %+v, want the zero answer", p)
	}
	err := l.Err()
	if err == nil || !strings.Contains(err.Error(), "permission of bob") {
		t.Fatalf("Err = %v, want the failed read", err)
	}
	// Once an answer is missing the decision is discarded: nothing more is read.
	if p, n, leads := l.Person(rules.User{ID: 1, Login: "alice"}), l.TeamSize(), l.Leads(); p.Lead || n != 0 || leads != nil {
		t.Fatalf("after the error: %+v, %d, %v; want zero answers", p, n, leads)
	}
	if l.Err() != err {
		t.Fatalf("Err changed to %v", l.Err())
	}
	if got := asked(gh); len(got) != 1 {
		t.Fatalf("asked %v, want only the failed read", got)
	}
}

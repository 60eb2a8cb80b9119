package githubtest

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/go-github/v60/github"
)

type patTransport string

func (t patTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "token "+string(t))
	return http.DefaultTransport.RoundTrip(r)
}

func personClient(t *testing.T, s *Server, login string) *github.Client {
	t.Helper()
	c, err := github.NewClient(&http.Client{Transport: patTransport(s.AddToken(login))}).WithEnterpriseURLs(s.URL(), s.URL())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A personal access token acts as its person, within their role.
func TestPersonalTokens(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	s.AddRepo("acme/widgets", 7)
	s.SetPermission("acme/widgets", "carol", "write")
	s.SetPermission("acme/widgets", "dave", "read")
	ctx := context.Background()
	carol, dave := personClient(t, s, "carol"), personClient(t, s, "dave")

	me, _, err := dave.Users.Get(ctx, "")
	if err != nil || me.GetLogin() != "dave" {
		t.Fatalf("GET /user = %v, %v", me, err)
	}
	m, _, err := carol.Issues.CreateMilestone(ctx, "acme", "widgets", &github.Milestone{Title: github.String("Goal")})
	if err != nil {
		t.Fatal(err)
	}
	if _, resp, err := dave.Issues.CreateMilestone(ctx, "acme", "widgets", &github.Milestone{Title: github.String("Mine")}); err == nil || resp.StatusCode != 404 {
		t.Fatalf("a reader created a milestone: %v", err)
	}
	// dave may open an issue, but its assignees and milestone are dropped.
	is, _, err := dave.Issues.Create(ctx, "acme", "widgets", &github.IssueRequest{Title: github.String("Bug"),
		Assignees: &[]string{"dave"}, Milestone: m.Number})
	if err != nil || is.GetUser().GetLogin() != "dave" || len(is.Assignees) != 0 || is.Milestone != nil {
		t.Fatalf("a reader's issue: %+v, %v", is, err)
	}
	if is, _, err = dave.Issues.AddAssignees(ctx, "acme", "widgets", is.GetNumber(), []string{"dave"}); err != nil || len(is.Assignees) != 0 {
		t.Fatalf("a reader assigned: %+v, %v", is.Assignees, err)
	}
	if is, _, err = carol.Issues.AddAssignees(ctx, "acme", "widgets", is.GetNumber(), []string{"dave"}); err != nil || len(is.Assignees) != 1 {
		t.Fatalf("a writer could not assign: %+v, %v", is.Assignees, err)
	}
	cm, _, err := dave.Issues.CreateComment(ctx, "acme", "widgets", is.GetNumber(), &github.IssueComment{Body: github.String("/verify")})
	if err != nil || cm.GetUser().GetLogin() != "dave" {
		t.Fatalf("a reader's comment: %+v, %v", cm, err)
	}
	if _, resp, err := carol.Issues.EditComment(ctx, "acme", "widgets", cm.GetID(), &github.IssueComment{Body: github.String("x")}); err != nil {
		t.Fatalf("a writer could not edit a comment: %v %v", resp, err)
	}
	if _, resp, err := dave.Issues.Edit(ctx, "acme", "widgets", is.GetNumber(), &github.IssueRequest{Milestone: m.Number}); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the author could not edit their issue: %v", err)
	}
	if v, _ := s.Issue("acme/widgets", is.GetNumber()); v.Milestone != 0 {
		t.Fatal("a reader set a milestone")
	}
	for _, d := range s.Deliveries() {
		if d.Event == "issue_comment" && d.Action == "created" && d.Sender != "dave" {
			t.Fatalf("dave's comment was sent as %s's", d.Sender)
		}
	}
	for _, r := range s.Requests() {
		if r.User == "" {
			t.Fatalf("request %s %s not attributed to its person", r.Method, r.Path)
		}
	}
	// The fake remembers who last edited the comment (GraphQL's editor).
	views := s.Comments("acme/widgets", is.GetNumber())
	s.mu.Lock()
	editor := s.comments[views[0].ID].editor
	s.mu.Unlock()
	if editor != "carol" {
		t.Fatalf("comment editor %q, want carol", editor)
	}
}

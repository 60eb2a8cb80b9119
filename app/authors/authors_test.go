package authors_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/countersign/countersign/app/authors"
	"github.com/countersign/countersign/internal/githubtest"
	"github.com/shurcooL/githubv4"
)

const repo = "acme/widgets"

func client(t *testing.T, gh *githubtest.Server) *githubv4.Client {
	t.Helper()
	itr, err := ghinstallation.New(http.DefaultTransport, gh.AppID(), 7, gh.PrivateKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	itr.BaseURL = strings.TrimRight(gh.URL(), "/") + "/api/v3"
	return githubv4.NewEnterpriseClient(authors.Endpoint(gh.URL()), &http.Client{Transport: itr})
}

func TestOf(t *testing.T) {
	gh := githubtest.New(githubtest.Options{})
	t.Cleanup(gh.Close)
	gh.AddRepo(repo, 7)
	gh.SetEmails("alice", "Alice@Company.example")
	gh.Comment(repo, gh.OpenIssue(repo, "dave", "make dave known", ""), "dave", "hi")
	n, head := gh.OpenPR(repo, "bob", githubtest.PROptions{Title: "Login", Commits: []githubtest.Commit{
		{Author: "bob", Message: "Login form\n\nCo-authored-by: Alice Liddell <alice@company.example>\nCo-authored-by: Nobody <nobody@example.com>"},
		{Author: "carol", Message: "Style\n\nCo-authored-by: dave <dave@users.noreply.github.com>", Committer: "erin"},
	}})
	res, err := authors.Of(context.Background(), client(t, gh), "acme", "widgets", n)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range res.Authors {
		got = append(got, fmt.Sprintf("%s<%s> co=%v id=%v", a.User.Login, a.Email, a.CoAuthor, a.User.ID != 0))
	}
	want := []string{
		"bob<bob@users.noreply.github.com> co=false id=true",
		"alice<alice@company.example> co=true id=true", // resolved by her verified email
		"<nobody@example.com> co=true id=false",        // no account has it
		"carol<carol@users.noreply.github.com> co=false id=true",
		"dave<dave@users.noreply.github.com> co=true id=true",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("authors:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if res.Head != head || res.Queries != 1 || res.Truncated {
		t.Fatalf("head %s (want %s), %d queries, truncated %v", res.Head, head, res.Queries, res.Truncated)
	}
}

func TestOfPaginates(t *testing.T) {
	gh := githubtest.New(githubtest.Options{})
	t.Cleanup(gh.Close)
	gh.AddRepo(repo, 7)
	commits := make([]githubtest.Commit, 150)
	for i := range commits {
		commits[i] = githubtest.Commit{Author: "bob", Message: fmt.Sprintf("c%d", i)}
	}
	commits[149].Message += "\n\nCo-authored-by: Alice <alice@users.noreply.github.com>"
	n, _ := gh.OpenPR(repo, "bob", githubtest.PROptions{Title: "Big", Commits: commits})
	res, err := authors.Of(context.Background(), client(t, gh), "acme", "widgets", n)
	if err != nil {
		t.Fatal(err)
	}
	if res.Queries != 2 || len(res.Authors) != 151 || res.Authors[150].User.Login != "alice" {
		t.Fatalf("%d queries, %d authors, last %+v", res.Queries, len(res.Authors), res.Authors[len(res.Authors)-1])
	}
}

func TestOfUnknownPullRequest(t *testing.T) {
	gh := githubtest.New(githubtest.Options{})
	t.Cleanup(gh.Close)
	gh.AddRepo(repo, 7)
	if _, err := authors.Of(context.Background(), client(t, gh), "acme", "widgets", 42); err == nil || !strings.Contains(err.Error(), "PullRequest") {
		t.Fatalf("err = %v", err)
	}
	if _, err := authors.Of(context.Background(), client(t, gh), "acme", "elsewhere", 1); err == nil || !strings.Contains(err.Error(), "Repository") {
		t.Fatalf("err = %v", err)
	}
}

func TestEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"https://api.github.com/":       "https://api.github.com/graphql",
		"https://ghe.example/api/v3/":   "https://ghe.example/api/graphql",
		"https://ghe.example/api/v3":    "https://ghe.example/api/graphql",
		"http://127.0.0.1:8080/":        "http://127.0.0.1:8080/graphql",
		"http://127.0.0.1:8080/prefix/": "http://127.0.0.1:8080/prefix/graphql",
	} {
		if got := authors.Endpoint(in); got != want {
			t.Errorf("Endpoint(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOfSaysWhenTruncated(t *testing.T) {
	gh := githubtest.New(githubtest.Options{})
	t.Cleanup(gh.Close)
	gh.AddRepo(repo, 7)
	msg := "Many hands\n"
	for i := range 100 {
		msg += fmt.Sprintf("\nCo-authored-by: u%d <u%d@users.noreply.github.com>", i, i)
	}
	n, _ := gh.OpenPR(repo, "bob", githubtest.PROptions{Title: "x", Commits: []githubtest.Commit{{Author: "bob", Message: msg}}})
	res, err := authors.Of(context.Background(), client(t, gh), "acme", "widgets", n)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Truncated || len(res.Authors) != 100 {
		t.Fatalf("truncated %v, %d authors (of 101)", res.Truncated, len(res.Authors))
	}
}

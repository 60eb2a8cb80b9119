// Package authors finds who wrote a pull request's commits the way GitHub's
// commit page shows them: each commit's authors (the git author, then the
// Co-authored-by: trailers) as GitHub resolves them to accounts, by verified
// email (or users.noreply.github.com address), never by the trailer's text.
// It reads GraphQL's Commit.authors, one query per 100 commits of the pull
// request's head.
package authors

import (
	"context"
	"fmt"
	"strings"

	"github.com/shurcooL/githubv4"
)

// User is a GitHub account.
type User struct {
	ID    int64
	Login string
}

// Author is one author of a commit.
type Author struct {
	User   User   // zero when GitHub resolves the email to no account
	Name   string // as the commit (or trailer) gives it
	Email  string
	Commit string // the commit's sha
	// CoAuthor says it comes from a Co-authored-by: trailer (else it is the
	// commit's git author).
	CoAuthor bool
}

// MaxCommits bounds the commits read (GitHub lists at most 250 of a pull
// request's commits).
const MaxCommits = 250

type gitActor struct {
	Name  string
	Email string
	User  *struct {
		DatabaseID int64 `graphql:"databaseId"`
		Login      string
	}
}

type query struct {
	Repository struct {
		PullRequest struct {
			HeadRefOid string
			Commits    struct {
				PageInfo struct {
					HasNextPage bool
					EndCursor   string
				}
				Nodes []struct {
					Commit struct {
						Oid     string
						Authors struct {
							TotalCount int
							Nodes      []gitActor
						} `graphql:"authors(first: 100)"`
					}
				}
			} `graphql:"commits(first: 100, after: $cursor)"`
		} `graphql:"pullRequest(number: $number)"`
	} `graphql:"repository(owner: $owner, name: $name)"`
}

// Result is what GitHub says wrote a pull request.
type Result struct {
	Head    string   // the head the commits were read at
	Authors []Author // every commit's authors, in commit order
	// Truncated says a commit had more than 100 authors or the pull request
	// more than MaxCommits commits: the rest were not read.
	Truncated bool
	Queries   int // GraphQL queries made
}

// Of reads the authors of the commits of pull request number of owner/name.
func Of(ctx context.Context, c *githubv4.Client, owner, name string, number int) (Result, error) {
	var res Result
	vars := map[string]any{
		"owner": githubv4.String(owner), "name": githubv4.String(name),
		"number": githubv4.Int(int32(number)), "cursor": (*githubv4.String)(nil),
	}
	commits := 0
	for {
		var q query
		res.Queries++
		if err := c.Query(ctx, &q, vars); err != nil {
			return res, fmt.Errorf("query the authors of #%d: %w", number, err)
		}
		pr := q.Repository.PullRequest
		if res.Head == "" {
			res.Head = pr.HeadRefOid
		}
		for _, n := range pr.Commits.Nodes {
			commits++
			if n.Commit.Authors.TotalCount > len(n.Commit.Authors.Nodes) {
				res.Truncated = true
			}
			for i, a := range n.Commit.Authors.Nodes {
				au := Author{Name: a.Name, Email: a.Email, Commit: n.Commit.Oid, CoAuthor: i > 0}
				if a.User != nil {
					au.User = User{ID: a.User.DatabaseID, Login: a.User.Login}
				}
				res.Authors = append(res.Authors, au)
			}
		}
		if !pr.Commits.PageInfo.HasNextPage {
			return res, nil
		}
		if commits >= MaxCommits {
			res.Truncated = true
			return res, nil
		}
		vars["cursor"] = githubv4.NewString(githubv4.String(pr.Commits.PageInfo.EndCursor))
	}
}

// Endpoint is the GraphQL endpoint of the REST API at apiURL: api.github.com's
// is https://api.github.com/graphql; GitHub Enterprise Server's REST API is at
// https://HOST/api/v3/ and its GraphQL at https://HOST/api/graphql.
func Endpoint(apiURL string) string {
	if base, ok := strings.CutSuffix(strings.TrimSuffix(apiURL, "/"), "/api/v3"); ok {
		return base + "/api/graphql"
	}
	if len(apiURL) == 0 || apiURL[len(apiURL)-1] != '/' {
		apiURL += "/"
	}
	return apiURL + "graphql"
}

package gh

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/google/go-github/v60/github"
)

// Issue links GitHub lists for an issue (go-github has no methods for
// them): the issues it is blocked by, and its sub-issues.
const (
	LinksBlockedBy = "dependencies/blocked_by"
	LinksSubIssues = "sub_issues"
)

// ListIssueLinks lists the issues of one kind of link of issue n of
// owner/repo (LinksBlockedBy or LinksSubIssues), every page up to max
// issues. Each may be of another repository: RepoOfIssue names it.
func (c *Client) ListIssueLinks(ctx context.Context, owner, repo string, n int, kind string, max int) ([]*github.Issue, error) {
	var out []*github.Issue
	for page := 1; len(out) < max; page++ {
		u := fmt.Sprintf("repos/%s/%s/issues/%d/%s?per_page=100&page=%d", url.PathEscape(owner), url.PathEscape(repo), n, kind, page)
		req, err := c.c.NewRequest("GET", u, nil)
		if err != nil {
			return nil, err
		}
		var list []*github.Issue
		resp, err := c.c.Do(ctx, req, &list)
		if err != nil {
			return nil, fmt.Errorf("list %s of %s/%s#%d: %w", kind, owner, repo, n, err)
		}
		out = append(out, list...)
		if resp == nil || resp.NextPage == 0 {
			break
		}
	}
	if len(out) > max {
		out = out[:max]
	}
	return out, nil
}

// RepoOfIssue is the "owner/name" of the repository an issue GitHub listed
// is in (from its repository_url), fallback when it names none.
func RepoOfIssue(is *github.Issue, fallback string) string {
	u := is.GetRepositoryURL()
	i := strings.Index(u, "/repos/")
	if i < 0 {
		return fallback
	}
	parts := strings.Split(strings.Trim(u[i+len("/repos/"):], "/"), "/")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return fallback
	}
	return parts[0] + "/" + parts[1]
}

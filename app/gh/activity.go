package gh

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/google/go-github/v60/github"
)

// Activity is one entry of a repository's activity: a push, force push,
// branch creation or deletion, or merge, with who did it (GET
// /repos/{owner}/{repo}/activity; go-github v60 has no method for it).
type Activity struct {
	ID           int64        `json:"id"`
	Before       string       `json:"before"`
	After        string       `json:"after"`
	Ref          string       `json:"ref"`
	Timestamp    time.Time    `json:"timestamp"`
	ActivityType string       `json:"activity_type"`
	Actor        *github.User `json:"actor"` // null when the account is gone
}

// ActivityOptions filter and page ListRepositoryActivity.
type ActivityOptions struct {
	Ref       string // refs/heads/NAME or NAME; "" for every ref
	Direction string // asc or desc (GitHub's default: desc, newest first)
	PerPage   int    // at most 100
	After     string // the cursor of the next page (Response.After of the previous one)
}

// ListRepositoryActivity lists the activity of owner/repo, one page.
func (c *Client) ListRepositoryActivity(ctx context.Context, owner, repo string, opts ActivityOptions) ([]*Activity, *github.Response, error) {
	q := url.Values{}
	if opts.Ref != "" {
		q.Set("ref", opts.Ref)
	}
	if opts.Direction != "" {
		q.Set("direction", opts.Direction)
	}
	if opts.PerPage > 0 {
		q.Set("per_page", strconv.Itoa(opts.PerPage))
	}
	if opts.After != "" {
		q.Set("after", opts.After)
	}
	u := fmt.Sprintf("repos/%s/%s/activity", url.PathEscape(owner), url.PathEscape(repo))
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := c.c.NewRequest("GET", u, nil)
	if err != nil {
		return nil, nil, err
	}
	var out []*Activity
	resp, err := c.c.Do(ctx, req, &out)
	if err != nil {
		return nil, resp, err
	}
	return out, resp, nil
}

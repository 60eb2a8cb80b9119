// Package ghread is the MCP server's GitHub, acting as one person (the
// token's account), and its reads of what only countersign's bot can vouch
// for: a state label the bot put on last, a task card the bot wrote and
// nobody else edited, a goal issue the bot opened.
package ghread

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v60/github"
	"github.com/shurcooL/githubv4"

	"github.com/countersign/countersign/app/authors"
)

// GitHub is what the tools need of GitHub, acting as one person (the token's
// account). Everything it writes is what that person could write by hand.
type GitHub interface {
	// Me is the token's account.
	Me(ctx context.Context) (Person, error)
	Issue(ctx context.Context, repo string, n int) (*Issue, error)
	CreateIssue(ctx context.Context, repo string, in NewIssue) (*Issue, error)
	SetMilestone(ctx context.Context, repo string, n, milestone int) (*Issue, error)
	AddAssignees(ctx context.Context, repo string, n int, logins []string) (*Issue, error)
	Comment(ctx context.Context, repo string, n int, body string) (*Comment, error)
	// CommentsSince are issue n's comments updated at or after since, oldest first.
	CommentsSince(ctx context.Context, repo string, n int, since time.Time) ([]*Comment, error)
	Milestones(ctx context.Context, repo string) ([]Milestone, error)
	CreateMilestone(ctx context.Context, repo, title, description string) (Milestone, error)
	// Issues lists issues (not pull requests) of repo: in a milestone
	// (milestone > 0, open and closed), or open ones with a label.
	Issues(ctx context.Context, repo string, milestone int, label string) ([]*Issue, error)
	// AssignedToMe are the open issues assigned to the token's account.
	AssignedToMe(ctx context.Context) ([]*Issue, error)
	// Approve submits an approving review of pull request pr.
	Approve(ctx context.Context, repo string, pr int) error
	// Editors says, for each comment of issue n (by database id), who last
	// edited it (GitHub's GraphQL IssueComment.editor), if anyone.
	Editors(ctx context.Context, repo string, n int) (map[int64]Editor, error)
	// LabelEvents are the labeled and unlabeled events of issue n, oldest
	// first (GitHub's issue events API): who put each label on or took it off.
	LabelEvents(ctx context.Context, repo string, n int) ([]LabelEvent, error)
}

// LabelEvent is a label put on (labeled) or taken off (unlabeled) an issue.
type LabelEvent struct {
	Labeled bool // labeled; else unlabeled
	Label   string
	Actor   string
	Bot     bool // the actor is an App's bot account
	At      time.Time
}

// Person is a GitHub account.
type Person struct {
	Login string
	ID    int64
}

// Issue is an issue or pull request, as the tools need it.
type Issue struct {
	Repo           string
	Number         int
	Title          string
	Body           string
	Open           bool
	PR             bool
	Author         string
	AuthorBot      bool // the author is an App's bot account
	Labels         []string
	Assignees      []string
	Milestone      int
	MilestoneTitle string
	// Linked: GitHub counts issues that block it or are its sub-issues
	// (its issue_dependencies_summary and sub_issues_summary, when listed).
	Linked bool
}

// NewIssue is an issue to open.
type NewIssue struct {
	Title, Body string
	Assignees   []string
	Milestone   int
}

// Comment is an issue comment.
type Comment struct {
	ID        int64
	Author    string
	Bot       bool // the author is an App's bot account
	Body      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Milestone is a milestone (a goal).
type Milestone struct {
	Number int
	Title  string
	Open   bool
}

// Editor is who last edited a comment, as GitHub's GraphQL API says.
type Editor struct {
	// Login is the Actor's login: for an App's bot, its slug (no "[bot]").
	Login string
	// Path is the Actor's resourcePath: /apps/<slug> for an App's bot.
	Path string
	At   time.Time
}

// ErrNotFound is GitHub's 404: the thing does not exist, or the token cannot see it.
var ErrNotFound = errors.New("not found")

// ErrUnauthorized is GitHub's 401: it does not accept the token.
var ErrUnauthorized = errors.New("GitHub does not accept the token")

// Dial makes the GitHub of the person whose token tok is, at apiURL (the
// REST base, as GITHUB_API_URL). The token is kept only in the returned
// client's transport, for the life of one request.
type Dial func(tok string) (GitHub, error)

// RESTDialer dials GitHub's REST and GraphQL APIs at apiURL through base
// (nil: http.DefaultTransport).
func RESTDialer(apiURL string, base http.RoundTripper) Dial {
	if base == nil {
		base = http.DefaultTransport
	}
	if !strings.HasSuffix(apiURL, "/") {
		apiURL += "/"
	}
	return func(tok string) (GitHub, error) {
		hc := &http.Client{Transport: WithToken(tok, base), Timeout: 30 * time.Second}
		c := github.NewClient(hc)
		if apiURL != publicAPI {
			var err error
			if c, err = c.WithEnterpriseURLs(apiURL, apiURL); err != nil {
				return nil, fmt.Errorf("GITHUB_API_URL %q: %w", apiURL, err)
			}
		}
		return &restGitHub{c: c, gql: githubv4.NewEnterpriseClient(authors.Endpoint(apiURL), hc)}, nil
	}
}

const publicAPI = "https://api.github.com/"

// WithToken sends every request through next with tok as its bearer token.
func WithToken(tok string, next http.RoundTripper) http.RoundTripper {
	return tokenTransport{tok: tok, next: next}
}

type tokenTransport struct {
	tok  string
	next http.RoundTripper
}

func (t tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+t.tok)
	return t.next.RoundTrip(r)
}

type restGitHub struct {
	c   *github.Client
	gql *githubv4.Client
}

// splitRepo splits "owner/name".
func splitRepo(repo string) (string, string) {
	owner, name, _ := strings.Cut(repo, "/")
	return owner, name
}

// apiErr makes GitHub's answer an error that says what GitHub said; a 404 is
// ErrNotFound.
func apiErr(what string, err error) error {
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		switch er.Response.StatusCode {
		case http.StatusNotFound:
			return fmt.Errorf("%s: %w", what, ErrNotFound)
		case http.StatusUnauthorized:
			return fmt.Errorf("%s: %w", what, ErrUnauthorized)
		}
		msg := er.Message
		for _, e := range er.Errors {
			msg += fmt.Sprintf(" (%s %s: %s)", e.Field, e.Code, e.Message)
		}
		return fmt.Errorf("%s: GitHub answered %d: %s", what, er.Response.StatusCode, msg)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func (g *restGitHub) Me(ctx context.Context) (Person, error) {
	u, _, err := g.c.Users.Get(ctx, "")
	if err != nil {
		return Person{}, apiErr("who the token is", err)
	}
	return Person{Login: u.GetLogin(), ID: u.GetID()}, nil
}

func issueOf(repo string, is *github.Issue) *Issue {
	out := &Issue{Repo: repo, Number: is.GetNumber(), Title: is.GetTitle(), Body: is.GetBody(), Open: is.GetState() == "open",
		PR: is.IsPullRequest(), Author: is.GetUser().GetLogin(), AuthorBot: is.GetUser().GetType() == "Bot", Milestone: is.GetMilestone().GetNumber(),
		MilestoneTitle: is.GetMilestone().GetTitle()}
	if out.Repo == "" {
		out.Repo = is.GetRepository().GetFullName()
	}
	for _, l := range is.Labels {
		out.Labels = append(out.Labels, l.GetName())
	}
	for _, a := range is.Assignees {
		out.Assignees = append(out.Assignees, a.GetLogin())
	}
	return out
}

func (g *restGitHub) Issue(ctx context.Context, repo string, n int) (*Issue, error) {
	owner, name := splitRepo(repo)
	is, _, err := g.c.Issues.Get(ctx, owner, name, n)
	if err != nil {
		return nil, apiErr(fmt.Sprintf("read %s#%d", repo, n), err)
	}
	return issueOf(repo, is), nil
}

func (g *restGitHub) CreateIssue(ctx context.Context, repo string, in NewIssue) (*Issue, error) {
	owner, name := splitRepo(repo)
	req := &github.IssueRequest{Title: &in.Title, Body: &in.Body}
	if len(in.Assignees) > 0 {
		req.Assignees = &in.Assignees
	}
	if in.Milestone > 0 {
		req.Milestone = &in.Milestone
	}
	is, _, err := g.c.Issues.Create(ctx, owner, name, req)
	if err != nil {
		return nil, apiErr("open an issue in "+repo, err)
	}
	return issueOf(repo, is), nil
}

func (g *restGitHub) SetMilestone(ctx context.Context, repo string, n, milestone int) (*Issue, error) {
	owner, name := splitRepo(repo)
	is, _, err := g.c.Issues.Edit(ctx, owner, name, n, &github.IssueRequest{Milestone: &milestone})
	if err != nil {
		return nil, apiErr(fmt.Sprintf("set the milestone of %s#%d", repo, n), err)
	}
	return issueOf(repo, is), nil
}

func (g *restGitHub) AddAssignees(ctx context.Context, repo string, n int, logins []string) (*Issue, error) {
	owner, name := splitRepo(repo)
	is, _, err := g.c.Issues.AddAssignees(ctx, owner, name, n, logins)
	if err != nil {
		return nil, apiErr(fmt.Sprintf("assign %s#%d", repo, n), err)
	}
	return issueOf(repo, is), nil
}

func commentOf(c *github.IssueComment) *Comment {
	return &Comment{ID: c.GetID(), Author: c.GetUser().GetLogin(), Bot: c.GetUser().GetType() == "Bot", Body: c.GetBody(),
		CreatedAt: c.GetCreatedAt().Time, UpdatedAt: c.GetUpdatedAt().Time}
}

func (g *restGitHub) Comment(ctx context.Context, repo string, n int, body string) (*Comment, error) {
	owner, name := splitRepo(repo)
	c, _, err := g.c.Issues.CreateComment(ctx, owner, name, n, &github.IssueComment{Body: &body})
	if err != nil {
		return nil, apiErr(fmt.Sprintf("comment on %s#%d", repo, n), err)
	}
	return commentOf(c), nil
}

// maxPages bounds the pages one listing reads.
const maxPages = 10

func (g *restGitHub) CommentsSince(ctx context.Context, repo string, n int, since time.Time) ([]*Comment, error) {
	owner, name := splitRepo(repo)
	opt := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	if !since.IsZero() {
		opt.Since = &since
	}
	var out []*Comment
	for page := 0; page < maxPages; page++ {
		cs, resp, err := g.c.Issues.ListComments(ctx, owner, name, n, opt)
		if err != nil {
			return nil, apiErr(fmt.Sprintf("read the comments of %s#%d", repo, n), err)
		}
		for _, c := range cs {
			out = append(out, commentOf(c))
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	return out, nil
}

func (g *restGitHub) Milestones(ctx context.Context, repo string) ([]Milestone, error) {
	owner, name := splitRepo(repo)
	opt := &github.MilestoneListOptions{State: "all", ListOptions: github.ListOptions{PerPage: 100}}
	var out []Milestone
	for page := 0; page < maxPages; page++ {
		ms, resp, err := g.c.Issues.ListMilestones(ctx, owner, name, opt)
		if err != nil {
			return nil, apiErr("read the milestones of "+repo, err)
		}
		for _, m := range ms {
			out = append(out, Milestone{Number: m.GetNumber(), Title: m.GetTitle(), Open: m.GetState() == "open"})
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	return out, nil
}

func (g *restGitHub) CreateMilestone(ctx context.Context, repo, title, description string) (Milestone, error) {
	owner, name := splitRepo(repo)
	m, _, err := g.c.Issues.CreateMilestone(ctx, owner, name, &github.Milestone{Title: &title, Description: &description})
	if err != nil {
		return Milestone{}, apiErr("create a milestone in "+repo, err)
	}
	return Milestone{Number: m.GetNumber(), Title: m.GetTitle(), Open: m.GetState() == "open"}, nil
}

func (g *restGitHub) Issues(ctx context.Context, repo string, milestone int, label string) ([]*Issue, error) {
	owner, name := splitRepo(repo)
	q := url.Values{"state": {"open"}, "direction": {"asc"}, "sort": {"created"}, "per_page": {"100"}}
	if milestone > 0 {
		q.Set("milestone", strconv.Itoa(milestone))
		q.Set("state", "all")
	}
	if label != "" {
		q.Set("labels", label)
	}
	var out []*Issue
	for page := 1; page <= maxPages; page++ {
		q.Set("page", strconv.Itoa(page))
		req, err := g.c.NewRequest("GET", fmt.Sprintf("repos/%s/%s/issues?%s", url.PathEscape(owner), url.PathEscape(name), q.Encode()), nil)
		if err != nil {
			return nil, apiErr("list the issues of "+repo, err)
		}
		// go-github's Issue lacks the link summaries GitHub lists with each
		// issue: they say which tasks have blockers worth reading.
		var list []struct {
			github.Issue
			Deps *struct {
				Total int `json:"total_blocked_by"`
			} `json:"issue_dependencies_summary"`
			Subs *struct {
				Total int `json:"total"`
			} `json:"sub_issues_summary"`
		}
		resp, err := g.c.Do(ctx, req, &list)
		if err != nil {
			return nil, apiErr("list the issues of "+repo, err)
		}
		for i := range list {
			is := &list[i]
			if is.IsPullRequest() {
				continue
			}
			v := issueOf(repo, &is.Issue)
			v.Linked = (is.Deps != nil && is.Deps.Total > 0) || (is.Subs != nil && is.Subs.Total > 0)
			out = append(out, v)
		}
		if resp.NextPage == 0 {
			break
		}
	}
	return out, nil
}

func (g *restGitHub) AssignedToMe(ctx context.Context) ([]*Issue, error) {
	opt := &github.IssueListOptions{Filter: "assigned", State: "open", ListOptions: github.ListOptions{PerPage: 100}}
	var out []*Issue
	for page := 0; page < maxPages; page++ {
		list, resp, err := g.c.Issues.List(ctx, true, opt)
		if err != nil {
			return nil, apiErr("list the issues assigned to you", err)
		}
		for _, is := range list {
			if !is.IsPullRequest() {
				out = append(out, issueOf("", is))
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	return out, nil
}

func (g *restGitHub) Approve(ctx context.Context, repo string, pr int) error {
	owner, name := splitRepo(repo)
	_, _, err := g.c.PullRequests.CreateReview(ctx, owner, name, pr, &github.PullRequestReviewRequest{Event: github.String("APPROVE")})
	if err != nil {
		return apiErr(fmt.Sprintf("approve %s#%d", repo, pr), err)
	}
	return nil
}

// editorsQuery reads who last edited each comment of an issue.
type editorsQuery struct {
	Repository struct {
		Issue struct {
			Comments struct {
				Nodes []struct {
					DatabaseID   int64
					LastEditedAt *githubv4.DateTime
					Editor       *struct {
						Login        string
						ResourcePath string
					}
				}
				PageInfo struct {
					HasNextPage bool
					EndCursor   githubv4.String
				}
			} `graphql:"comments(first: 100, after: $after)"`
		} `graphql:"issue(number: $number)"`
	} `graphql:"repository(owner: $owner, name: $name)"`
}

func (g *restGitHub) Editors(ctx context.Context, repo string, n int) (map[int64]Editor, error) {
	owner, name := splitRepo(repo)
	vars := map[string]any{"owner": githubv4.String(owner), "name": githubv4.String(name),
		"number": githubv4.Int(n), "after": (*githubv4.String)(nil)}
	out := map[int64]Editor{}
	for page := 0; page < maxPages; page++ {
		var q editorsQuery
		if err := g.gql.Query(ctx, &q, vars); err != nil {
			return nil, fmt.Errorf("read who edited the comments of %s#%d: %w", repo, n, err)
		}
		for _, c := range q.Repository.Issue.Comments.Nodes {
			if c.Editor != nil {
				e := Editor{Login: c.Editor.Login, Path: c.Editor.ResourcePath}
				if c.LastEditedAt != nil {
					e.At = c.LastEditedAt.Time
				}
				out[c.DatabaseID] = e
			}
		}
		if !q.Repository.Issue.Comments.PageInfo.HasNextPage {
			break
		}
		vars["after"] = githubv4.NewString(q.Repository.Issue.Comments.PageInfo.EndCursor)
	}
	return out, nil
}

func (g *restGitHub) LabelEvents(ctx context.Context, repo string, n int) ([]LabelEvent, error) {
	owner, name := splitRepo(repo)
	opt := &github.ListOptions{PerPage: 100}
	var out []LabelEvent
	for page := 0; page < maxPages; page++ {
		evs, resp, err := g.c.Issues.ListIssueEvents(ctx, owner, name, n, opt)
		if err != nil {
			return nil, apiErr(fmt.Sprintf("read the events of %s#%d", repo, n), err)
		}
		for _, e := range evs {
			if ev := e.GetEvent(); (ev == "labeled" || ev == "unlabeled") && e.Label != nil {
				out = append(out, LabelEvent{Labeled: ev == "labeled", Label: e.Label.GetName(), Actor: e.GetActor().GetLogin(),
					Bot: e.GetActor().GetType() == "Bot", At: e.GetCreatedAt().Time})
			}
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
	return nil, fmt.Errorf("read the events of %s#%d: more than %d pages", repo, n, maxPages)
}

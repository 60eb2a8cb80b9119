package gh

import (
	"context"

	"github.com/google/go-github/v60/github"
)

// Client is one installation's GitHub, as countersign calls it: one method
// per call of go-github's services that countersign makes, with the same
// arguments and answers. Packages declare the few of these methods they need
// as their own small interface (people.Client, card.Client, ...); Client is
// the one adapter that implements them all over *github.Client.
type Client struct{ c *github.Client }

// UserReader is what Account needs of GitHub.
type UserReader interface {
	GetUser(ctx context.Context, user string) (*github.User, *github.Response, error)
}

// Client is installation id's client (see Installation).
func (g *GitHub) Client(id int64) (*Client, error) {
	c, err := g.Installation(id)
	if err != nil {
		return nil, err
	}
	return &Client{c: c}, nil
}

// ListInstallationRepos is Apps.ListRepos.
func (c *Client) ListInstallationRepos(ctx context.Context, opts *github.ListOptions) (*github.ListRepositories, *github.Response, error) {
	return c.c.Apps.ListRepos(ctx, opts)
}

// CreateCheckRun is Checks.CreateCheckRun.
func (c *Client) CreateCheckRun(ctx context.Context, owner, repo string, opts github.CreateCheckRunOptions) (*github.CheckRun, *github.Response, error) {
	return c.c.Checks.CreateCheckRun(ctx, owner, repo, opts)
}

// ListCheckRunsForRef is Checks.ListCheckRunsForRef.
func (c *Client) ListCheckRunsForRef(ctx context.Context, owner, repo, ref string, opts *github.ListCheckRunsOptions) (*github.ListCheckRunsResults, *github.Response, error) {
	return c.c.Checks.ListCheckRunsForRef(ctx, owner, repo, ref, opts)
}

// UpdateCheckRun is Checks.UpdateCheckRun.
func (c *Client) UpdateCheckRun(ctx context.Context, owner, repo string, checkRunID int64, opts github.UpdateCheckRunOptions) (*github.CheckRun, *github.Response, error) {
	return c.c.Checks.UpdateCheckRun(ctx, owner, repo, checkRunID, opts)
}

// AddAssignees is Issues.AddAssignees.
func (c *Client) AddAssignees(ctx context.Context, owner, repo string, number int, assignees []string) (*github.Issue, *github.Response, error) {
	return c.c.Issues.AddAssignees(ctx, owner, repo, number, assignees)
}

// AddLabelsToIssue is Issues.AddLabelsToIssue.
func (c *Client) AddLabelsToIssue(ctx context.Context, owner string, repo string, number int, labels []string) ([]*github.Label, *github.Response, error) {
	return c.c.Issues.AddLabelsToIssue(ctx, owner, repo, number, labels)
}

// CreateIssue is Issues.Create.
func (c *Client) CreateIssue(ctx context.Context, owner string, repo string, issue *github.IssueRequest) (*github.Issue, *github.Response, error) {
	return c.c.Issues.Create(ctx, owner, repo, issue)
}

// CreateComment is Issues.CreateComment.
func (c *Client) CreateComment(ctx context.Context, owner string, repo string, number int, comment *github.IssueComment) (*github.IssueComment, *github.Response, error) {
	return c.c.Issues.CreateComment(ctx, owner, repo, number, comment)
}

// CreateLabel is Issues.CreateLabel.
func (c *Client) CreateLabel(ctx context.Context, owner string, repo string, label *github.Label) (*github.Label, *github.Response, error) {
	return c.c.Issues.CreateLabel(ctx, owner, repo, label)
}

// EditIssue is Issues.Edit.
func (c *Client) EditIssue(ctx context.Context, owner string, repo string, number int, issue *github.IssueRequest) (*github.Issue, *github.Response, error) {
	return c.c.Issues.Edit(ctx, owner, repo, number, issue)
}

// EditComment is Issues.EditComment.
func (c *Client) EditComment(ctx context.Context, owner string, repo string, commentID int64, comment *github.IssueComment) (*github.IssueComment, *github.Response, error) {
	return c.c.Issues.EditComment(ctx, owner, repo, commentID, comment)
}

// EditLabel is Issues.EditLabel.
func (c *Client) EditLabel(ctx context.Context, owner string, repo string, name string, label *github.Label) (*github.Label, *github.Response, error) {
	return c.c.Issues.EditLabel(ctx, owner, repo, name, label)
}

// EditMilestone is Issues.EditMilestone.
func (c *Client) EditMilestone(ctx context.Context, owner string, repo string, number int, milestone *github.Milestone) (*github.Milestone, *github.Response, error) {
	return c.c.Issues.EditMilestone(ctx, owner, repo, number, milestone)
}

// GetIssue is Issues.Get.
func (c *Client) GetIssue(ctx context.Context, owner string, repo string, number int) (*github.Issue, *github.Response, error) {
	return c.c.Issues.Get(ctx, owner, repo, number)
}

// GetComment is Issues.GetComment.
func (c *Client) GetComment(ctx context.Context, owner string, repo string, commentID int64) (*github.IssueComment, *github.Response, error) {
	return c.c.Issues.GetComment(ctx, owner, repo, commentID)
}

// GetMilestone is Issues.GetMilestone.
func (c *Client) GetMilestone(ctx context.Context, owner string, repo string, number int) (*github.Milestone, *github.Response, error) {
	return c.c.Issues.GetMilestone(ctx, owner, repo, number)
}

// ListIssuesByRepo is Issues.ListByRepo.
func (c *Client) ListIssuesByRepo(ctx context.Context, owner string, repo string, opts *github.IssueListByRepoOptions) ([]*github.Issue, *github.Response, error) {
	return c.c.Issues.ListByRepo(ctx, owner, repo, opts)
}

// ListComments is Issues.ListComments.
func (c *Client) ListComments(ctx context.Context, owner string, repo string, number int, opts *github.IssueListCommentsOptions) ([]*github.IssueComment, *github.Response, error) {
	return c.c.Issues.ListComments(ctx, owner, repo, number, opts)
}

// ListIssueEvents is Issues.ListIssueEvents.
func (c *Client) ListIssueEvents(ctx context.Context, owner, repo string, number int, opts *github.ListOptions) ([]*github.IssueEvent, *github.Response, error) {
	return c.c.Issues.ListIssueEvents(ctx, owner, repo, number, opts)
}

// ListLabelsByIssue is Issues.ListLabelsByIssue.
func (c *Client) ListLabelsByIssue(ctx context.Context, owner string, repo string, number int, opts *github.ListOptions) ([]*github.Label, *github.Response, error) {
	return c.c.Issues.ListLabelsByIssue(ctx, owner, repo, number, opts)
}

// RemoveLabelForIssue is Issues.RemoveLabelForIssue.
func (c *Client) RemoveLabelForIssue(ctx context.Context, owner string, repo string, number int, label string) (*github.Response, error) {
	return c.c.Issues.RemoveLabelForIssue(ctx, owner, repo, number, label)
}

// GetPullRequest is PullRequests.Get.
func (c *Client) GetPullRequest(ctx context.Context, owner string, repo string, number int) (*github.PullRequest, *github.Response, error) {
	return c.c.PullRequests.Get(ctx, owner, repo, number)
}

// ListPullRequestCommits is PullRequests.ListCommits.
func (c *Client) ListPullRequestCommits(ctx context.Context, owner string, repo string, number int, opts *github.ListOptions) ([]*github.RepositoryCommit, *github.Response, error) {
	return c.c.PullRequests.ListCommits(ctx, owner, repo, number, opts)
}

// ListPullRequests is PullRequests.List.
func (c *Client) ListPullRequests(ctx context.Context, owner string, repo string, opts *github.PullRequestListOptions) ([]*github.PullRequest, *github.Response, error) {
	return c.c.PullRequests.List(ctx, owner, repo, opts)
}

// ListPullRequestReviews is PullRequests.ListReviews.
func (c *Client) ListPullRequestReviews(ctx context.Context, owner string, repo string, number int, opts *github.ListOptions) ([]*github.PullRequestReview, *github.Response, error) {
	return c.c.PullRequests.ListReviews(ctx, owner, repo, number, opts)
}

// ListPullRequestFiles is PullRequests.ListFiles.
func (c *Client) ListPullRequestFiles(ctx context.Context, owner string, repo string, number int, opts *github.ListOptions) ([]*github.CommitFile, *github.Response, error) {
	return c.c.PullRequests.ListFiles(ctx, owner, repo, number, opts)
}

// GetRepository is Repositories.Get.
func (c *Client) GetRepository(ctx context.Context, owner, repo string) (*github.Repository, *github.Response, error) {
	return c.c.Repositories.Get(ctx, owner, repo)
}

// GetContents is Repositories.GetContents.
func (c *Client) GetContents(ctx context.Context, owner, repo, path string, opts *github.RepositoryContentGetOptions) (fileContent *github.RepositoryContent, directoryContent []*github.RepositoryContent, resp *github.Response, err error) {
	return c.c.Repositories.GetContents(ctx, owner, repo, path, opts)
}

// GetPermissionLevel is Repositories.GetPermissionLevel.
func (c *Client) GetPermissionLevel(ctx context.Context, owner, repo, user string) (*github.RepositoryPermissionLevel, *github.Response, error) {
	return c.c.Repositories.GetPermissionLevel(ctx, owner, repo, user)
}

// ListCollaborators is Repositories.ListCollaborators.
func (c *Client) ListCollaborators(ctx context.Context, owner, repo string, opts *github.ListCollaboratorsOptions) ([]*github.User, *github.Response, error) {
	return c.c.Repositories.ListCollaborators(ctx, owner, repo, opts)
}

// ListStatuses is Repositories.ListStatuses.
func (c *Client) ListStatuses(ctx context.Context, owner, repo, ref string, opts *github.ListOptions) ([]*github.RepoStatus, *github.Response, error) {
	return c.c.Repositories.ListStatuses(ctx, owner, repo, ref, opts)
}

// GetTeamMembershipBySlug is Teams.GetTeamMembershipBySlug.
func (c *Client) GetTeamMembershipBySlug(ctx context.Context, org, slug, user string) (*github.Membership, *github.Response, error) {
	return c.c.Teams.GetTeamMembershipBySlug(ctx, org, slug, user)
}

// ListTeamMembersBySlug is Teams.ListTeamMembersBySlug.
func (c *Client) ListTeamMembersBySlug(ctx context.Context, org, slug string, opts *github.TeamListTeamMembersOptions) ([]*github.User, *github.Response, error) {
	return c.c.Teams.ListTeamMembersBySlug(ctx, org, slug, opts)
}

// GetUser is Users.Get.
func (c *Client) GetUser(ctx context.Context, user string) (*github.User, *github.Response, error) {
	return c.c.Users.Get(ctx, user)
}

// CompareCommits is Repositories.CompareCommits: how head relates to base,
// and the files changed from their merge base to head.
func (c *Client) CompareCommits(ctx context.Context, owner, repo, base, head string, opts *github.ListOptions) (*github.CommitsComparison, *github.Response, error) {
	return c.c.Repositories.CompareCommits(ctx, owner, repo, base, head, opts)
}

// GetCommit is Repositories.GetCommit: the commit sha names, with its
// parents.
func (c *Client) GetCommit(ctx context.Context, owner, repo, sha string, opts *github.ListOptions) (*github.RepositoryCommit, *github.Response, error) {
	return c.c.Repositories.GetCommit(ctx, owner, repo, sha, opts)
}

// ListMatchingRefs lists the git references whose names start with opts.Ref.
func (c *Client) ListMatchingRefs(ctx context.Context, owner, repo string, opts *github.ReferenceListOptions) ([]*github.Reference, *github.Response, error) {
	return c.c.Git.ListMatchingRefs(ctx, owner, repo, opts)
}

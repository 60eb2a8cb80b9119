package githubtest

import (
	"encoding/base64"
	"net/http"
	"path"
	"sort"
	"strings"

	"github.com/google/go-github/v60/github"
)

func (s *Server) repoRoutes(h routeFunc) {
	h("GET", "/repos/{owner}/{repo}", authRepo, s.getRepo)
	h("GET", "/repos/{owner}/{repo}/collaborators", authRepo, s.listCollaborators)
	h("GET", "/repos/{owner}/{repo}/collaborators/{user}", authRepo, s.isCollaborator)
	h("GET", "/repos/{owner}/{repo}/collaborators/{user}/permission", authRepo, s.getPermission)
	h("GET", "/repos/{owner}/{repo}/contents", authRepo, s.getContents)
	h("GET", "/repos/{owner}/{repo}/contents/{path:.*}", authRepo, s.getContents)
	h("GET", "/repos/{owner}/{repo}/git/matching-refs/{ref:.*}", authRepo, s.listMatchingRefs)
	h("GET", "/repos/{owner}/{repo}/compare/{basehead:.*}", authRepo, s.compareCommits)
	h("GET", "/orgs/{org}/teams/{slug}", authOrg, s.getTeam)
	h("GET", "/orgs/{org}/teams/{slug}/members", authOrg, s.listTeamMembers)
	h("GET", "/orgs/{org}/teams/{slug}/memberships/{user}", authOrg, s.getTeamMembership)
}

func (s *Server) getRepo(c *apiCall) {
	repo := s.ghRepo(c.repo)
	open := 0
	for _, is := range c.repo.issues {
		if is.state == "open" {
			open++
		}
	}
	repo.OpenIssuesCount = ptr(open)
	repo.Permissions = map[string]bool{"admin": false, "maintain": false, "push": false, "triage": false, "pull": true}
	c.json(http.StatusOK, repo)
}

// legacyPermission maps a role to the "permission" field of the
// collaborator-permission endpoint: GitHub reports maintain as "write" and
// triage as "read" there (the exact role is in "role_name").
func legacyPermission(role string) string {
	switch role {
	case "admin":
		return "admin"
	case "maintain", "write":
		return "write"
	case "triage", "read":
		return "read"
	}
	return "none"
}

func permissionFlags(role string) map[string]bool {
	rank := map[string]int{"none": 0, "read": 1, "triage": 2, "write": 3, "maintain": 4, "admin": 5}[role]
	return map[string]bool{
		"pull": rank >= 1, "triage": rank >= 2, "push": rank >= 3, "maintain": rank >= 4, "admin": rank >= 5,
	}
}

// collaboratorUser is a user with the "permissions" and "role_name" GitHub
// adds in collaborator listings.
type collaboratorUser struct {
	*github.User
	Permissions map[string]bool `json:"permissions"`
	RoleName    string          `json:"role_name"`
}

// getPermission answers 200 for every user: users without an explicit
// permission (see SetPermission) get "none" (the repository owner "admin").
func (s *Server) getPermission(c *apiCall) {
	login := c.vars["user"]
	role := c.repo.permission(login)
	c.json(http.StatusOK, map[string]any{
		"permission": legacyPermission(role),
		"role_name":  role,
		"user":       collaboratorUser{User: s.ghUser(login), Permissions: permissionFlags(role), RoleName: role},
	})
}

func (s *Server) collaborators(rp *repoState) []string {
	var out []string
	for _, login := range sortedKeys(rp.perms) {
		if rp.perms[login] != "none" {
			out = append(out, login)
		}
	}
	return out
}

func (s *Server) listCollaborators(c *apiCall) {
	var out []collaboratorUser
	for _, login := range s.collaborators(c.repo) {
		role := c.repo.permission(login)
		out = append(out, collaboratorUser{User: s.ghUser(s.displayLogin(login)), Permissions: permissionFlags(role), RoleName: role})
	}
	c.json(http.StatusOK, paginate(c, out))
}

// displayLogin returns the login as first spelled by a seeding call.
func (s *Server) displayLogin(lower string) string {
	if v, ok := s.loginSpelling[lower]; ok {
		return v
	}
	return lower
}

func (s *Server) isCollaborator(c *apiCall) {
	switch c.repo.permission(c.vars["user"]) {
	case "none":
		c.notFound()
	default:
		c.noContent()
	}
}

func (s *Server) team(org, slug string) *teamState {
	return s.teams[strings.ToLower(org+"/"+slug)]
}

func (s *Server) getTeam(c *apiCall) {
	t := s.team(c.vars["org"], c.vars["slug"])
	if t == nil {
		c.notFound()
		return
	}
	c.json(http.StatusOK, &github.Team{
		ID: ptr(t.id), NodeID: ptr(nodeID("T", t.id)), Name: ptr(t.slug), Slug: ptr(t.slug),
		Privacy: ptr("closed"), Permission: ptr("pull"), MembersCount: ptr(len(t.members)),
		URL:     ptr(s.apiURL("orgs/" + t.org + "/teams/" + t.slug)),
		HTMLURL: ptr(s.webURL("orgs/" + t.org + "/teams/" + t.slug)),
	})
}

func (s *Server) listTeamMembers(c *apiCall) {
	t := s.team(c.vars["org"], c.vars["slug"])
	if t == nil {
		c.notFound()
		return
	}
	c.json(http.StatusOK, paginate(c, s.ghUsers(t.members)))
}

func (s *Server) getTeamMembership(c *apiCall) {
	t := s.team(c.vars["org"], c.vars["slug"])
	if t == nil {
		c.notFound()
		return
	}
	for _, m := range t.members {
		if strings.EqualFold(m, c.vars["user"]) {
			c.json(http.StatusOK, map[string]any{
				"url":   s.apiURL("orgs/" + t.org + "/teams/" + t.slug + "/memberships/" + m),
				"role":  "member",
				"state": "active",
			})
			return
		}
	}
	c.notFound()
}

// getContents serves the default branch's files. Any known commit sha or
// branch resolves to the default branch's current files, over which a pull
// request's commit lays the files its branch wrote (Commit.Contents).
func (s *Server) getContents(c *apiCall) {
	rp := c.repo
	p := strings.Trim(c.vars["path"], "/")
	if ref := c.r.URL.Query().Get("ref"); ref != "" {
		sha, ok := s.resolveRef(rp, ref)
		if !ok {
			c.notFound() // GitHub: "No commit found for the ref ..."
			return
		}
		if cm := rp.commits[sha]; cm != nil {
			if content, ok := cm.files[p]; ok && p != "" {
				full := rp.fullName()
				sum := blobSHA(content)
				rc := &github.RepositoryContent{
					Type: ptr("file"), Name: ptr(path.Base(p)), Path: ptr(p), SHA: ptr(sum), Size: ptr(len(content)),
					URL:         ptr(s.apiURL("repos/" + full + "/contents/" + p + "?ref=" + sha)),
					HTMLURL:     ptr(s.webURL(full + "/blob/" + sha + "/" + p)),
					GitURL:      ptr(s.apiURL("repos/" + full + "/git/blobs/" + sum)),
					DownloadURL: ptr("https://raw.githubusercontent.com/" + full + "/" + sha + "/" + p),
				}
				rc.Encoding, rc.Content = fileContent(content)
				c.json(http.StatusOK, rc)
				return
			}
		}
	}
	full := rp.fullName()
	entry := func(p, typ string, size int, sha string) *github.RepositoryContent {
		rc := &github.RepositoryContent{
			Type: ptr(typ), Name: ptr(path.Base(p)), Path: ptr(p), SHA: ptr(sha), Size: ptr(size),
			URL:     ptr(s.apiURL("repos/" + full + "/contents/" + p + "?ref=" + rp.defaultBranch)),
			HTMLURL: ptr(s.webURL(full + "/blob/" + rp.defaultBranch + "/" + p)),
			GitURL:  ptr(s.apiURL("repos/" + full + "/git/blobs/" + sha)),
		}
		if typ == "file" {
			rc.DownloadURL = ptr("https://raw.githubusercontent.com/" + full + "/" + rp.defaultBranch + "/" + p)
		}
		return rc
	}
	if content, ok := rp.files[p]; ok && p != "" {
		rc := entry(p, "file", len(content), blobSHA(content))
		rc.Encoding, rc.Content = fileContent(content)
		c.json(http.StatusOK, rc)
		return
	}
	// A directory: list its direct children.
	prefix := ""
	if p != "" {
		prefix = p + "/"
	}
	seen := map[string]bool{}
	var list []*github.RepositoryContent
	for _, f := range sortedKeys(rp.files) {
		if !strings.HasPrefix(f, prefix) {
			continue
		}
		rest := strings.TrimPrefix(f, prefix)
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			dir := prefix + rest[:i]
			if !seen[dir] {
				seen[dir] = true
				list = append(list, entry(dir, "dir", 0, blobSHA("tree:"+dir)))
			}
			continue
		}
		list = append(list, entry(f, "file", len(rp.files[f]), blobSHA(rp.files[f])))
	}
	if len(list) == 0 && p != "" {
		c.notFound()
		return
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].GetPath() < list[j].GetPath() })
	if list == nil {
		list = []*github.RepositoryContent{}
	}
	c.json(http.StatusOK, list)
}

// maxContentBytes is the largest file the contents API serves the content
// of (1 MB); larger ones (up to 100 MB) come with encoding "none" and empty
// content, to be read as raw or as a blob.
const maxContentBytes = 1 << 20

// fileContent is a file's encoding and content as the contents API gives them.
func fileContent(content string) (encoding, text *string) {
	if len(content) > maxContentBytes {
		return ptr("none"), ptr("")
	}
	return ptr("base64"), ptr(wrapBase64(base64.StdEncoding.EncodeToString([]byte(content))))
}

// wrapBase64 breaks base64 text into lines of 60 characters, as GitHub does.
func wrapBase64(v string) string {
	var b strings.Builder
	for len(v) > 60 {
		b.WriteString(v[:60])
		b.WriteByte('\n')
		v = v[60:]
	}
	b.WriteString(v)
	b.WriteByte('\n')
	return b.String()
}

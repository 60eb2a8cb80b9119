// Package openapi holds the fake GitHub (internal/githubtest) and
// countersign's own requests to GitHub's official OpenAPI description, the
// npm package @octokit/openapi (and its webhooks, @octokit/openapi-webhooks).
//
// The descriptions are 13 MB and 5 MB: the generator in gen/ keeps only the
// operations the fake serves and the webhooks it sends, with every component
// they reference, in internal/githubtest/testdata/openapi/. The tests of this
// package check the fake's routes, the request bodies countersign sends, and
// the statuses and bodies the fake answers against that subset, offline.
package openapi

import (
	"regexp"
	"strings"
)

// Template is a path template of GitHub's description, e.g.
// "/repos/{owner}/{repo}/issues/{issue_number}".
type Template = string

// Aliases map a fake route pattern the description has no template for to
// the template GitHub serves it with.
var Aliases = map[string]Template{
	// GET /repos/{o}/{r}/contents lists the root directory: the description
	// writes it as contents/{path} with an empty path, which a template
	// cannot express.
	"/repos/{owner}/{repo}/contents": "/repos/{owner}/{repo}/contents/{path}",
}

// NotInSpec are the fake's routes ("METHOD pattern") that GitHub really
// serves but its REST description does not describe, with why.
var NotInSpec = map[string]string{
	"POST /graphql":     "the GraphQL API: described by GitHub's GraphQL schema, not the REST description",
	"POST /api/graphql": "the GraphQL API under GitHub Enterprise Server's /api/graphql",
	"POST /settings/apps/new": "a github.com web page of the App manifest flow " +
		"(the browser POSTs the manifest there), not the REST API",
	"POST /organizations/{org}/settings/apps/new": "the same web page for an organization's App",
	"GET /repos/{owner}/{repo}/statuses/{ref:.+}": "GitHub's older path of List commit statuses for a reference, still served " +
		"(a status's url and a pull request's statuses_url point there); the description has only commits/{ref}/statuses",
}

var varRE = regexp.MustCompile(`\{[^{}:]+(:[^{}]*)?\}`)

// Shape is a path pattern with every variable written "{}": gorilla/mux
// patterns ("{id:[0-9]+}") and the description's templates ("{check_run_id}")
// of the same route have the same shape.
func Shape(pattern string) string {
	return varRE.ReplaceAllString(pattern, "{}")
}

// TemplateFor is the description's template (among templates) for a fake
// route pattern: the alias, or the template of the same shape; ok false if
// none.
func TemplateFor(pattern string, templates []Template) (Template, bool) {
	if t, ok := Aliases[pattern]; ok {
		pattern = t
	}
	want := Shape(pattern)
	for _, t := range templates {
		if Shape(t) == want {
			return t, true
		}
	}
	return "", false
}

// HookOperation is the webhooks description's operation id for an event and
// action, e.g. "issue-comment/created", "push".
func HookOperation(event, action string) string {
	id := strings.ReplaceAll(event, "_", "-")
	if action != "" {
		id += "/" + strings.ReplaceAll(action, "_", "-")
	}
	return id
}

// HookEvents are the webhook events the fake sends (internal/githubtest's
// emit calls): the subset keeps every action of each.
var HookEvents = []string{
	"check_run", "check_suite", "issue_comment", "issue_dependencies", "issues", "label", "merge_group",
	"milestone", "projects_v2_item", "pull_request", "pull_request_review", "push", "status", "sub_issues",
}

package gh

import (
	"slices"
	"strings"

	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

// User is the account u as rules knows people: its id, and its login for display.
func User(u *github.User) rules.User { return rules.User{ID: u.GetID(), Login: u.GetLogin()} }

// Users are the accounts list as rules knows people.
func Users(list []*github.User) []rules.User {
	out := make([]rules.User, 0, len(list))
	for _, u := range list {
		out = append(out, User(u))
	}
	return out
}

// LabelNames are the names of labels.
func LabelNames(labels []*github.Label) []string {
	out := make([]string, 0, len(labels))
	for _, l := range labels {
		out = append(out, l.GetName())
	}
	return out
}

// OwnerOf is the owner of repo ("owner/name").
func OwnerOf(repo string) string { owner, _, _ := strings.Cut(repo, "/"); return owner }

// NameOf is the name of repo ("owner/name") without its owner.
func NameOf(repo string) string { _, name, _ := strings.Cut(repo, "/"); return name }

// containsFold reports whether list holds s, case-insensitively (as GitHub
// compares label names).
// HasLabel reports whether list holds label s, compared as GitHub compares label
// names (case-insensitively).
func HasLabel(list []string, s string) bool {
	return slices.ContainsFunc(list, func(l string) bool { return strings.EqualFold(l, s) })
}

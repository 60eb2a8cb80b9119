package countersign

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
)

// docPages are the documentation's Markdown pages: README.md, the project
// files beside it, and docs/*.md.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 {
		t.Fatal("no docs/*.md")
	}
	return append([]string{"README.md", "CONTRIBUTING.md", "SECURITY.md"}, pages...)
}

var markdown = goldmark.New(goldmark.WithExtensions(extension.GFM))

// mdLink is a link or image of a page, as written.
type mdLink struct {
	dest string
	line int
}

// parsePage returns a page's links and the anchors of its headings, as GitHub
// makes them.
func parsePage(src []byte) (links []mdLink, anchors map[string]bool) {
	doc := markdown.Parser().Parse(text.NewReader(src))
	anchors = map[string]bool{}
	seen := map[string]int{}
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading:
			slug := githubSlug(plainText(n, src))
			if k := seen[slug]; k > 0 {
				anchors[fmt.Sprintf("%s-%d", slug, k)] = true
			} else {
				anchors[slug] = true
			}
			seen[slug]++
		case *ast.Link:
			links = append(links, mdLink{string(n.Destination), lineOf(n, src)})
		case *ast.Image:
			links = append(links, mdLink{string(n.Destination), lineOf(n, src)})
		}
		return ast.WalkContinue, nil
	})
	return links, anchors
}

// plainText is the text a heading shows: its words and code spans, without
// the Markdown around them.
func plainText(n ast.Node, src []byte) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			b.Write(c.Segment.Value(src))
			if c.SoftLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(c.Value)
		default:
			b.WriteString(plainText(c, src))
		}
	}
	return b.String()
}

// githubSlug is the anchor GitHub gives a heading: lower case, letters,
// digits, spaces, hyphens and underscores kept, spaces made hyphens.
func githubSlug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// lineOf is the line of the first text under n, for messages.
func lineOf(n ast.Node, src []byte) int {
	for c := n; c != nil; c = c.FirstChild() {
		if t, ok := c.(*ast.Text); ok {
			return 1 + strings.Count(string(src[:t.Segment.Start]), "\n")
		}
	}
	if p := n.Parent(); p != nil && p.Type() == ast.TypeBlock && p.Lines().Len() > 0 {
		return 1 + strings.Count(string(src[:p.Lines().At(0).Start]), "\n")
	}
	return 0
}

func TestGitHubSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"Build and push your own image":          "build-and-push-your-own-image",
		"The gate: countersign/verification":     "the-gate-countersignverification",
		"countersign contract":                   "countersign-contract",
		"What the check says: the evidence":      "what-the-check-says-the-evidence",
		"GitHub API, shutdown, upgrade, backups": "github-api-shutdown-upgrade-backups",
		"Über_uns — 2 ways":                      "über_uns--2-ways",
	} {
		if got := githubSlug(heading); got != want {
			t.Errorf("githubSlug(%q) = %q, want %q", heading, got, want)
		}
	}
	_, anchors := parsePage([]byte("# A\n\n## A\n\n```\n# not a heading\n```\n\n### `code` *and* [link](x)\n"))
	for _, want := range []string{"a", "a-1", "code-and-link"} {
		if !anchors[want] {
			t.Errorf("anchors %v lack %q", anchors, want)
		}
	}
	if anchors["not-a-heading"] {
		t.Error("a line in a code block was taken for a heading")
	}
}

// resolve checks one relative link of page: it names a file of the
// repository (never outside it) and, with a #fragment, a heading of that page.
func resolve(t *testing.T, root, page, dest string, anchorsOf func(string) map[string]bool) error {
	t.Helper()
	u, err := url.Parse(dest)
	if err != nil {
		return fmt.Errorf("unparseable link %q: %v", dest, err)
	}
	if u.Scheme != "" || u.Host != "" {
		return nil // leaves for the web, not for another directory
	}
	target := page
	if u.Path != "" {
		if strings.HasPrefix(u.Path, "/") {
			// From the repository's root, as GitHub's web view renders it
			// (and only it: TestDocLinksRelative refuses such links).
			target = filepath.Join(root, filepath.FromSlash(u.Path))
		} else {
			target = filepath.Join(filepath.Dir(page), filepath.FromSlash(u.Path))
		}
	}
	abs, err := filepath.Abs(target)
	if err != nil {
		return err
	}
	if rel, err := filepath.Rel(root, abs); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("link %q leaves the repository", dest)
	}
	if _, err := os.Stat(target); err != nil {
		return fmt.Errorf("link %q: %s does not exist", dest, filepath.ToSlash(target))
	}
	if u.Fragment != "" {
		if !strings.HasSuffix(target, ".md") {
			return fmt.Errorf("link %q: an anchor into %s, which is not Markdown", dest, target)
		}
		if !anchorsOf(target)[u.Fragment] {
			return fmt.Errorf("link %q: %s has no heading #%s", dest, filepath.ToSlash(target), u.Fragment)
		}
	}
	return nil
}

// Every relative link of the documentation resolves to a file of the
// repository, and every #anchor to a heading of its page; none leaves the
// repository.
func TestDocLinksResolve(t *testing.T) {
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	cache := map[string]map[string]bool{}
	anchorsOf := func(page string) map[string]bool {
		page = filepath.Clean(page)
		if a, ok := cache[page]; ok {
			return a
		}
		src, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		_, a := parsePage(src)
		cache[page] = a
		return a
	}
	checked := 0
	for _, page := range docPages(t) {
		src, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		links, _ := parsePage(src)
		for _, l := range links {
			if err := resolve(t, root, page, l.dest, anchorsOf); err != nil {
				t.Errorf("%s:%d: %v", page, l.line, err)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no links checked")
	}
}

// docReference is a page of docs/ named in a comment, with an optional anchor.
var docReference = regexp.MustCompile(`docs/[a-z0-9-]+\.md(#[a-z0-9_-]+)?`)

// The comments of the manifests and the Dockerfile point the reader to pages
// and sections of docs/ that exist.
func TestCommentReferencesResolve(t *testing.T) {
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join("deploy", "kubernetes", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	refs := 0
	for _, f := range append(files, "Dockerfile", ".ci/run") {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			for _, ref := range docReference.FindAllString(line, -1) {
				refs++
				err := resolve(t, root, "README.md", ref, func(page string) map[string]bool {
					src, err := os.ReadFile(page)
					if err != nil {
						t.Fatal(err)
					}
					_, a := parsePage(src)
					return a
				})
				if err != nil {
					t.Errorf("%s:%d: %v", f, i+1, err)
				}
			}
			if strings.Contains(line, "README, ") || strings.Contains(line, "(README") {
				t.Errorf("%s:%d: points to a README section; point to a page of docs/ instead: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
	if refs == 0 {
		t.Fatal("the manifests point to no page of docs/")
	}
}

// What users read refers to nothing outside the repository: no path above
// it, no design notes or sections that only exist elsewhere.
func TestDocsStandAlone(t *testing.T) {
	files := docPages(t)
	for _, glob := range []string{"templates/*.tmpl", "internal/scenarios/*", "deploy/kubernetes/*.yaml", "rules/countersign.schema.json", "rules/contract_rules.yml", "app.yml", "Dockerfile"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	outside := regexp.MustCompile(`\.\./shared|DESIGN(\.md| §)|\b[Ss]eeds? 0\d\d\b`)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if m := outside.FindString(line); m != "" {
				t.Errorf("%s:%d: %q refers to something outside the repository", f, i+1, m)
			}
		}
	}
}

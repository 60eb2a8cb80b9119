package countersign

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A newcomer meets the demo on the README's first screen, a contents list
// naming every section, and each word of countersign's own explained before
// it is used.
func TestReadmeForNewcomers(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	lines := strings.Split(readme, "\n")
	lineOf := func(offset int) int { return 1 + strings.Count(readme[:offset], "\n") }

	// The first screen: "Try it" and its command within the first 25 lines.
	tryIt, demo := -1, -1
	for i, l := range lines {
		if l == "## Try it" && tryIt < 0 {
			tryIt = i + 1
		}
		if strings.HasPrefix(l, "go run ./cmd/countersign-demo") && demo < 0 {
			demo = i + 1
		}
	}
	if tryIt < 0 || tryIt > 25 || demo < 0 || demo > 25 {
		t.Errorf(`"## Try it" at line %d and the demo's command at line %d: want both on the first screen (line 25 or above)`, tryIt, demo)
	}

	// The contents list links every section, in order.
	_, anchors := parsePage(data)
	heading := regexp.MustCompile(`(?m)^## (.+)$`)
	contentsRE := regexp.MustCompile(`(?s)## Contents\n(.*?)\n## `)
	contents := contentsRE.FindStringSubmatch(readme)
	if contents == nil {
		t.Fatal(`README.md has no "## Contents"`)
	}
	span := contentsRE.FindStringIndex(readme)
	contentsAt, contentsEnd := span[0], span[1]
	last := -1
	for _, h := range heading.FindAllStringSubmatch(readme, -1) {
		if h[1] == "Contents" {
			continue
		}
		slug := githubSlug(h[1])
		if !anchors[slug] {
			t.Fatalf("no anchor %q for %q", slug, h[1])
		}
		at := strings.Index(contents[1], "](#"+slug+")")
		if at < 0 {
			t.Errorf("the contents list lacks %q (#%s)", h[1], slug)
			continue
		}
		if at < last {
			t.Errorf("the contents list has %q out of order", h[1])
		}
		last = at
	}

	// The words of countersign's own are explained (a "**word**:" entry
	// under "Words used here") before the README first uses them.
	glossary := strings.Index(readme, "\n## Words used here\n")
	if glossary < 0 {
		t.Fatal(`README.md has no "## Words used here"`)
	}
	for word, use := range map[string]string{
		"lead":        `\bleads?\b`,
		"contract":    `\bcontracts?\b`,
		"critic":      `\bcritics?\b`,
		"merge group": `\bmerge[ _]groups?\b`,
		"healing":     `\bheal(s|ed|ing)?\b`,
		"dead letter": `\bdead[ -]?letter(s|ed)?\b`,
		"builder":     `\bbuilders?\b`,
		"task card":   `\btask cards?\b`,
		"goal":        `\bgoals?\b`,
		"task":        `\btasks?\b`,
	} {
		if !strings.Contains(readme[glossary:], "\n- **"+word+"**: ") {
			t.Errorf("%q is not explained under \"Words used here\"", word)
		}
		for _, loc := range regexp.MustCompile(`(?i)`+use).FindAllStringIndex(readme[:glossary], -1) {
			if loc[0] >= contentsAt && loc[0] < contentsEnd {
				continue // the contents list names the glossary's words
			}
			t.Errorf("README.md:%d uses %q before \"Words used here\" explains it", lineOf(loc[0]), readme[loc[0]:loc[1]])
			break
		}
	}
}

// The README says exactly what CI runs: every command of .ci/run after the
// installation of redis-server, as written there.
func TestReadmeSaysWhatCIRuns(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	command := regexp.MustCompile(`(?m)^(\(cd deploy && go (vet|test) [^)]*\)|(?:[A-Z_]+=\S+ )*go (vet|test) .*|unformatted=\$\((gofmt -l .*)\))$`)
	found := 0
	for _, m := range command.FindAllStringSubmatch(string(ci), -1) {
		cmd := m[1]
		if m[4] != "" {
			cmd = m[4]
		}
		found++
		if !strings.Contains(string(readme), "\n"+cmd) {
			t.Errorf(".ci/run runs %q; README.md does not say so", cmd)
		}
	}
	if found < 5 {
		t.Errorf(".ci/run: found %d commands (gofmt, two vets, two test runs expected)", found)
	}
}

// Links within the repository are relative: one starting with "/" works only
// in GitHub's web view.
func TestDocLinksRelative(t *testing.T) {
	for _, page := range docPages(t) {
		src, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		links, _ := parsePage(src)
		for _, l := range links {
			if strings.HasPrefix(l.dest, "/") {
				t.Errorf("%s:%d: %q starts with /: make it relative to the page", page, l.line, l.dest)
			}
		}
	}
}

// withoutRace are the packages whose tests run without the race detector
// (the second `go test` of .ci/run), each with why: none holds concurrency of
// its own that the detector could watch, and the concurrent code they drive
// is app's, whose packages run under -race (the first `go test`).
var withoutRace = map[string]string{
	".":                             "checks of the documentation, the workflows and the Docker context: no goroutines",
	"./rules":                       "pure functions, table- and property-tested: no goroutines; app's tests call them concurrently, under -race",
	"./templates":                   "pure rendering: no goroutines",
	"./cmd/countersign":             "runs countersign as separate processes (serve, register, mcp): the race detector sees no goroutine of one process race another's; what they run in-process is app.Server and app/mcp, under -race in app's end-to-end tests and app/mcp's",
	"./internal/scenario":           "plays the scenario files through app.Server, the same in-process bot as app's end-to-end tests, which run under -race",
	"./internal/githubtest/openapi": "checks the scenarios' traffic against GitHub's description, through the same in-process bot",
}

// Every package with tests is in exactly one of .ci/run's two `go test`
// runs (a new package is tested), and the one without -race holds exactly
// the packages withoutRace gives a reason for.
func TestCIRunsEveryPackageOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("lists the packages with go list")
	}
	ci, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	list := func(args ...string) []string {
		t.Helper()
		out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
		if err != nil {
			t.Fatalf("go list %v: %v", args, err)
		}
		return strings.Fields(string(out))
	}
	runs := 0
	seen := map[string]string{} // import path → the run's flags
	var noRace []string
	for _, line := range regexp.MustCompile(`(?m)^go test (.*)$`).FindAllStringSubmatch(string(ci), -1) {
		runs++
		var flags, patterns []string
		for _, f := range strings.Fields(line[1]) {
			switch {
			case strings.HasPrefix(f, "-"):
				flags = append(flags, f)
			case strings.HasPrefix(f, "."): // a package pattern, relative as .ci/run writes them
				patterns = append(patterns, f)
			}
		}
		race := slices.Contains(flags, "-race")
		if !race {
			noRace = append(noRace, patterns...)
		}
		for _, p := range list(patterns...) {
			if prev, ok := seen[p]; ok {
				t.Errorf("%s is tested twice (%s, then %s)", p, prev, line[0])
			}
			seen[p] = line[0]
		}
	}
	if runs != 2 {
		t.Fatalf(".ci/run: %d lines starting `go test`, want 2 (with -race and without)", runs)
	}
	for _, p := range list("-f", "{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}", "./...") {
		if _, ok := seen[p]; !ok {
			t.Errorf("%s has tests that .ci/run does not run", p)
		}
	}
	for _, p := range noRace {
		if withoutRace[strings.TrimSuffix(p, "/")] == "" {
			t.Errorf(".ci/run tests %s without -race, and withoutRace says not why", p)
		}
	}
	for p := range withoutRace {
		if !slices.Contains(noRace, p) && !slices.Contains(noRace, p+"/") {
			t.Errorf("withoutRace names %s, which .ci/run does not test without -race", p)
		}
	}
}

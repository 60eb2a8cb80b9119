package rules

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
)

// contractKeys are the keys of c's criteria, in order.
func contractKeys(c Contract) []string {
	keys := make([]string, len(c.Criteria))
	for i, k := range c.Criteria {
		keys[i] = k.Key()
	}
	return keys
}

// defaultContracts are the contracts: settings of a repository without a
// config file, but with its CI's runs named (mappedConfig).
func defaultContracts() ContractConfig { return mappedConfig().Contracts }

// namedChecks maps each activity to a run of its own name (and unit-test to
// test): a repository whose CI names its jobs after what they check.
func namedChecks() map[string][]string {
	return map[string][]string{"unit-test": {"test"}, "typecheck": {"typecheck"}, "lint": {"lint"}, "e2e": {"e2e"}}
}

// mappedConfig is the default configuration with contracts.checks set to
// namedChecks: most tests here are about criteria mapped to named runs; those
// about the whole CI (contracts.checks unset) use DefaultConfig.
func mappedConfig() Config {
	c := DefaultConfig()
	c.Contracts.Checks = namedChecks()
	return c
}

func TestClassify(t *testing.T) {
	custom := defaultContracts()
	custom.Advisory = []string{"spike", "look into"}
	tests := []struct {
		name        string
		cfg         *ContractConfig // nil: the defaults
		title, body string
		want        ContractType
		why         string
	}{
		// The examples of the contract rules' design.
		{"dark mode toggle", nil, "Add dark mode toggle to settings page", "", Verifiable, "no advisory or skip words"},
		{"investigate slow API", nil, "Investigate slow API", "", Advisory, `"investigate" in the title`},
		{"investigate why", nil, "Investigate why checkout API is slow", "", Advisory, `"investigate" in the title`},
		{"update README", nil, "Update README", "", Skip, `"readme" in the title`},
		{"update installation docs", nil, "Update installation docs", "", Skip, `"docs" in the title`},
		{"refactor auth module", nil, "Refactor auth module", "", Verifiable, "no advisory or skip words"},
		{"design onboarding", nil, "Design new onboarding flow", "", Advisory, `"design" in the title`},
		{"add comments", nil, "Add comments to the parser", "", Skip, `"comment" in the title`},
		{"every advisory word", nil, "Research, explore, discuss, audit, analyze", "", Advisory, `"research" in the title`},
		// Whole words only.
		{"designer is not design", nil, "Fix the designer's color palette", "", Verifiable, "no advisory or skip words"},
		{"redesign is not design", nil, "Redesign the navbar", "", Verifiable, "no advisory or skip words"},
		{"reviewers is not review", nil, "Add reviewers to CODEOWNERS", "", Verifiable, "no advisory or skip words"},
		{"planner is not plan", nil, "Fix the planner's cache", "", Verifiable, "no advisory or skip words"},
		{"review_count is one word", nil, "Rename review_count", "", Verifiable, "no advisory or skip words"},
		{"README.md is readme", nil, "Fix links in README.md", "", Skip, `"readme" in the title`},
		{"a word in a path is not", nil, "Refactor src/plan/builder.go", "", Verifiable, "no advisory or skip words"},
		{"a directory in a path is not", nil, "Speed up the parser", "Change docs/guide.md and /review/x", Verifiable, "no advisory or skip words"},
		{"a source file's name is not", nil, "Fix a nil pointer in comment.go", "", Verifiable, "no advisory or skip words"},
		{"a documentation file's name is", nil, "Write design.md", "", Advisory, `"design" in the title`},
		{"a sentence's end is a boundary", nil, "Fix it. Then review.", "", Advisory, `"review" in the title`},
		{"a hyphen is a boundary", nil, "Set up auto-review", "", Advisory, `"review" in the title`},
		{"any case", nil, "INVESTIGATE THE CRASH", "", Advisory, `"investigate" in the title`},
		// Inflections.
		{"plans", nil, "Plans for the next release", "", Advisory, `"plan" in the title`},
		{"planned", nil, "Planned maintenance window", "", Advisory, `"plan" in the title`},
		{"planning", nil, "Planning the migration", "", Advisory, `"plan" in the title`},
		{"investigating", nil, "Investigating a flaky test", "", Advisory, `"investigate" in the title`},
		{"analyzed", nil, "Analyzed results", "", Advisory, `"analyze" in the title`},
		{"reviewed", nil, "Reviewed queue", "", Advisory, `"review" in the title`},
		{"typos", nil, "Fix typos in the help", "", Skip, `"typo" in the title`},
		{"documented", nil, "Documented flags", "", Skip, `"document" in the title`},
		{"documentation is listed", nil, "Documentation for the API", "", Skip, `"documentation" in the title`},
		// Skip first, title first.
		{"skip before advisory", nil, "Review the docs", "", Skip, `"docs" in the title`},
		{"title before body", nil, "Investigate the crash", "Then update the docs.", Advisory, `"investigate" in the title`},
		{"body when the title says nothing", nil, "Slow checkout", "Please investigate why.", Advisory, `"investigate" in the body`},
		{"skip in the body", nil, "Install guide", "Update the readme.", Skip, `"readme" in the body`},
		// What the body does not say.
		{"fenced code", nil, "Add a button", "Steps:\n```\ninvestigate()\n```\ndone", Verifiable, "no advisory or skip words"},
		{"tilde fence", nil, "Add a button", "~~~\nreview\n~~~", Verifiable, "no advisory or skip words"},
		{"HTML comment", nil, "Add a button", "<!-- Describe the design here -->\nA button.", Verifiable, "no advisory or skip words"},
		{"multi-line HTML comment", nil, "Add a button", "<!--\nPlease review the docs\n-->\nA button.", Verifiable, "no advisory or skip words"},
		{"block quote", nil, "Add a button", "> we should research this\n\nA button.", Verifiable, "no advisory or skip words"},
		// Configured words and phrases.
		{"configured word", &custom, "Spike: queue options", "", Advisory, `"spike" in the title`},
		{"default words replaced", &custom, "Investigate the crash", "", Verifiable, "no advisory or skip words"},
		{"phrase with any spacing", &custom, "Look   into flaky tests", "", Advisory, `"look into" in the title`},
		{"phrase across a line break", &custom, "Flaky tests", "we should look\ninto them", Advisory, `"look into" in the body`},
		{"not across a blank line", &custom, "Flaky tests", "we should look\n\ninto them", Verifiable, "no advisory or skip words"},
		{"phrases are not inflected", &custom, "Looks into it", "", Verifiable, "no advisory or skip words"},
		{"no words at all", &ContractConfig{}, "Investigate the README", "", Verifiable, "no advisory or skip words"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := defaultContracts()
			if tc.cfg != nil {
				cfg = *tc.cfg
			}
			typ, why := Classify(cfg, tc.title, tc.body)
			if typ != tc.want || why != tc.why {
				t.Errorf("Classify(%q, %q) = %s, %q; want %s, %q", tc.title, tc.body, typ, why, tc.want, tc.why)
			}
		})
	}
}

func TestGenerateContract(t *testing.T) {
	at := time.Date(2026, 2, 28, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		in   ContractInput
		typ  ContractType
		from string
		keys []string
	}{
		{"dark mode toggle", ContractInput{Title: "Add dark mode toggle to settings page",
			Changed: []string{"src/components/DarkModeToggle.tsx", "src/pages/settings.tsx"}},
			Verifiable, "auto", []string{"typecheck", "lint", "unit-test", "e2e:immediate", "critic:frontend-critic"}},
		{"investigate slow API", ContractInput{Title: "Investigate slow API", Changed: []string{"api/orders.go"}},
			Advisory, "auto", []string{}},
		{"update README", ContractInput{Title: "Update README", Changed: []string{"README.md", "main.go"}},
			Skip, "auto", []string{"typecheck", "lint"}},
		{"refactor auth module", ContractInput{Title: "Refactor auth module", Changed: []string{"internal/auth/session.go"}},
			Verifiable, "auto", []string{"typecheck", "lint", "unit-test", "critic:security-critic"}},
		{"design onboarding", ContractInput{Title: "Design new onboarding flow"}, Advisory, "auto", []string{}},
		{"no files", ContractInput{Title: "Speed up startup"}, Verifiable, "auto", []string{"typecheck", "lint"}},
		{"docs only", ContractInput{Title: "Fix the guide", Changed: []string{"docs/guide.md"}},
			Verifiable, "auto", []string{"typecheck", "lint"}},
		{"files named in the body", ContractInput{Title: "Add a users endpoint",
			Body: "Touch `api/users.go` and web/pages/users.tsx."},
			Verifiable, "auto", []string{"typecheck", "lint", "unit-test", "e2e:immediate", "e2e:deferred", "critic:frontend-critic"}},
		{"forced advisory", ContractInput{Title: "Add dark mode toggle", Changed: []string{"a.tsx"}, Type: Advisory},
			Advisory, "lead", []string{}},
		{"forced verifiable", ContractInput{Title: "Update README", Changed: []string{"main.go"}, Type: Verifiable},
			Verifiable, "lead", []string{"typecheck", "lint", "unit-test"}},
		{"forced skip", ContractInput{Title: "Add a parser", Changed: []string{"main.go"}, Type: Skip},
			Skip, "lead", []string{"typecheck", "lint"}},
		{"an unknown type is classified", ContractInput{Title: "Investigate", Type: "bogus"}, Advisory, "auto", []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.At = at
			c := GenerateContract(defaultContracts(), in)
			if c.Type != tc.typ || c.From != tc.from || !c.At.Equal(at) {
				t.Errorf("type %s from %s at %v; want %s from %s at %v", c.Type, c.From, c.At, tc.typ, tc.from, at)
			}
			if got := contractKeys(c); !slices.Equal(got, tc.keys) {
				t.Errorf("criteria %q, want %q", got, tc.keys)
			}
			if tc.from == "lead" && c.Why != "set by a lead with /contract" {
				t.Errorf("why %q", c.Why)
			}
			if c.Criteria == nil {
				t.Error("criteria are nil, not empty")
			}
		})
	}
}

func TestGenerateContractDescriptions(t *testing.T) {
	c := GenerateContract(defaultContracts(), ContractInput{
		Title:   "Add dark mode toggle to settings page",
		Body:    "Toggle in `src/components/DarkModeToggle.tsx`; API in api/theme.go.",
		Changed: []string{"src/components/DarkModeToggle.tsx", "src/pages/settings.tsx", "lib/a.go", "lib/b.go", "lib/c.go"},
	})
	want := []Criterion{
		{Activity: ActTypecheck, Description: "No type errors"},
		{Activity: ActLint, Description: "No lint errors"},
		{Activity: ActUnitTest, Description: "Unit tests pass (src/components/DarkModeToggle.tsx, api/theme.go, src/pages/settings.tsx and 3 more)",
			Files: []string{"src/components/DarkModeToggle.tsx", "api/theme.go", "src/pages/settings.tsx"}, MoreFiles: 3},
		{Activity: ActE2E, Timing: TimingImmediate, Description: "End-to-end tests pass now (src/pages/settings.tsx)",
			Files: []string{"src/pages/settings.tsx"}},
		{Activity: ActE2E, Timing: TimingDeferred, Description: "End-to-end tests, deferred to the goal's integration check (api/theme.go)",
			Files: []string{"api/theme.go"}},
		{Activity: ActCritic, Critic: "frontend-critic", Description: "frontend-critic approves (src/components/DarkModeToggle.tsx, src/pages/settings.tsx)",
			Files: []string{"src/components/DarkModeToggle.tsx", "src/pages/settings.tsx"}},
	}
	if !reflect.DeepEqual(c.Criteria, want) {
		t.Errorf("criteria:\n got  %+v\n want %+v", c.Criteria, want)
	}
	if w := []string{"src/components/DarkModeToggle.tsx", "api/theme.go"}; !slices.Equal(c.Expected, w) {
		t.Errorf("expected %q, want %q", c.Expected, w)
	}
}

func TestGenerateContractRepoRules(t *testing.T) {
	frontend := DefaultFileRules()[2]
	if !slices.Contains(frontend.Critics, "frontend-critic") {
		t.Fatalf("rule 3 is not the front-end rule: %+v", frontend)
	}
	reversed := slices.Clone(frontend.Files)
	slices.Reverse(reversed)
	tests := []struct {
		name    string
		rules   []FileRule
		noDefs  bool
		changed []string
		keys    []string
	}{
		{"a rule adds to the defaults",
			[]FileRule{{Files: []string{"**/*.md"}, Critics: []string{"docs-critic"}}}, false,
			[]string{"docs/guide.md", "main.go"}, []string{"typecheck", "lint", "unit-test", "critic:docs-critic"}},
		{"a rule with a default rule's files replaces it",
			[]FileRule{{Files: reversed, Critics: []string{"ui-critic"}}}, false,
			[]string{"web/App.tsx"}, []string{"typecheck", "lint", "unit-test", "critic:ui-critic"}},
		{"default_rules false: only the repository's rules",
			[]FileRule{{Files: []string{"src/**"}, E2E: TimingDeferred}}, true,
			[]string{"src/main.go", "web/App.tsx"}, []string{"typecheck", "lint", "e2e:deferred"}},
		{"both e2e timings are kept",
			[]FileRule{{Files: []string{"web/**"}, E2E: TimingImmediate}, {Files: []string{"web/api/**"}, E2E: TimingDeferred}}, true,
			[]string{"web/api/x.ts"}, []string{"typecheck", "lint", "e2e:immediate", "e2e:deferred"}},
		{"no rules at all", nil, true, []string{"main.go"}, []string{"typecheck", "lint"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := defaultContracts()
			cfg.Rules, cfg.DefaultRules = tc.rules, !tc.noDefs
			c := GenerateContract(cfg, ContractInput{Title: "Change things", Changed: tc.changed})
			if got := contractKeys(c); !slices.Equal(got, tc.keys) {
				t.Errorf("criteria %q, want %q", got, tc.keys)
			}
		})
	}
}

func TestGenerateContractDedup(t *testing.T) {
	var changed []string
	for i := range 6 {
		changed = append(changed, fmt.Sprintf("pkg/f%d.go", i))
	}
	c := GenerateContract(defaultContracts(), ContractInput{
		Title:   "Speed up the parser",
		Body:    "Mainly pkg/f0.go and ./pkg/f1.go.",
		Changed: append(changed, "pkg/f0.go"),
	})
	if got := contractKeys(c); !slices.Equal(got, []string{"typecheck", "lint", "unit-test"}) {
		t.Fatalf("criteria %q", got)
	}
	u := c.Criteria[2]
	if !slices.Equal(u.Files, []string{"pkg/f0.go", "pkg/f1.go", "pkg/f2.go"}) || u.MoreFiles != 3 {
		t.Errorf("files %q and %d more", u.Files, u.MoreFiles)
	}
	if want := "Unit tests pass (pkg/f0.go, pkg/f1.go, pkg/f2.go and 3 more)"; u.Description != want {
		t.Errorf("description %q, want %q", u.Description, want)
	}
}

// The default rules parse, are valid, and ask for what their comments say.
func TestDefaultFileRules(t *testing.T) {
	list, err := parseFileRules(defaultRulesYAML)
	if err != nil {
		t.Fatalf("rules/contract_rules.yml: %v", err)
	}
	if n := len(list); n < 8 || n > 15 {
		t.Errorf("%d default rules", n)
	}
	if !reflect.DeepEqual(list, DefaultFileRules()) {
		t.Error("DefaultFileRules differs from the file")
	}
	if !reflect.DeepEqual(defaultContracts().FileRules(), DefaultFileRules()) {
		t.Error("the default configuration's rules are not the default rules")
	}
	tests := []struct {
		path string
		keys []string // beyond typecheck and lint
	}{
		{"main.go", []string{"unit-test"}},
		{"rules/contract.go", []string{"unit-test"}},
		{"lib/parser.py", []string{"unit-test"}},
		{"README.md", nil},
		{"docs/guide.md", nil},
		{"templates/card.md.tmpl", nil},
		{"web/src/App.tsx", []string{"unit-test", "critic:frontend-critic"}},
		{"src/styles/main.scss", []string{"critic:frontend-critic"}},
		{"src/pages/settings.tsx", []string{"unit-test", "e2e:immediate", "critic:frontend-critic"}},
		{"app/settings/page.tsx", []string{"unit-test", "e2e:immediate", "critic:frontend-critic"}},
		{"app/process.go", []string{"unit-test"}},
		{"e2e/checkout.spec.ts", []string{"unit-test", "e2e:immediate"}},
		{"src/button.spec.ts", []string{"unit-test"}},
		{"api/users.go", []string{"unit-test", "e2e:deferred"}},
		{"proto/users.proto", []string{"e2e:deferred"}},
		{"internal/auth/token.go", []string{"unit-test", "critic:security-critic"}},
		{"src/oauth.ts", []string{"unit-test", "critic:security-critic"}},
		{"src/LoginForm.tsx", []string{"unit-test", "critic:frontend-critic", "critic:security-critic"}},
		{"src/author.go", []string{"unit-test"}},
		{"db/migrations/001_init.sql", []string{"unit-test", "critic:data-critic"}},
		{".github/workflows/ci.yml", []string{"critic:ci-critic"}},
		{"Dockerfile", []string{"critic:ci-critic"}},
		{"build/Dockerfile.dev", []string{"critic:ci-critic"}},
		{"deploy/k8s/app.yaml", []string{"critic:infra-critic"}},
		{"go.mod", []string{"unit-test"}},
		{"web/package.json", []string{"unit-test"}},
	}
	for _, tc := range tests {
		c := GenerateContract(defaultContracts(), ContractInput{Type: Verifiable, Changed: []string{tc.path}})
		if got := contractKeys(c)[2:]; !slices.Equal(got, tc.keys) {
			t.Errorf("%s: %q, want %q", tc.path, got, tc.keys)
		}
	}
}

// The compiled glob matchers agree with doublestar.Match.
func TestGlobMatcher(t *testing.T) {
	patterns := []string{
		"**/*.go", "**/*.{go,py}", "src/**", "**/pages/**", "**/app/**/{page,layout}.*", "*.md",
		"**/{a,b{c,d}}/*.x", "**/*[ch]", "**/x[{]y", "**/a\\{b", "**/*.{tsx,jsx}", "Makefile", "**/Dockerfile",
		"**/{Dockerfile,Containerfile}.*", "docs/*.{md,txt}", "{a,b}/{c,d}/{e,f}", "**/*{auth,Auth}.*", "a/**/b",
	}
	names := []string{
		"main.go", "a/b/main.go", "main.py", "src", "src/a", "pages/x.tsx", "src/pages/a/b.tsx", "app/page.tsx",
		"app/x/layout.js", "README.md", "docs/README.md", "z/bd/q.x", "z/a/q.x", "x.c", "x.h", "x{y", "a{b", "p/a{b",
		"App.tsx", "Makefile", "sub/Makefile", "Dockerfile", "x/Dockerfile", "Dockerfile.dev", "docs/a.txt",
		"a/d/f", "b/c/e", "oauth.go", "author.go", "a/b", "a/x/y/b", "",
		"src/a.go/", "/a.go", "/Dockerfile", "a/Dockerfile/", "pages", "a/pages", "a/pages/", "/x/pages", "xpages/y",
		"a//pages/b", "Makefile/", "./Makefile", ".go", "a/.go",
	}
	for _, p := range patterns {
		if !doublestar.ValidatePattern(p) {
			t.Fatalf("invalid pattern %q", p)
		}
		g := compileGlob(p)
		for _, n := range names {
			want, _ := doublestar.Match(p, n)
			if got := g.match(n); got != want {
				t.Errorf("match(%q, %q) = %v, want %v", p, n, got, want)
			}
		}
	}
	// And so does a rule set's index.
	var list []FileRule
	for _, p := range patterns {
		list = append(list, FileRule{Files: []string{p}, UnitTest: true})
	}
	rs := compileRuleSet(list)
	matched := make([]bool, len(list))
	for _, n := range names {
		rs.match(n, matched)
		for i, p := range patterns {
			if want, _ := doublestar.Match(p, n); matched[i] != want {
				t.Errorf("rule set: %q matches %q: %v, want %v", p, n, matched[i], want)
			}
		}
	}
	if alts := expandBraces("{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}{o,p}{q,r}", 256); alts != nil {
		t.Errorf("expanded past the limit: %d alternatives", len(alts))
	}
}

func TestExpectedFiles(t *testing.T) {
	var many []string
	for i := range 60 {
		many = append(many, fmt.Sprintf("f%d.go", i))
	}
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"paths and extensions", "Change src/a.go and b.tsx.", []string{"src/a.go", "b.tsx"}},
		{"inline code", "See `config.toml`, `schema.prisma` and `Makefile`; not schema.prisma", []string{"config.toml", "schema.prisma", "Makefile"}},
		{"inline code with several words", "Run `go test ./rules/`", []string{"rules/"}},
		{"double backticks", "``a `b` c.go``", []string{"c.go"}},
		{"unclosed backtick", "`x.go and y.go", []string{"x.go", "y.go"}},
		{"well-known names", "Update README, Dockerfile and go.mod", []string{"README", "Dockerfile", "go.mod"}},
		{"directories", "Everything in api/v1/ and web/pages", []string{"api/v1/", "web/pages"}},
		{"globs", "Expected files: src/components/*.tsx, src/pages/settings.*", []string{"src/components/*.tsx", "src/pages/settings.*"}},
		{"punctuation", `(see src/a.go), [b.go]; **c.go**, "d.go"! e.go? *f.go*`, []string{"src/a.go", "b.go", "c.go", "d.go", "e.go", "f.go"}},
		{"line references", "d.go:12, e.go:3:4 and f.go#L5-L9", []string{"d.go", "e.go", "f.go"}},
		{"markdown link", "[the handler](internal/handler.go)", []string{"internal/handler.go"}},
		{"leading ./", "./scripts/build.sh", []string{"scripts/build.sh"}},
		{"deduplicated", "a.go, a.go and ./a.go", []string{"a.go"}},
		{"URLs", "https://github.com/x/y/blob/main/a.go http://x.io/b.go www.example.com/c.html github.com/owner/repo", nil},
		{"e-mail addresses", "mail bob@example.com or bob@example.go", nil},
		{"versions", "Upgrade to 1.2.3, v2.0.1 and `1.2.3-rc.1`", nil},
		{"abbreviations", "e.g. this, i.e. that, and/or, etc. Node.js and Vue.js", nil},
		{"numbers and dates", "3.14 and 12/31/2025 and 1/2", nil},
		{"mentions, commands, references", "@acme/leads /verify owner/repo#12 #12", nil},
		{"plain words", "This is a sentence. Another one: done.", nil},
		{"HTML comment", "<!-- x.go -->y.go", []string{"y.go"}},
		{"fenced code", "```\nz.go\n```\nw.go", []string{"w.go"}},
		{"block quote", "> from a.go\nb.go", []string{"b.go"}},
		{"slash command path", "/api/users", []string{"/api/users"}},
		{"at most 50", strings.Join(many, " "), many[:50]},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ExpectedFiles(tc.body); !slices.Equal(got, tc.want) {
				t.Errorf("ExpectedFiles(%q) = %q, want %q", tc.body, got, tc.want)
			}
		})
	}
}

func TestFindContradiction(t *testing.T) {
	phrases := defaultContracts().Contradictions
	long := strings.Repeat("word ", 60) + "this requires manual testing " + strings.Repeat("more ", 60)
	tests := []struct {
		name         string
		text         string
		phrase, line string // phrase "": none
	}{
		{"none", "TASK_COMPLETE: all tests pass.", "", ""},
		{"said", "TASK_COMPLETE\n\n  This requires manual testing.  \n", "requires manual", "This requires manual testing."},
		{"any case and spacing", "It NEEDS \t HUMAN review", "needs human", "It NEEDS \t HUMAN review"},
		{"across a line break", "it could not\ncomplete the import", "could not complete", "it could not complete the import"},
		{"not across a blank line", "it could not\n\ncomplete", "", ""},
		{"the first said", "I could not complete the import; it requires manual steps", "could not complete", "I could not complete the import; it requires manual steps"},
		{"in fenced code", "```\nrequires manual\n```", "", ""},
		{"in a block quote", "> This needs human eyes\n\nDone.", "", ""},
		{"in an HTML comment", "<!-- cannot be automated -->Done.", "", ""},
		{"whole words", "needs humanity; manual interventions", "", ""},
		{"after a comment on its line", "Done <!-- x --> but needs human sign-off", "needs human", "Done  but needs human sign-off"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			phrase, line, ok := FindContradiction(tc.text, phrases)
			if ok != (tc.phrase != "") || phrase != tc.phrase || line != tc.line {
				t.Errorf("FindContradiction(%q) = %q, %q, %v; want %q, %q", tc.text, phrase, line, ok, tc.phrase, tc.line)
			}
		})
	}
	t.Run("long line", func(t *testing.T) {
		phrase, line, ok := FindContradiction(long, phrases)
		if !ok || phrase != "requires manual" || utf8.RuneCountInString(line) != maxContradictionLine ||
			!strings.Contains(line, "requires manual") || !strings.HasPrefix(line, "…") || !strings.HasSuffix(line, "…") {
			t.Errorf("got %q, %q (%d characters), %v", phrase, line, utf8.RuneCountInString(line), ok)
		}
	})
	t.Run("no phrases", func(t *testing.T) {
		if _, _, ok := FindContradiction("requires manual", nil); ok {
			t.Error("found one")
		}
	})
}

func TestContractCriteriaChanged(t *testing.T) {
	mk := func(typ ContractType, keys ...string) *Contract {
		c := &Contract{Type: typ}
		for _, k := range keys {
			act, sub, _ := strings.Cut(k, ":")
			k := Criterion{Activity: act}
			if act == ActCritic {
				k.Critic = sub
			} else {
				k.Timing = sub
			}
			c.Criteria = append(c.Criteria, k)
		}
		return c
	}
	same := mk(Verifiable, "typecheck", "lint", "unit-test")
	moreFiles := mk(Verifiable, "typecheck", "lint", "unit-test")
	moreFiles.Criteria[2].Files = []string{"a.go"}
	tests := []struct {
		name      string
		old, next *Contract
		want      string
	}{
		{"both nil", nil, nil, ""},
		{"the same", same, mk(Verifiable, "typecheck", "lint", "unit-test"), ""},
		{"other files, same keys", same, moreFiles, ""},
		{"added and removed", mk(Verifiable, "typecheck", "lint", "e2e:immediate"),
			mk(Verifiable, "typecheck", "lint", "unit-test", "critic:frontend-critic"),
			"+ unit-test, + critic:frontend-critic; − e2e:immediate"},
		{"timings differ", mk(Verifiable, "e2e:immediate"), mk(Verifiable, "e2e:deferred"), "+ e2e:deferred; − e2e:immediate"},
		{"type", mk(Verifiable), mk(Advisory), "type verifiable → advisory"},
		{"type and criteria", mk(Verifiable, "typecheck", "lint"), mk(Advisory), "type verifiable → advisory; − typecheck, − lint"},
		{"from none", nil, mk(Skip, "typecheck", "lint"), "type none → skip; + typecheck, + lint"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ContractCriteriaChanged(tc.old, tc.next); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// checkContract checks what every contract must be.
func checkContract(t *testing.T, c Contract) {
	t.Helper()
	if len(c.Expected) > maxExpected {
		t.Fatalf("%d expected files", len(c.Expected))
	}
	switch c.Type {
	case Verifiable, Skip, Advisory:
	default:
		t.Fatalf("type %q", c.Type)
	}
	if c.Type == Advisory && len(c.Criteria) > 0 {
		t.Fatalf("advisory with criteria %+v", c.Criteria)
	}
	if c.Type != Advisory && (len(c.Criteria) < 2 || c.Criteria[0].Key() != ActTypecheck || c.Criteria[1].Key() != ActLint) {
		t.Fatalf("%s without typecheck and lint first: %+v", c.Type, c.Criteria)
	}
	seen := map[string]bool{}
	for _, k := range c.Criteria {
		if seen[k.Key()] {
			t.Fatalf("criterion %s twice", k.Key())
		}
		seen[k.Key()] = true
		if len(k.Files) > maxCriterionFiles || k.MoreFiles < 0 || k.Description == "" {
			t.Fatalf("criterion %+v", k)
		}
	}
}

func FuzzClassify(f *testing.F) {
	f.Add("Investigate slow API", "")
	f.Add("Fix the designer's palette", "<!-- review -->\n```\nplan\n```\n> docs")
	f.Add("Planning", "look\ninto it")
	f.Add("ÜBERPRÜFEN \u212a", "README.md")
	f.Fuzz(func(t *testing.T, title, body string) {
		typ, why := Classify(defaultContracts(), title, body)
		if typ != Verifiable && typ != Advisory && typ != Skip || why == "" {
			t.Fatalf("Classify = %q, %q", typ, why)
		}
		if typ == Verifiable && why != "no advisory or skip words" {
			t.Fatalf("verifiable because %q", why)
		}
		if t2, w2 := Classify(defaultContracts(), title, body); t2 != typ || w2 != why {
			t.Fatal("not deterministic")
		}
		if _, line, ok := FindContradiction(body, defaultContracts().Contradictions); ok && utf8.RuneCountInString(line) > maxContradictionLine {
			t.Fatalf("line of %d characters", utf8.RuneCountInString(line))
		}
	})
}

func FuzzExpectedFiles(f *testing.F) {
	f.Add("Change src/a.go, `b.toml` and README (see https://x.io/a.go, bob@x.com, 1.2.3, e.g.)")
	f.Add("``a ` b``` c `d.go")
	f.Add("<!-- a.go --> **b.go** ./c.go:12 d.go#L1")
	f.Fuzz(func(t *testing.T, body string) {
		got := ExpectedFiles(body)
		if len(got) > maxExpected {
			t.Fatalf("%d paths", len(got))
		}
		seen := map[string]bool{}
		for _, p := range got {
			if p == "" || seen[p] || strings.ContainsAny(p, " \t\r\n`") || strings.HasPrefix(p, "./") {
				t.Fatalf("bad path %q in %q", p, got)
			}
			seen[p] = true
		}
	})
}

func FuzzGenerateContract(f *testing.F) {
	f.Add("Add dark mode toggle", "Touch `src/pages/a.tsx`", "src/components/A.tsx,api/x.go", "")
	f.Add("Update README", "", "README.md", "verifiable")
	f.Add("Investigate", "", "", "skip")
	f.Add("x", "y", "**/{a,b}/[c", "bogus")
	f.Fuzz(func(t *testing.T, title, body, changed, typ string) {
		c := GenerateContract(defaultContracts(), ContractInput{
			Title: title, Body: body, Changed: strings.Split(changed, ","), Type: ContractType(typ),
		})
		checkContract(t, c)
	})
}

// realisticBody is an issue body of a usual size, from an issue template.
var realisticBody = strings.Repeat(`## What

<!-- Describe what should change, and why. Link the design if there is one. -->
The settings page needs a toggle that switches the whole app between the light
and the dark theme. It should remember the choice (see src/lib/theme.ts) and
follow the system's preference until the user picks one.

## Where

- `+"`src/components/DarkModeToggle.tsx`"+`: the toggle itself
- src/pages/settings.tsx: where it goes
- api/preferences.go: store the choice

> Note from the last sprint: keep the old theme variables.

`+"```ts\nexport const theme = 'light'\n```\n", 3)

func BenchmarkGenerateContract(b *testing.B) {
	var changed []string
	dirs := []string{"src/components", "src/pages", "api", "internal/auth", "db/migrations", "docs", ".github/workflows", "lib"}
	exts := []string{"tsx", "tsx", "go", "go", "sql", "md", "yml", "py"}
	for i := range 300 {
		changed = append(changed, fmt.Sprintf("%s/file%d.%s", dirs[i%len(dirs)], i, exts[i%len(exts)]))
	}
	cfg := defaultContracts()
	in := ContractInput{Title: "Add dark mode toggle to settings page", Body: realisticBody, Changed: changed}
	b.ReportAllocs()
	for b.Loop() {
		GenerateContract(cfg, in)
	}
}

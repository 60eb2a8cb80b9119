package rules

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// yml joins lines into a file, so that a test's line numbers are easy to read.
func yml(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

// designExample is the example in docs/design.md, Configuration.
var designExample = yml(
	`leads: [alice, "@acme/leads"]`,
	`verifiers: []            # empty: anyone with write permission`,
	`agents: {}               # bot account -> its pilot, e.g. {"copilot[bot]": alice}`,
	`separation: auto         # auto | triple | minimum`,
	`tasks: {track: all, label: task, ignore_labels: [question], max_per_pr: 10}`,
	`escalation: {rejections: 2, failed_attempts: 3}`,
	`contracts:`,
	`  checks: {unit-test: [test], typecheck: [typecheck], lint: [lint], e2e: [e2e]}`,
	`  apps: {}               # check name -> the GitHub App slug that must create it, e.g. {test: github-actions}`,
	`  status_creators: []    # logins whose commit statuses count; empty: any non-builder`,
	`  contradictions: ["requires manual", "cannot be automated", "could not complete", "needs human", "manual intervention"]`,
	`goals: {integration_check: ""}`,
)

func TestDefaultConfigIsFresh(t *testing.T) {
	a := DefaultConfig()
	a.Tasks.IgnoreLabels[0] = "changed"
	a.Contracts.Contradictions[0] = "changed"
	a.Contracts.Advisory[0] = "changed"
	a.Contracts.Skip[0] = "changed"
	b := DefaultConfig()
	if b.Tasks.IgnoreLabels[0] != "question" || b.Contracts.Checks != nil || b.Contracts.Contradictions[0] != "requires manual" ||
		b.Contracts.Advisory[0] != "investigate" || b.Contracts.Skip[0] != "document" {
		t.Fatalf("DefaultConfig shares state between calls: %+v", b)
	}
}

func TestParseConfigDefaults(t *testing.T) {
	tests := []struct{ name, in string }{
		{"empty", ""},
		{"whitespace", "  \n\n   \n"},
		{"comments only", yml("# countersign", "  # nothing configured yet")},
		{"document marker and comments", yml("---", "# nothing")},
		{"trailing empty document", yml("# one", "---")},
		{"design example", designExample},
		{"empty mappings", yml("tasks: {}", "escalation: {}", "contracts: {}", "goals: {}")},
		{"null values keep the defaults", yml("leads:", "separation: ~", "tasks: null", "escalation: {rejections: null}")},
	}
	want := DefaultConfig()
	want.Leads = []string{"alice", "@acme/leads"}
	want.Contracts.Checks = namedChecks() // the example maps them
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfig([]byte(tc.in))
			if err != nil {
				t.Fatalf("ParseConfig: %v", err)
			}
			w := DefaultConfig()
			if tc.name == "design example" {
				w = want
			}
			if !reflect.DeepEqual(got, w) {
				t.Fatalf("got  %+v\nwant %+v", got, w)
			}
		})
	}
}

func TestParseConfigOverrides(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want func(c *Config) // applied to DefaultConfig()
	}{
		{"leads: logins and teams, @ stripped, duplicates removed",
			yml(`leads: [alice, "@acme/leads", "@bob", Alice, "ACME-ci[bot]", "@Acme/Leads"]`),
			func(c *Config) { c.Leads = []string{"alice", "@acme/leads", "bob", "ACME-ci[bot]"} }},
		{"the keys added with trusted sources",
			yml("tasks: {max_per_pr: 3}", "contracts:", "  apps: {test: github-actions, 'e2e (*)': circleci-checks}", "  status_creators: ['@jenkins', 'ci[bot]', Jenkins]"),
			func(c *Config) {
				c.Tasks.MaxPerPR = 3
				c.Contracts.Apps = map[string]string{"test": "github-actions", "e2e (*)": "circleci-checks"}
				c.Contracts.StatusCreators = []string{"jenkins", "ci[bot]"}
			}},
		{"verifiers as a block list",
			yml("verifiers:", "  - carol", "  - '@acme/qa'"),
			func(c *Config) { c.Verifiers = []string{"carol", "@acme/qa"} }},
		{"agents",
			yml("agents:", `  "copilot[bot]": alice`, "  claude-bot: '@bob'", "  Claude-Bot: Bob"),
			func(c *Config) { c.Agents = map[string]string{"copilot[bot]": "alice", "Claude-Bot": "Bob"} }},
		{"separation", "separation: triple\n",
			func(c *Config) { c.Separation = SeparationTriple }},
		// YAML allows a byte order mark at the start of the file, and editors
		// on Windows write one: the file is read as if it had none.
		{"a UTF-8 byte order mark", "\ufeffseparation: triple\ncontracts:\n  checks: {unit-test: [test]}\n",
			func(c *Config) {
				c.Separation = SeparationTriple
				c.Contracts.Checks = map[string][]string{"unit-test": {"test"}}
			}},
		{"Windows line ends", "separation: triple\r\nleads: [alice]\r\n",
			func(c *Config) { c.Separation, c.Leads = SeparationTriple, []string{"alice"} }},
		{"tasks.track alone keeps label and ignore_labels", "tasks: {track: labeled}\n",
			func(c *Config) { c.Tasks.Track = "labeled" }},
		{"tasks.label and empty ignore_labels", yml("tasks:", "  label: work", "  ignore_labels: []"),
			func(c *Config) { c.Tasks.Label = "work"; c.Tasks.IgnoreLabels = nil }},
		{"tasks.ignore_labels deduplicated", "tasks: {ignore_labels: [question, wontfix, Question]}\n",
			func(c *Config) { c.Tasks.IgnoreLabels = []string{"question", "wontfix"} }},
		{"escalation.rejections alone keeps failed_attempts", "escalation: {rejections: 3}\n",
			func(c *Config) { c.Escalation.Rejections = 3 }},
		{"escalation.failed_attempts alone keeps rejections", "escalation: {failed_attempts: 5}\n",
			func(c *Config) { c.Escalation.FailedAttempts = 5 }},
		{"contracts.checks replaces the whole map", yml("contracts:", "  checks:", "    unit-test: [go-test, go-test, race]"),
			func(c *Config) { c.Contracts.Checks = map[string][]string{"unit-test": {"go-test", "race"}} }},
		{"contracts.checks empty maps no activity (the verifier checks them)", "contracts: {checks: {}}\n",
			func(c *Config) { c.Contracts.Checks = map[string][]string{} }},
		{"contracts.checks null keeps it unset (the whole CI counts)", "contracts: {checks: null}\n",
			func(c *Config) {}},
		{"contracts.contradictions alone keeps checks", `contracts: {contradictions: ["TODO: manual"]}` + "\n",
			func(c *Config) { c.Contracts.Contradictions = []string{"TODO: manual"} }},
		{"contracts.advisory replaces the default words", `contracts: {advisory: [spike, "look  into", Spike, "LOOK into"]}` + "\n",
			func(c *Config) { c.Contracts.Advisory = []string{"spike", "look  into"} }},
		{"contracts.skip empty means none", "contracts: {skip: []}\n",
			func(c *Config) { c.Contracts.Skip = nil }},
		{"contracts.rules",
			yml("contracts:",
				"  rules:",
				"    - files: ['**/*.md', 'docs/**', '**/*.md']",
				"      critics: [docs-critic, docs-critic]",
				"    - files:",
				"        - 'web/**/*.{ts,tsx}'",
				"      unit-test: true",
				"      e2e: deferred",
				"      critics: []"),
			func(c *Config) {
				c.Contracts.Rules = []FileRule{
					{Files: []string{"**/*.md", "docs/**"}, Critics: []string{"docs-critic"}},
					{Files: []string{"web/**/*.{ts,tsx}"}, UnitTest: true, E2E: TimingDeferred},
				}
			}},
		{"contracts.default_rules", "contracts: {default_rules: false}\n",
			func(c *Config) { c.Contracts.DefaultRules = false }},
		{"contracts.critics",
			yml("contracts:", "  critics:", `    frontend-critic: ["@alice", "@acme/web", Alice]`, "    data-critic: []"),
			func(c *Config) {
				c.Contracts.Critics = map[string][]string{"frontend-critic": {"alice", "@acme/web"}, "data-critic": nil}
			}},
		{"contracts.apps and contracts.status_creators",
			yml("contracts:", "  apps: {test: github-actions, \"test (*)\": buildkite}", `  status_creators: ["@ci-bot", "jenkins[bot]", CI-Bot]`),
			func(c *Config) {
				c.Contracts.Apps = map[string]string{"test": "github-actions", "test (*)": "buildkite"}
				c.Contracts.StatusCreators = []string{"ci-bot", "jenkins[bot]"}
			}},
		{"goals.integration_check", "goals:\n  integration_check: e2e-nightly\n",
			func(c *Config) { c.Goals.IntegrationCheck = "e2e-nightly" }},
		{"anchors and aliases", yml("leads: &people [alice, bob]", "verifiers: *people"),
			func(c *Config) { c.Leads = []string{"alice", "bob"}; c.Verifiers = []string{"alice", "bob"} }},
		{"explicit document start", yml("---", "separation: minimum", "..."),
			func(c *Config) { c.Separation = SeparationMinimum }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfig([]byte(tc.in))
			if err != nil {
				t.Fatalf("ParseConfig: %v", err)
			}
			want := DefaultConfig()
			tc.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		line, col int // col 0: not checked
		msg       string
	}{
		// Structure.
		{"unknown top-level key", yml("leads: [alice]", "", "separaton: triple"), 3, 1, `unknown key "separaton"`},
		{"unknown nested key", yml("tasks:", "  track: all", "  labels: [x]"), 3, 3, `unknown key "labels"`},
		{"keys are case-sensitive", "Leads: [alice]\n", 1, 1, `unknown key "Leads"`},
		{"a number as a key", yml("leads: [alice]", "0: x"), 2, 1, `unknown key "0"`},
		{"a boolean as a key", "true: x\n", 1, 1, `unknown key "true"`},
		{"a number as a nested key", "tasks: {track: all, 10: x}\n", 1, 21, `unknown key "10"`},
		{"a number as a key in a rule", "contracts: {rules: [{files: [a], unit-test: true, 1: 2}]}\n", 1, 51, `unknown key "1"`},
		{"an unknown key merged in", "tasks: {<<: {labels: x}}\n", 1, 14, `unknown key "labels"`},
		{"an unknown key behind an alias", yml("agents: &x {0: a}", "goals: *x"), 1, 13, `unknown key "0"`},
		{"a list where a list of strings is expected", yml("leads:", "  - alice", "  - [bob]"), 3, 5, "expected a string, not a list"},
		{"a string where a list is expected", yml("# c", "leads: alice"), 2, 8, "expected a list, not a string"},
		{"a list where a string is expected", yml("separation: [auto]"), 1, 13, "expected a string, not a list"},
		{"a list where a mapping is expected", yml("tasks: [all]"), 1, 8, "expected a mapping, not a list"},
		{"syntax error", yml("separation: auto", "leads: [alice, bob"), 2, 8, "']' not found"},
		{"duplicate key", yml("tasks:", "  track: all", "  track: labeled"), 3, 3, `"track" already defined`},
		{"two documents", yml("leads: [alice]", "---", "leads: [bob]"), 2, 1, "only one YAML document"},
		{"top-level list", yml("- leads", "- alice"), 1, 1, "must be a mapping of settings"},
		{"top-level string", "countersign\n", 1, 1, "not a string"},
		{"top-level null", "~\n", 1, 1, "not null"},
		{"a YAML tag", yml("leads:", "  - !!str alice"), 2, 5, `YAML tags ("!!str") are not supported`},
		{"too large", strings.Repeat("#", 1<<20+1), 0, 0, "larger than"},
		{"too many tokens", "leads: [" + strings.Repeat("a, ", 6000) + "]\n", 0, 0, "too complex"},
		// Values.
		{"separation", yml("leads: []", "separation: strict"), 2, 13, `separation must be auto, triple or minimum, not "strict"`},
		{"tasks.track", yml("tasks:", "  track: sometimes"), 2, 10, `tasks.track must be all, milestoned or labeled, not "sometimes"`},
		{"labeled tracking without a label", yml("tasks:", "  track: labeled", `  label: " "`), 3, 10, "tasks.label must name a label"},
		{"tasks.ignore_labels empty entry", yml("tasks:", "  ignore_labels:", "    - question", `    - ""`), 4, 7, "tasks.ignore_labels: entries must not be empty"},
		{"escalation.rejections zero", yml("escalation:", "  rejections: 0"), 2, 15, "escalation.rejections must be at least 1, not 0"},
		{"escalation.rejections negative", "escalation: {rejections: -1}\n", 1, 26, "at least 1, not -1"},
		{"escalation.failed_attempts negative", yml("escalation:", "  failed_attempts: -2"), 2, 20, "escalation.failed_attempts must be at least 1"},
		{"escalation.rejections not whole", "escalation: {rejections: 1.5}\n", 1, 26, "whole number, not 1.5"},
		{"escalation.rejections a string", "escalation: {rejections: two}\n", 1, 26, `whole number, not "two"`},
		{"escalation.rejections a list", yml("escalation:", "  failed_attempts: [3]"), 2, 20, "whole number, not a list"},
		{"escalation.rejections too large", "escalation: {rejections: 99999999999999999999}\n", 1, 26, "whole number"},
		{"lead with a space", yml("leads:", "  - alice", "  - bob smith"), 3, 5, `leads: "bob smith" is not a GitHub login`},
		{"lead too long", "leads: [" + strings.Repeat("a", 40) + "]\n", 1, 9, "is not a GitHub login"},
		{"lead with a leading hyphen", "leads: [-alice]\n", 1, 9, "not a GitHub login"},
		{"lead with an empty team", yml("leads:", `  - "@acme/"`), 2, 5, `"@acme/" is not a GitHub login or an @org/team`},
		{"lead null", "leads: [alice, ~]\n", 1, 16, `"" is not a GitHub login`},
		{"verifier", yml("verifiers: [carol, dave@example.com]"), 1, 20, `verifiers: "dave@example.com"`},
		{"agent account", yml("agents:", "  alice: bob", "  not a login: carol"), 3, 3, `agents: "not a login" is not a GitHub login`},
		{"agent pilot is a bot", yml("agents:", `  "copilot[bot]": "helper[bot]"`), 2, 19, `pilot of "copilot[bot]" must be a person's GitHub login`},
		{"agent pilot is a team", yml("agents:", `  ci-bot: "@acme/leads"`), 2, 11, "must be a person's GitHub login"},
		{"agent listed twice", yml("agents:", "  ci-bot: alice", "  CI-Bot: bob"), 2, 3, `"ci-bot" is listed twice with different pilots`},
		{"bad app slug", yml("contracts:", "  apps:", "    test: GitHub Actions"), 3, 11, `contracts.apps.test: "GitHub Actions" is not a GitHub App's slug`},
		{"bad status creator", yml("contracts:", "  status_creators: [ci-bot, not a login]"), 2, 29, `contracts.status_creators: "not a login" is not a GitHub login`},
		{"status creators not a list", yml("contracts:", "  status_creators: ci-bot"), 2, 20, "expected a list"},
		{"empty contradiction", yml("contracts:", `  contradictions: ["needs human", ""]`), 2, 35, "contracts.contradictions: entries must not be empty"},
		{"empty check name", yml("contracts:", "  checks:", "    lint: [golangci, '']"), 3, 22, "contracts.checks.lint: entries must not be empty"},
		{"empty activity name", yml("contracts:", "  checks:", `    "": [test]`), 3, 5, `contracts.checks: "" is not an activity CI checks`},
		{"unknown activity (a typo)", "contracts: {checks: {unit-tests: [test]}}\n", 1, 22, `"unit-tests" is not an activity CI checks (unit-test, typecheck, lint, e2e); did you mean "unit-test"?`},
		{"unknown activity", yml("contracts:", "  checks:", "    lint: [lint]", "    security: [codeql]"), 4, 5, `"security" is not an activity CI checks`},
		{"critic is no checked activity", yml("contracts:", "  checks: {critic: [review]}"), 2, 12, `"critic" is not an activity`},
		{"tasks.max_per_pr zero", yml("tasks:", "  max_per_pr: 0"), 2, 15, "tasks.max_per_pr must be at least 1, not 0"},
		{"tasks.max_per_pr a string", "tasks: {max_per_pr: ten}\n", 1, 21, `tasks.max_per_pr must be a whole number, not "ten"`},
		{"contracts.apps bad slug", yml("contracts:", "  apps:", "    test: GitHub Actions"), 3, 11, `contracts.apps.test: "GitHub Actions" is not a GitHub App's slug`},
		{"contracts.apps empty check name", yml("contracts:", "  apps: {'': github-actions}"), 2, 10, "contracts.apps: a check name is empty"},
		{"contracts.apps not a mapping", yml("contracts:", "  apps: [github-actions]"), 2, 9, "expected a mapping, not a list"},
		{"contracts.status_creators a team", yml("contracts:", "  status_creators: [ci-bot, '@acme/ci']"), 2, 29, `contracts.status_creators: "@acme/ci" is not a GitHub login`},
		{"contracts.status_creators not a list", yml("contracts:", "  status_creators: ci-bot"), 2, 20, "expected a list, not a string"},
		{"empty advisory word", yml("contracts:", "  advisory:", "    - spike", "    - ' '"), 4, 7, "contracts.advisory: entries must not be empty"},
		{"empty skip word", "contracts: {skip: ['']}\n", 1, 20, "contracts.skip: entries must not be empty"},
		{"rules not a list", yml("contracts:", "  rules: {files: [a]}"), 2, 10, "expected a list, not a mapping"},
		{"rule without files", yml("contracts:", "  rules:", "    - files: [a]", "      unit-test: true", "    - unit-test: true"), 5, 16, "contracts.rules: rule 2: files must list at least one pattern"},
		{"rule with empty files", yml("contracts:", "  rules:", "    - files: []", "      unit-test: true"), 3, 14, "rule 1: files must list at least one pattern"},
		{"invalid glob", yml("contracts:", "  rules:", "    - files:", "        - 'src/**'", "        - 'src/[a'", "      unit-test: true"), 5, 11, `rule 1: files: "src/[a" is not a valid glob pattern`},
		{"unclosed brace", yml("contracts:", "  rules:", "    - {files: ['*.{go,py'], unit-test: true}"), 3, 16, "is not a valid glob pattern"},
		{"absolute glob", yml("contracts:", "  rules:", "    - {files: [/src/**], unit-test: true}"), 3, 16, "must be relative to the repository's root"},
		{"empty glob", yml("contracts:", "  rules:", "    - {files: [''], unit-test: true}"), 3, 16, `files: "" is empty`},
		{"bad e2e", yml("contracts:", "  rules:", "    - files: [a]", "      e2e: soon"), 4, 12, `rule 1: e2e must be immediate or deferred, not "soon"`},
		{"rule asks for nothing", yml("contracts:", "  rules:", "    - files: [a]", "      unit-test: true", "    - files: [b]", "      critics: []"), 5, 7, "rule 2: it asks for nothing"},
		{"bad critic in a rule", yml("contracts:", "  rules:", "    - files: [a]", "      critics: [front end]"), 4, 17, `critics: "front end" is not a critic's name`},
		{"unit-test not a boolean", yml("contracts:", "  rules:", "    - files: [a]", "      unit-test: yes"), 4, 18, "expected a boolean, not a string"},
		{"unknown key in a rule", yml("contracts:", "  rules:", "    - files: [a]", "      unit_test: true"), 4, 7, `unknown key "unit_test"`},
		{"default_rules not a boolean", yml("contracts:", "  default_rules: maybe"), 2, 18, "expected a boolean, not a string"},
		{"bad critic name", yml("contracts:", "  critics:", "    front end: [alice]"), 3, 5, `contracts.critics: "front end" is not a critic's name`},
		{"bad critic reviewer", yml("contracts:", "  critics:", "    ux-critic:", "      - alice", "      - bob smith"), 5, 9, `contracts.critics.ux-critic: "bob smith" is not a GitHub login`},
		{"critics not a mapping", yml("contracts:", "  critics: [ux-critic]"), 2, 12, "expected a mapping, not a list"},
		// Through an alias the value's own line is unknown: the alias's line is given.
		{"invalid value behind an alias", yml("goals: {integration_check: &x strict}", "separation: *x"), 2, 13, `not "strict"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig([]byte(tc.in))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("want a *ConfigError, got %v (config %+v)", err, c)
			}
			if ce.Line != tc.line || (tc.col != 0 && ce.Column != tc.col) {
				t.Errorf("at %d:%d, want %d:%d (%v)", ce.Line, ce.Column, tc.line, tc.col, err)
			}
			if !strings.Contains(ce.Msg, tc.msg) {
				t.Errorf("message %q does not contain %q", ce.Msg, tc.msg)
			}
			if strings.ContainsAny(ce.Msg, "\r\n") {
				t.Errorf("message is not one line: %q", ce.Msg)
			}
		})
	}
}

func TestConfigErrorString(t *testing.T) {
	tests := []struct {
		err  ConfigError
		want string
	}{
		{ConfigError{Line: 3, Column: 7, Msg: "bad"}, ".github/countersign.yml:3:7: bad"},
		{ConfigError{Line: 3, Msg: "bad"}, ".github/countersign.yml:3: bad"},
		{ConfigError{Msg: "bad"}, ".github/countersign.yml: bad"},
	}
	for _, tc := range tests {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

func TestConfigLookups(t *testing.T) {
	c, err := ParseConfig([]byte(yml(`leads: [alice, "@acme/leads"]`, `agents: {"Copilot[bot]": alice}`)))
	if err != nil {
		t.Fatal(err)
	}
	if !SameLogin("Alice", "alice") || SameLogin("alice", "alicia") {
		t.Error("SameLogin")
	}
	if org, slug, ok := c.IsTeam(c.Leads[1]); !ok || org != "acme" || slug != "leads" {
		t.Errorf("IsTeam(%q) = %q, %q, %v", c.Leads[1], org, slug, ok)
	}
	for _, e := range []string{"alice", "@alice", "@acme/", "acme/leads"} {
		if _, _, ok := c.IsTeam(e); ok {
			t.Errorf("IsTeam(%q) is true", e)
		}
	}
	if p, ok := c.Pilot("copilot[BOT]"); !ok || p != "alice" {
		t.Errorf("Pilot = %q, %v", p, ok)
	}
	if _, ok := c.Pilot("alice"); ok {
		t.Error("alice has a pilot")
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(designExample))
	f.Add([]byte(""))
	f.Add([]byte(yml("leads:", "  - '@bob'", "agents:", `  "copilot[bot]": alice`, "tasks: {track: labeled, label: x}")))
	f.Add([]byte(yml("escalation: {rejections: 0, failed_attempts: -1}", "separation: x")))
	f.Add([]byte(yml("a: &x [1]", "---", "b: *x", "<<: {c: d}")))
	f.Add([]byte("contracts: {checks: {a: [b, b]}, contradictions: [c]}\n"))
	f.Add([]byte(yml("contracts:", "  advisory: [a, A]", "  rules:", "    - {files: ['**/*.{a,b}', x], unit-test: true, critics: [c, c]}",
		"  default_rules: false", "  critics: {c: ['@d', '@o/t'], e: []}")))
	f.Add([]byte("leads: !!str x\ntasks: !!map {track: !!str all}\n"))
	f.Add([]byte("tasks: &t {track: all}\ngoals: {<<: *t}\nleads: [? a]\n"))
	f.Add([]byte("tasks: {max_per_pr: 3}\ncontracts: {apps: {test: github-actions}, status_creators: ['@ci[bot]', ci]}\n0: x\n"))
	f.Add([]byte("leads: alice\nseparaton: triple\ncontracts: {chekcs: {}, checks: {lint: x}}\nescalation: {rejections: 99999999}\n"))
	f.Add([]byte("contracts: {rules: [{file: [a]}, {files: [], e2e: soon, critics: [a b]}]}\ntasks: {max_per_pr: 101, trak: x}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error is %T, not *ConfigError: %v", err, err)
			}
			all := Problems(err)
			if len(all) == 0 || all[0] != ce {
				t.Fatalf("Problems = %v, want the first to be %v", all, ce)
			}
			for i, p := range all {
				if p.Line < 0 || p.Column < 0 || p.Msg == "" || strings.ContainsAny(p.Msg, "\r\n") {
					t.Fatalf("bad error %#v", p)
				}
				if i > 0 && (p.Line < all[i-1].Line || p.Line == all[i-1].Line && p.Column < all[i-1].Column) {
					t.Fatalf("mistakes out of the file's order: %v", err)
				}
			}
			return
		}
		again := c
		if err := again.normalize(locator{}); err != nil {
			t.Fatalf("parsed config does not validate: %v\n%+v", err, c)
		}
		if !reflect.DeepEqual(again, c) {
			t.Fatalf("normalizing again changed the config:\n got  %+v\n want %+v", again, c)
		}
	})
}

// TestParseConfigEveryMistake: one run reports every mistake of a file, in
// the file's order, each with its key path and position; a mistake that only
// follows from another (a rule whose misspelt key left it asking for
// nothing) is not reported twice.
func TestParseConfigEveryMistake(t *testing.T) {
	type mistake struct {
		line, col int
		path, msg string
	}
	tests := []struct {
		name string
		in   string
		want []mistake
	}{
		{"the issue's list", yml(
			"leads: alice",
			"separaton: triple",
			"contracts:",
			"  chekcs: {unit-test: [test]}",
			"escalation: {rejections: 99999999}"),
			[]mistake{
				{1, 8, "leads", "leads: expected a list, not a string"},
				{2, 1, "separaton", `unknown key "separaton"; did you mean "separation"?`},
				{4, 3, "contracts.chekcs", `contracts.chekcs: unknown key "chekcs"; did you mean "checks"?`},
				{5, 26, "escalation.rejections", "escalation.rejections must be at most 100, not 99999999"},
			}},
		{"several in one list", yml("leads: [alice, bob smith, '@acme/', carol]"),
			[]mistake{
				{1, 16, "leads[2]", `leads: "bob smith" is not a GitHub login or an @org/team`},
				{1, 27, "leads[3]", `leads: "@acme/" is not a GitHub login or an @org/team`},
			}},
		{"values and shapes together", yml(
			"separation: strict",
			"tasks: {track: sometimes, max_per_pr: 0}",
			"verifiers: {bob: yes}"),
			[]mistake{
				{1, 13, "separation", `separation must be auto, triple or minimum, not "strict"`},
				{2, 16, "tasks.track", `tasks.track must be all, milestoned or labeled, not "sometimes"`},
				{2, 39, "tasks.max_per_pr", "tasks.max_per_pr must be at least 1, not 0"},
				{3, 12, "verifiers", "verifiers: expected a list, not a mapping"},
			}},
		{"a misspelt key in a rule is reported once", yml(
			"contracts:",
			"  rules:",
			"    - files: [a]",
			"      unit_test: true",
			"    - files: []",
			"      e2e: soon"),
			[]mistake{
				{4, 7, "contracts.rules[1].unit_test", `contracts.rules[1].unit_test: unknown key "unit_test"; did you mean "unit-test"?`},
				{5, 14, "contracts.rules[2].files", "contracts.rules: rule 2: files must list at least one pattern"},
			}},
		// The values of a section whose shape is wrong are checked once it is
		// right: here the misspelt activity shows up in the next run.
		{"nested shapes", yml(
			"contracts:",
			"  checks: {lint: golangci, unit-tests: [test]}",
			"  apps: {test: [github-actions]}",
			"  default_rules: maybe"),
			[]mistake{
				{2, 18, "contracts.checks.lint", "contracts.checks.lint: expected a list, not a string"},
				{3, 16, "contracts.apps.test", "contracts.apps.test: expected a string, not a list"},
				{4, 18, "contracts.default_rules", "contracts.default_rules: expected a boolean, not a string"},
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.in))
			got := Problems(err)
			if len(got) != len(tc.want) {
				t.Fatalf("%d mistakes, want %d:\n%v", len(got), len(tc.want), err)
			}
			for i, w := range tc.want {
				g := got[i]
				if g.Line != w.line || g.Column != w.col || g.Path != w.path || !strings.Contains(g.Msg, w.msg) {
					t.Errorf("mistake %d: %d:%d %q %q\nwant        %d:%d %q %q", i+1, g.Line, g.Column, g.Path, g.Msg, w.line, w.col, w.path, w.msg)
				}
			}
			var first *ConfigError
			if !errors.As(err, &first) || first != got[0] {
				t.Errorf("errors.As finds %v, want the first mistake %v", first, got[0])
			}
		})
	}
}

// TestParseConfigNearMisses: a misspelt key, anywhere, gets the key it
// likely meant; one too far from any gets the keys that are there.
func TestParseConfigNearMisses(t *testing.T) {
	tests := []struct{ in, want string }{
		{"separaton: auto\n", `unknown key "separaton"; did you mean "separation"?`},
		{"lead: [alice]\n", `did you mean "leads"?`},
		{"verifier: [bob]\n", `did you mean "verifiers"?`},
		{"agent: {}\n", `did you mean "agents"?`},
		{"task: {}\n", `did you mean "tasks"?`},
		{"escalations: {}\n", `did you mean "escalation"?`},
		{"contract: {}\n", `did you mean "contracts"?`},
		{"goal: {}\n", `did you mean "goals"?`},
		{"tasks: {trak: all}\n", `tasks.trak: unknown key "trak"; did you mean "track"?`},
		{"tasks: {lable: x}\n", `did you mean "label"?`},
		{"tasks: {ignore_label: [x]}\n", `did you mean "ignore_labels"?`},
		{"tasks: {max_per_prs: 3}\n", `did you mean "max_per_pr"?`},
		{"escalation: {rejection: 3}\n", `escalation.rejection: unknown key "rejection"; did you mean "rejections"?`},
		{"escalation: {failed_attempt: 3}\n", `did you mean "failed_attempts"?`},
		{"contracts: {app: {}}\n", `did you mean "apps"?`},
		{"contracts: {status_creator: []}\n", `did you mean "status_creators"?`},
		{"contracts: {contradiction: []}\n", `did you mean "contradictions"?`},
		{"contracts: {advisry: []}\n", `did you mean "advisory"?`},
		{"contracts: {skp: []}\n", `did you mean "skip"?`},
		{"contracts: {rule: []}\n", `did you mean "rules"?`},
		{"contracts: {default_rule: true}\n", `did you mean "default_rules"?`},
		{"contracts: {critic: {}}\n", `did you mean "critics"?`},
		{"contracts: {rules: [{file: [a], unit-test: true}]}\n", `contracts.rules[1].file: unknown key "file"; did you mean "files"?`},
		{"contracts: {rules: [{files: [a], e2: deferred}]}\n", `did you mean "e2e"?`},
		{"contracts: {rules: [{files: [a], critcs: [x]}]}\n", `did you mean "critics"?`},
		{"goals: {integration: x}\n", `goals.integration: unknown key "integration" (goals has integration_check)`},
		{"colour: red\n", `unknown key "colour" (the file has leads, verifiers, agents, separation, tasks, escalation, contracts, goals, gate, board)`},
		{"gate: {untraked: allow}\n", `gate.untraked: unknown key "untraked"; did you mean "untracked"?`},
		{"gate: {untracked: alow}\n", `gate.untracked must be require or allow, not "alow"; did you mean "allow"?`},
		{"separation: tripel\n", `not "tripel"; did you mean "triple"?`},
		{"tasks: {track: label}\n", `did you mean "labeled"?`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestParseConfigCountRanges: counts are bounded, at both ends, and the
// schema shows the same bounds.
func TestParseConfigCountRanges(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" valid
	}{
		{"tasks: {max_per_pr: 1}\n", ""},
		{"tasks: {max_per_pr: 100}\n", ""},
		{"tasks: {max_per_pr: 101}\n", "tasks.max_per_pr must be at most 100, not 101"},
		{"tasks: {max_per_pr: 0}\n", "tasks.max_per_pr must be at least 1, not 0"},
		{"escalation: {rejections: 100, failed_attempts: 1}\n", ""},
		{"escalation: {rejections: 101}\n", "escalation.rejections must be at most 100, not 101"},
		{"escalation: {rejections: 99999999}\n", "escalation.rejections must be at most 100, not 99999999"},
		{"escalation: {failed_attempts: 1000}\n", "escalation.failed_attempts must be at most 100, not 1000"},
		{"escalation: {failed_attempts: 0}\n", "escalation.failed_attempts must be at least 1, not 0"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.in))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("got %v, want it valid", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	schema := string(ConfigSchema())
	for path, r := range countRanges {
		if !strings.Contains(schema, fmt.Sprintf(`"maximum": %d`, r.max)) || !strings.Contains(schema, fmt.Sprintf(`"minimum": %d`, r.min)) {
			t.Errorf("the schema does not show %s's range %d..%d", path, r.min, r.max)
		}
	}
}

// A pilot that is no GitHub account (a typo) is a mistake at its line: the
// agent would have no pilot, and whoever drives it could verify its work.
func TestUnknownPilots(t *testing.T) {
	known := func(l string) bool { return strings.EqualFold(l, "alice") }
	for _, tc := range []struct {
		name, in string
		line     int // 0: no mistake
	}{
		{"a known pilot", yml("leads: [dave]", "agents:", `  "copilot[bot]": alice`), 0},
		{"a known pilot, other case and @", yml("agents: {claude-bot: '@Alice'}"), 0},
		{"an unknown pilot", yml("leads: [dave]", "agents:", `  "copilot[bot]": alcie`), 3},
		{"behind a byte order mark", "\ufeff" + yml("agents:", `  "copilot[bot]": alcie`), 2},
		{"no agents", yml("leads: [alcie]"), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			err = UnknownPilots([]byte(tc.in), cfg, known)
			var ce *ConfigError
			switch {
			case tc.line == 0 && err != nil:
				t.Fatalf("UnknownPilots = %v, want nil", err)
			case tc.line != 0 && (!errors.As(err, &ce) || ce.Line != tc.line || !strings.Contains(err.Error(), `"alcie"`)):
				t.Fatalf("UnknownPilots = %v, want a mistake at line %d naming \"alcie\"", err, tc.line)
			}
		})
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/rules"
)

// runContract runs `countersign contract args...` in this process, with
// stdin as its standard input, and returns its stdout, stderr and exit code.
func runContract(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	was := contractStdin
	contractStdin = strings.NewReader(stdin)
	defer func() { contractStdin = was }()
	var stdout, stderr bytes.Buffer
	code := run(append([]string{"contract"}, args...), &stdout, &stderr)
	return stdout.String(), stderr.String(), code
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestContractCommand(t *testing.T) {
	config := writeFile(t, "countersign.yml", strings.Join([]string{
		"contracts:",
		"  checks: {unit-test: [go-test, race], lint: []}",
		"  rules:",
		"    - files: ['**/*.md']",
		"      critics: [docs-critic]",
		"  critics:",
		"    docs-critic: ['@alice', '@acme/writers']",
		"goals: {integration_check: nightly-e2e}",
	}, "\n"))
	named := writeFile(t, "named.yml", "contracts:\n  checks: {unit-test: [test], typecheck: [typecheck], lint: [lint], e2e: [e2e]}\n")
	body := writeFile(t, "body.md", "Change `rules/contract.go` and docs/guide.md.\n<!-- not web/App.tsx -->\n")
	files := writeFile(t, "files.txt", "api/users.go\n\n  README.md  \n")
	tests := []struct {
		name  string
		stdin string
		args  []string
		want  []string // lines of the output, in order
	}{
		{"seed example", "", []string{"-title", "Add dark mode toggle to settings page",
			"-files", "src/components/DarkModeToggle.tsx, src/pages/settings.tsx"}, []string{
			"type: verifiable (no advisory or skip words)",
			"expected files: none named in the body",
			"criteria:",
			"- [ ] ci — The repository's CI passes on the head",
			"      checks: every check run and status on the head from a trusted source (contracts.checks unset)",
			"- [ ] critic:frontend-critic — frontend-critic approves (src/components/DarkModeToggle.tsx, src/pages/settings.tsx)",
			"      reviewers: any counted approval",
		}},
		{"seed example, the CI's runs named", "", []string{"-title", "Add dark mode toggle to settings page", "-config", named,
			"-files", "src/components/DarkModeToggle.tsx, src/pages/settings.tsx"}, []string{
			"type: verifiable (no advisory or skip words)",
			"expected files: none named in the body",
			"criteria:",
			"- [ ] typecheck — No type errors",
			"      checks: typecheck",
			"- [ ] lint — No lint errors",
			"      checks: lint",
			"- [ ] unit-test — Unit tests pass (src/components/DarkModeToggle.tsx, src/pages/settings.tsx)",
			"      checks: test",
			"- [ ] e2e:immediate — End-to-end tests pass now (src/pages/settings.tsx)",
			"      checks: e2e",
			"- [ ] critic:frontend-critic — frontend-critic approves (src/components/DarkModeToggle.tsx, src/pages/settings.tsx)",
			"      reviewers: any counted approval",
		}},
		{"advisory", "", []string{"-title", "Investigate slow API"}, []string{
			`type: advisory ("investigate" in the title)`,
			"expected files: none named in the body",
			"criteria: none: a lead reviews the work, and /verify is theirs",
		}},
		{"forced type", "", []string{"-title", "Investigate slow API", "-type", "skip"}, []string{
			"type: skip (set by a lead with /contract)",
		}},
		{"a config with a custom rule, files from files", "", []string{"-title", "Speed up the users API",
			"-config", config, "-body-file", body, "-files-from", files}, []string{
			"type: verifiable (no advisory or skip words)",
			"expected files: rules/contract.go, docs/guide.md",
			"- [ ] typecheck — No type errors",
			"      no check mapped: the verifier checks it",
			"- [ ] lint — No lint errors",
			"      no check mapped: the verifier checks it",
			"- [ ] unit-test — Unit tests pass (rules/contract.go, api/users.go)",
			"      checks: go-test, race",
			"- [ ] e2e:deferred — End-to-end tests, deferred to the goal's integration check (api/users.go)",
			"      checked with the goal: nightly-e2e on the default branch",
			"- [ ] critic:docs-critic — docs-critic approves (docs/guide.md, README.md)",
			"      reviewers: @alice, @acme/writers",
		}},
		{"body from stdin", "Update the `README.md`", []string{"-title", "Docs", "-body-file", "-"}, []string{
			`type: skip ("docs" in the title)`,
			"expected files: README.md",
		}},
		{"files from stdin", "a.go\nb.go\n", []string{"-title", "Parser", "-config", named, "-files-from", "-"}, []string{
			"- [ ] unit-test — Unit tests pass (a.go, b.go)",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runContract(t, tc.stdin, tc.args...)
			if code != 0 || errOut != "" {
				t.Fatalf("exit %d, stderr:\n%s", code, errOut)
			}
			lines := strings.Split(out, "\n")
			at := 0
			for _, w := range tc.want {
				i := slices.Index(lines[at:], w)
				if i < 0 {
					t.Fatalf("no line %q (in order) in:\n%s", w, out)
				}
				at += i + 1
			}
		})
	}
}

func TestContractCommandJSON(t *testing.T) {
	out, errOut, code := runContract(t, "", "-json", "-title", "Add dark mode toggle to settings page",
		"-body", "See src/pages/settings.tsx", "-files", "src/components/DarkModeToggle.tsx")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	var c rules.Contract
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	var keys []string
	for _, k := range c.Criteria {
		keys = append(keys, k.Key())
	}
	want := []string{"ci", "critic:frontend-critic"}
	if c.Type != rules.Verifiable || c.From != "auto" || c.At.IsZero() || !slices.Equal(keys, want) ||
		!slices.Equal(c.Expected, []string{"src/pages/settings.tsx"}) {
		t.Errorf("contract %+v, criteria %q", c, keys)
	}
}

func TestContractCommandErrors(t *testing.T) {
	bad := writeFile(t, "bad.yml", "contracts:\n  rules:\n    - files: [a]\n      e2e: soon\n")
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"bad config", []string{"-title", "x", "-config", bad}, 1, bad + `:4:12: contracts.rules: rule 1: e2e must be immediate or deferred, not "soon"`},
		{"missing config", []string{"-title", "x", "-config", filepath.Join(t.TempDir(), "nope.yml")}, 1, "-config: open"},
		{"missing body file", []string{"-title", "x", "-body-file", filepath.Join(t.TempDir(), "nope.md")}, 1, "-body-file: open"},
		{"bad type", []string{"-title", "x", "-type", "maybe"}, 2, `-type must be verifiable, advisory or skip, not "maybe"`},
		{"body twice", []string{"-title", "x", "-body", "x", "-body-file", "y"}, 2, "give -body or -body-file, not both"},
		{"stdin twice", []string{"-title", "x", "-body-file", "-", "-files-from", "-"}, 2, "cannot both read the standard input"},
		{"an argument", []string{"-title", "x", "extra"}, 2, `unexpected argument "extra"`},
		{"unknown flag", []string{"-titel", "x"}, 2, "flag provided but not defined: -titel"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runContract(t, "", tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.want) || out != "" {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit %d and %q", code, out, errOut, tc.code, tc.want)
			}
		})
	}
}

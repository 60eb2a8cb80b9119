package rules_test

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/scenario"
	"github.com/countersign/countersign/rules"
	"github.com/goccy/go-yaml"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

var update = flag.Bool("update", false, "rewrite rules/countersign.schema.json from rules.ConfigSchema")

// TestPublishedSchema: the schema published in the repository is the one the
// code generates (go test ./rules -run TestPublishedSchema -update rewrites it).
func TestPublishedSchema(t *testing.T) {
	want := rules.ConfigSchema()
	if *update {
		if err := os.WriteFile("countersign.schema.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("countersign.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("rules/countersign.schema.json is not what rules.ConfigSchema generates: go test ./rules -run TestPublishedSchema -update")
	}
}

// compileSchema compiles the generated schema with a JSON Schema validator
// that knows nothing of countersign.
func compileSchema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(rules.ConfigSchema()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(rules.SchemaID, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(rules.SchemaID)
	if err != nil {
		t.Fatalf("the schema does not compile: %v", err)
	}
	return s
}

// schemaErr validates a YAML file against the schema.
func schemaErr(t testing.TB, s *jsonschema.Schema, file string) error {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(file))
	if err != nil {
		t.Fatalf("not YAML: %v\n%s", err, file)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(inst)
}

// examples are every configuration file shown in README.md and docs/*.md, and
// in the scenarios of testdata.
func examples(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	pages, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range append([]string{"../README.md"}, pages...) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(b, -1) {
			if strings.HasPrefix(string(m[1]), "groups:\n") {
				continue // Prometheus alerting rules (docs/deploying.md), not a configuration
			}
			out[fmt.Sprintf("%s yaml block %d", strings.TrimPrefix(page, "../"), i+1)] = string(m[1])
		}
	}
	for _, page := range []string{"README.md", "docs/configuration.md"} {
		if !slices.ContainsFunc(slices.Collect(maps.Keys(out)), func(k string) bool { return strings.HasPrefix(k, page+" ") }) {
			t.Fatalf("no yaml block in %s", page)
		}
	}
	names, err := filepath.Glob("../internal/scenarios/*.scenario")
	if err != nil || len(names) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	n := 0
	for _, name := range names {
		sc, err := scenario.ParseFile(os.DirFS(filepath.Dir(name)), filepath.Base(name))
		if err != nil {
			t.Fatal(err)
		}
		if sc.Config != "" {
			out[name] = sc.Config
			n++
		}
	}
	if n == 0 {
		t.Fatal("no scenario has a config")
	}
	return out
}

// TestSchemaAgreesWithTheParser: the JSON Schema and ParseConfig give the
// same verdict on every example of the documentation and testdata, and on
// files written to break each rule the schema can express.
func TestSchemaAgreesWithTheParser(t *testing.T) {
	s := compileSchema(t)
	good := examples(t)
	for _, c := range []string{
		// A full configuration, every key at its documented default.
		`leads: [alice, "@acme/leads"]
verifiers: []
agents: {}
separation: auto
tasks: {track: all, label: task, ignore_labels: [question], max_per_pr: 10}
escalation: {rejections: 2, failed_attempts: 3}
contracts:
  checks: {unit-test: [test], typecheck: [typecheck], lint: [lint], e2e: [e2e]}
  apps: {}
  status_creators: []
  contradictions: ["requires manual", "cannot be automated", "could not complete", "needs human", "manual intervention"]
goals: {integration_check: ""}
`,
		"leads: [alice, '@bob', 'ci[bot]', '@acme/leads']\nagents: {'@copilot[bot]': '@alice'}\n",
		"separation: ~\ntasks: {track: labeled, label: task}\ncontracts: {checks: {lint: []}, critics: {ux: ~}, default_rules: null}\n",
		"contracts: {apps: {test: github-actions}, status_creators: [jenkins, '@ci[bot]']}\n",
		"contracts:\n  rules:\n    - {files: ['**/*.go', '.github/*'], unit-test: true}\n    - {files: [web/**], e2e: deferred, critics: [ux-critic]}\n",
	} {
		good["inline: "+strings.SplitN(c, "\n", 2)[0]] = c
	}
	for name, file := range good {
		if _, err := rules.ParseConfig([]byte(file)); err != nil {
			t.Errorf("%s: the parser refuses it: %v\n%s", name, err, file)
		}
		if err := schemaErr(t, s, file); err != nil {
			t.Errorf("%s: the schema refuses it: %v\n%s", name, err, file)
		}
	}
	for _, file := range []string{
		"separaton: triple\n",
		"contracts: {checks: {unit-tests: [test]}}\n",
		"contracts: {checks: {critic: [review]}}\n",
		"separation: strict\n",
		"tasks: {track: sometimes}\n",
		"tasks: {track: labeled, label: ' '}\n",
		"tasks: {max_per_pr: 0}\n",
		"tasks: {ignore_labels: ['']}\n",
		"escalation: {rejections: 0}\n",
		"escalation: {failed_attempts: two}\n",
		"leads: [bob smith]\n",
		"leads: [acme/leads]\n",
		"verifiers: alice\n",
		"agents: {ci-bot: '@acme/leads'}\n",
		"agents: {'not a login': alice}\n",
		"contracts: {apps: {test: GitHub Actions}}\n",
		"contracts: {apps: {test: ~}}\n",
		"contracts: {status_creators: ['@acme/ci']}\n",
		"contracts: {contradictions: [' ']}\n",
		"contracts: {checks: {lint: [golangci, '']}}\n",
		"contracts: {checks: {unit-test: [test], typecheck: , lint: [lint]}}\n", // a half-edited line must not switch typecheck off
		"contracts: {critics: {front end: [alice]}}\n",
		"contracts: {critics: {ux: [bob smith]}}\n",
		"contracts: {rules: [{files: [a]}]}\n",
		"contracts: {rules: [{files: [], unit-test: true}]}\n",
		"contracts: {rules: [{files: ~, unit-test: true}]}\n",
		"contracts: {rules: [{unit-test: true}]}\n",
		"contracts: {rules: [{files: [/src/**], unit-test: true}]}\n",
		"contracts: {rules: [{files: [./src/**], unit-test: true}]}\n",
		"contracts: {rules: [{files: [a], e2e: soon}]}\n",
		"contracts: {rules: [{files: [a], unit_test: true}]}\n",
		"contracts: {rules: [{files: [a], critics: [front end]}]}\n",
		"contracts: {default_rules: maybe}\n",
		"goals: {integration_check: [e2e]}\n",
		"- leads\n",
	} {
		if _, err := rules.ParseConfig([]byte(file)); err == nil {
			t.Errorf("the parser accepts a mistake:\n%s", file)
		}
		if err := schemaErr(t, s, file); err == nil {
			t.Errorf("the schema accepts a mistake:\n%s", file)
		}
	}
}

// FuzzSchemaAcceptsWhatTheParserAccepts: the schema is never stricter than
// the parser (an editor must not flag a file the bot takes).
func FuzzSchemaAcceptsWhatTheParserAccepts(f *testing.F) {
	for _, s := range []string{
		"leads: [alice]\n", "tasks: {track: labeled, label: x, max_per_pr: 3}\n",
		"contracts: {checks: {lint: [], e2e: [a]}, apps: {test: github-actions}, status_creators: ['@ci[bot]']}\n",
		"contracts:\n  rules:\n    - {files: ['.x', ' a'], e2e: deferred}\n  critics: {c: ~}\n",
		"agents: {'@copilot[bot]': '@alice'}\nseparation: ~\nescalation: {rejections: 0x10}\n",
		"goals: {integration_check: 1}\n", "leads: &a [x]\nverifiers: *a\n",
	} {
		f.Add(s)
	}
	s := compileSchema(f)
	f.Fuzz(func(t *testing.T, file string) {
		if _, err := rules.ParseConfig([]byte(file)); err != nil {
			return
		}
		j, err := yaml.YAMLToJSON([]byte(file))
		if err != nil {
			return // not expressible as JSON (the editor's problem, not the schema's)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
		if err != nil {
			return
		}
		if err := s.Validate(inst); err != nil && strings.TrimSpace(string(j)) != "null" {
			t.Errorf("the parser accepts it, the schema does not: %v\n%s\nas JSON: %s", err, file, j)
		}
	})
}

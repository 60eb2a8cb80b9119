package rules

import (
	"strings"
	"testing"
)

func TestRelaxations(t *testing.T) {
	base := func() Config {
		c := mappedConfig()
		c.Separation = SeparationTriple
		c.Verifiers = []string{"dave"}
		c.Leads = []string{"carol"}
		c.Agents = map[string]string{"copilot[bot]": "alice"}
		c.Contracts.Apps = map[string]string{"test": "github-actions"}
		c.Contracts.StatusCreators = []string{"jenkins"}
		c.Contracts.Critics = map[string][]string{"ux": {"erin"}}
		return c
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string // "" : no relaxation
	}{
		{"nothing changed", func(*Config) {}, ""},
		{"stricter is no relaxation", func(c *Config) { c.Escalation.Rejections = 1 }, ""},
		{"separation loosened", func(c *Config) { c.Separation = SeparationMinimum }, "separation goes from triple to minimum"},
		{"verifiers emptied", func(c *Config) { c.Verifiers = nil }, "anyone with write permission may verify"},
		{"a verifier added", func(c *Config) { c.Verifiers = []string{"dave", "mallory"} }, "verifiers: gains mallory"},
		{"leads emptied", func(c *Config) { c.Leads = nil }, "leads: is emptied"},
		{"an activity unmapped", func(c *Config) { c.Contracts.Checks = map[string][]string{"lint": {"lint"}} }, "typecheck no longer maps to a check"},
		{"a wildcard check", func(c *Config) { c.Contracts.Checks["unit-test"] = []string{"*"} }, "unit-test now counts * (a wildcard)"},
		{"named runs dropped for the whole CI", func(c *Config) { c.Contracts.Checks = nil }, "contracts.checks is removed: the named runs are no longer required"},
		{"default rules dropped", func(c *Config) { c.Contracts.DefaultRules = false }, "default_rules becomes false"},
		{"an app unpinned", func(c *Config) { c.Contracts.Apps = nil }, "test is no longer pinned to github-actions"},
		{"status creators emptied", func(c *Config) { c.Contracts.StatusCreators = nil }, "status_creators is emptied"},
		{"a critic removed", func(c *Config) { c.Contracts.Critics = nil }, "critics: ux is removed"},
		{"later escalation", func(c *Config) { c.Escalation.Rejections = 5 }, "escalation comes later"},
		{"fewer tasks tracked", func(c *Config) { c.Tasks.Track = "labeled" }, "tasks.track goes from all to labeled"},
		{"an ignored label", func(c *Config) { c.Tasks.IgnoreLabels = append(c.Tasks.IgnoreLabels, "wip") }, "ignore_labels gains wip"},
		{"an agent's pilot changed", func(c *Config) { c.Agents = map[string]string{"copilot[bot]": "bob"} }, "pilot of copilot[bot] changes from alice to bob"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := base()
			next.Contracts.Checks = map[string][]string{}
			for k, v := range base().Contracts.Checks {
				next.Contracts.Checks[k] = append([]string(nil), v...)
			}
			tc.edit(&next)
			got := Relaxations(base(), next)
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("Relaxations = %q, want none", got)
				}
				return
			}
			if len(got) == 0 || !strings.Contains(strings.Join(got, "\n"), tc.want) {
				t.Fatalf("Relaxations = %q, want one saying %q", got, tc.want)
			}
		})
	}
}

// From the whole CI (contracts.checks unset) to named runs: only those
// count then, and an activity not listed is the verifier's.
func TestRelaxationsFromWholeCI(t *testing.T) {
	for _, tc := range []struct {
		name   string
		checks map[string][]string
		want   string
	}{
		{"unset stays unset", nil, ""},
		{"named runs", namedChecks(), "contracts.checks is set: only the runs it names count"},
		{"nothing named", map[string][]string{}, "contracts.checks is set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := DefaultConfig()
			next.Contracts.Checks = tc.checks
			got := strings.Join(Relaxations(DefaultConfig(), next), "\n")
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Fatalf("Relaxations = %q, want %q", got, tc.want)
			}
		})
	}
}

package main

import (
	"strings"
	"testing"
)

// config check finds a critic a file rule names that is defined nowhere,
// with the near miss that is: the rule would otherwise be met by any counted
// approval instead of the critic's reviewers.
func TestConfigCheckCriticNames(t *testing.T) {
	tests := []struct {
		name, file string
		code       int
		out        string
	}{
		{"the issue's typo", "contracts:\n  critics:\n    frontend-critic: [alice]\n  rules:\n    - files: ['web/**']\n      critics: [frontend-critc]\n", 1,
			`FILE:6:17: contracts.rules: rule 1: critics: "frontend-critc" is not defined in contracts.critics; did you mean "frontend-critic"?` + "\n"},
		{"a near miss of a default rule's critic", "contracts:\n  rules:\n    - files: ['db/**']\n      critics: [data-critc]\n", 1,
			`FILE:4:17: contracts.rules: rule 1: critics: "data-critc" is not defined in contracts.critics; did you mean "data-critic"?` + "\n"},
		{"undefined while others are defined", "contracts:\n  critics:\n    ux-critic: [bob]\n  rules:\n    - files: ['docs/**']\n      critics: [docs-critic]\n", 1,
			`FILE:6:17: contracts.rules: rule 1: critics: "docs-critic" is not defined in contracts.critics (ux-critic); define it there (with no reviewers, any counted approval meets it)` + "\n"},
		{"defined", "contracts:\n  critics:\n    frontend-critic: [alice]\n  rules:\n    - files: ['web/**']\n      critics: [frontend-critic, security-critic]\n", 0, "FILE: valid\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, "countersign.yml", tt.file)
			out, errOut, code := runConfig(t, "", "check", path)
			if code != tt.code || out != strings.ReplaceAll(tt.out, "FILE", path) || errOut != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, stdout %q", code, out, errOut, tt.code, strings.ReplaceAll(tt.out, "FILE", path))
			}
		})
	}
}

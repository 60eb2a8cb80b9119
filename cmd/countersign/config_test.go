package main

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/countersign/countersign/rules"
)

func runConfig(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	was := configStdin
	configStdin = strings.NewReader(stdin)
	defer func() { configStdin = was }()
	var stdout, stderr bytes.Buffer
	code := run(append([]string{"config"}, args...), &stdout, &stderr)
	return stdout.String(), stderr.String(), code
}

func TestConfigCheck(t *testing.T) {
	tests := []struct {
		name, file string
		code       int
		out        string // with FILE for the file's name
	}{
		{"valid", "leads: [alice]\ncontracts: {apps: {test: github-actions}}\n", 0, "FILE: valid\n"},
		{"empty", "", 0, "FILE: valid\n"},
		{"a typo in an activity", "leads: [alice]\ncontracts:\n  checks: {unit-tests: [test]}\n", 1,
			`FILE:3:12: contracts.checks: "unit-tests" is not an activity CI checks (unit-test, typecheck, lint, e2e); did you mean "unit-test"?` + "\n"},
		{"an unknown key", "separaton: triple\n", 1, `FILE:1:1: unknown key "separaton"; did you mean "separation"?` + "\n"},
		{"every mistake at once", "leads: alice\nseparaton: triple\ncontracts:\n  chekcs: {unit-test: [test]}\nescalation: {rejections: 99999999}\n", 1,
			"FILE:1:8: leads: expected a list, not a string\n" +
				`FILE:2:1: unknown key "separaton"; did you mean "separation"?` + "\n" +
				`FILE:4:3: contracts.chekcs: unknown key "chekcs"; did you mean "checks"?` + "\n" +
				"FILE:5:26: escalation.rejections must be at most 100, not 99999999\n"},
		{"too large", strings.Repeat("#", 1<<20+1), 1, "FILE: file is larger than 1048576 bytes\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, "countersign.yml", tt.file)
			out, errOut, code := runConfig(t, "", "check", path)
			if code != tt.code || out != strings.ReplaceAll(tt.out, "FILE", path) || errOut != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, stdout %q", code, out, errOut, tt.code, tt.out)
			}
			// The bot's verdict: the same file, the same answer.
			_, err := rules.ParseConfig([]byte(tt.file))
			if (err == nil) != (code == 0) {
				t.Errorf("the bot says %v, the command exits %d", err, code)
			}
			var ce *rules.ConfigError
			if err != nil && (!errors.As(err, &ce) || !strings.Contains(out, ce.Msg)) {
				t.Errorf("the command says %q, the bot %v", out, err)
			}
			// The same through stdin.
			out, _, code = runConfig(t, tt.file, "check", "-")
			if code != tt.code || out != strings.ReplaceAll(tt.out, "FILE", "<stdin>") {
				t.Errorf("stdin: exit %d, stdout %q", code, out)
			}
		})
	}
	if _, errOut, code := runConfig(t, "", "check", "/nonexistent/countersign.yml"); code != 1 || !strings.Contains(errOut, "no such file") {
		t.Errorf("missing file: exit %d, %q", code, errOut)
	}
	if _, _, code := runConfig(t, "", "check"); code != 2 {
		t.Errorf("no file: exit %d, want 2", code)
	}
}

func TestConfigSchemaCommand(t *testing.T) {
	out, _, code := runConfig(t, "", "schema")
	published, err := os.ReadFile("../../rules/countersign.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 || out != string(published) {
		t.Errorf("exit %d; the schema printed is not the published one", code)
	}
}

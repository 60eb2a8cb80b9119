package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// helpOf is `countersign args... -h`'s output.
func helpOf(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(append(args, "-h"), &out, &errb); code != 0 {
		t.Fatalf("%q -h: exit %d, %s", args, code, errb.String())
	}
	return out.String()
}

// flagLine is the help line of flag name, "" if the help has none.
func flagLine(help, name string) string {
	for line := range strings.Lines(help) {
		if regexp.MustCompile(`^\s+(-\w, )?--` + regexp.QuoteMeta(name) + `\s`).MatchString(line) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// Every flag shows its real type: numbers as int, durations as duration,
// booleans with none; a backquoted word in a description is not taken for a
// type.
func TestHelpShowsFlagTypes(t *testing.T) {
	t.Parallel()
	serve := helpOf(t, "serve")
	for _, tc := range []struct{ flag, want string }{
		{"app-id", "--app-id int "},
		{"workers", "--workers int "},
		{"max-attempts", "--max-attempts int "},
		{"writes-per-minute", "--writes-per-minute int "},
		{"writes-per-hour", "--writes-per-hour int "},
		{"reconcile-interval", "--reconcile-interval duration "},
		{"heal-interval", "--heal-interval duration "},
		{"heal-horizon", "--heal-horizon duration "},
		{"github-wait-max", "--github-wait-max duration "},
		{"goal-coalesce", "--goal-coalesce duration "},
		{"write-margin", "--write-margin float "},
		{"write-headroom", "--write-headroom float "},
		{"listen", "--listen string "},
		{"data", "--data string "},
	} {
		if line := flagLine(serve, tc.flag); !strings.HasPrefix(line, tc.want) {
			t.Errorf("serve -h: %q, want it to start %q", line, tc.want)
		}
	}
	if strings.Contains(serve, "countersign resync (") || strings.Contains(serve, "--reconcile-interval countersign") {
		t.Errorf("serve -h takes a description's words for a type:\n%s", serve)
	}
	if line := flagLine(serve, "reconcile-interval"); !strings.Contains(line, `(default 15m)`) {
		t.Errorf("serve -h: %q, want the default 15m", line)
	}
	contract := helpOf(t, "contract")
	if line := flagLine(contract, "json"); !strings.HasPrefix(line, "--json ") || strings.Contains(line, "string") {
		t.Errorf("contract -h: %q, want a boolean flag", line)
	}
}

// A typed flag refuses a value of another type, naming the flag.
func TestTypedFlagsRefuseOtherValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--workers", "many"}, `"many" is not a whole number`},
		{[]string{"serve", "--reconcile-interval", "15"}, `"15" is not a duration`},
		{[]string{"serve", "--write-margin", "most"}, `"most" is not a number`},
		{[]string{"proofpack", "acme/widgets#1", "--app-id", "x1"}, `"x1" is not a whole number`},
	} {
		var out, errb bytes.Buffer
		if code := run(tc.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and %q", tc.args, code, errb.String(), tc.want)
		}
	}
}

// Each command lists only its own flags: proofpack takes the store's and the
// App's settings, none of serve's own.
func TestProofpackListsOnlyItsFlags(t *testing.T) {
	t.Parallel()
	help := helpOf(t, "proofpack")
	for _, own := range []string{"data", "redis-url", "app-id", "private-key-path", "private-key", "webhook-secret", "record-key", "record-key-previous", "github-api-url"} {
		if flagLine(help, own) == "" {
			t.Errorf("proofpack -h lacks --%s", own)
		}
	}
	for _, serveOnly := range []string{"listen", "workers", "max-attempts", "log-level", "heal-interval", "heal-horizon", "reconcile-interval",
		"github-wait-max", "goal-coalesce", "writes-per-minute", "writes-per-hour"} {
		if line := flagLine(help, serveOnly); line != "" {
			t.Errorf("proofpack -h lists serve's %q", line)
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"proofpack", "acme/widgets#1", "--workers", "2"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "workers") {
		t.Errorf("proofpack --workers: exit %d, stderr %q", code, errb.String())
	}
}

// contract without -title is a usage error, not a contract of nothing.
func TestContractNeedsATitle(t *testing.T) {
	for _, args := range [][]string{nil, {"-body", "Fix `a.go`"}, {"-title", "  "}} {
		out, errOut, code := runContract(t, "", args...)
		if code != 2 || out != "" || !strings.Contains(errOut, "-title is required") || !strings.Contains(errOut, "countersign contract -h") {
			t.Errorf("contract %q: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}

package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// Over stdio without GITHUB_TOKEN or GH_TOKEN the server can do nothing: it
// refuses to start, saying which variable it needs, instead of serving
// tools that each fail.
func TestMCPStdioWithoutATokenRefusesToStart(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", "")
	t.Setenv("GH_TOKEN", "")
	r, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	wr.Close() // the client sends nothing and hangs up
	stdin := os.Stdin
	os.Stdin = r
	t.Cleanup(func() { os.Stdin = stdin; r.Close() })
	var out, errb bytes.Buffer
	code := run([]string{"mcp"}, &out, &errb)
	if code == 0 || !strings.Contains(errb.String(), "GITHUB_TOKEN") {
		t.Fatalf("countersign mcp without a token: exit %d, stderr %q; want a refusal naming GITHUB_TOKEN", code, errb.String())
	}
}

// The refusal is a usage error (exit 2) and names both variables.
func TestMCPStdioWithoutATokenIsAUsageError(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", "")
	t.Setenv("GH_TOKEN", "")
	var out, errb bytes.Buffer
	if code := run([]string{"mcp"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "GITHUB_TOKEN") || !strings.Contains(errb.String(), "GH_TOKEN") {
		t.Fatalf("countersign mcp without a token: exit %d, stderr %q; want 2 naming GITHUB_TOKEN and GH_TOKEN", code, errb.String())
	}
}

// countersign's bot is an App's bot account: a --bot or COUNTERSIGN_BOT that
// does not end in "[bot]" could be a person, whose labels and comments would
// then speak for countersign.
func TestMCPBotMustBeABot(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", "ghp_x")
	var out, errb bytes.Buffer
	if code := run([]string{"mcp", "--bot", "carol"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "[bot]") {
		t.Fatalf("--bot carol: exit %d, stderr %q; want 2 saying it must end in [bot]", code, errb.String())
	}
	t.Setenv("COUNTERSIGN_BOT", "carol")
	errb.Reset()
	if code := run([]string{"mcp"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "COUNTERSIGN_BOT") {
		t.Fatalf("COUNTERSIGN_BOT=carol: exit %d, stderr %q; want 2", code, errb.String())
	}
}

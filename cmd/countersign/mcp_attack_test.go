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

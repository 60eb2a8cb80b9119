package main

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/scenario"
	"github.com/countersign/countersign/internal/scenarios"
)

// The test binary doubles as the countersign-demo command when this is set,
// so the tests run the real binary's main as a separate process.
const asCommand = "COUNTERSIGN_DEMO_TEST_AS_COMMAND"

func TestMain(m *testing.M) {
	if os.Getenv(asCommand) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// runDemo runs `countersign-demo args...` as a separate process and returns
// its stdout, stderr and exit code.
func runDemo(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = []string{asCommand + "=1", "PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + t.TempDir()}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

// `countersign-demo -list` names every built-in scenario with its title, the
// workflow examples before the attacks.
func TestDemoList(t *testing.T) {
	out, errOut, code := runDemo(t, "-list")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	files, err := fs.Glob(scenarios.Files, "*.scenario")
	if err != nil || len(files) < 10 {
		t.Fatalf("embedded scenarios: %v %v", files, err)
	}
	for _, f := range files {
		sc, err := scenario.ParseFile(scenarios.Files, f)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(f, ".scenario")
		var line string
		for _, l := range strings.Split(out, "\n") {
			if fields := strings.Fields(l); len(fields) > 0 && fields[0] == name {
				line = l
			}
		}
		if line == "" || !strings.Contains(line, sc.Title) {
			t.Errorf("no line %q with its title %q in:\n%s", name, sc.Title, out)
		}
	}
	for _, name := range []string{"simple", "rejection", "escalation", "minion", "team-of-two", "regression",
		"attack-self-verify", "attack-approver-verifies", "attack-co-author", "attack-outsider",
		"attack-tampered-label", "attack-close-unverified", "attack-hidden-commands",
		"attack-redelivered-reject", "attack-builder-approval", "attack-push-after-approval",
		"attack-goal-label", "attack-label-rename", "attack-outsider-pr", "attack-reply-spam", "attack-closed-issue",
		"attack-renamed-builder", "attack-agent-pilot", "escalation-failed-attempts", "merge-queue"} {
		if !strings.Contains(out, "  "+name+" ") {
			t.Errorf("-list lacks %s:\n%s", name, out)
		}
	}
	if !strings.Contains(out, "(default)") {
		t.Errorf("-list does not say which scenario is the default:\n%s", out)
	}
	if strings.Index(out, "  simple ") > strings.Index(out, "  attack-") {
		t.Errorf("the workflow examples should come before the attacks:\n%s", out)
	}
}

// An unknown scenario is a usage error that points at -list; so is a flag
// the demo does not know.
func TestDemoUnknownScenarioSuggestsList(t *testing.T) {
	_, errOut, code := runDemo(t, "no-such-flow")
	if code != 2 || !strings.Contains(errOut, `no scenario "no-such-flow"`) || !strings.Contains(errOut, "demo -list") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = runDemo(t, "-bogus")
	if code != 2 || !strings.Contains(errOut, "-list") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// A scenario file from disk plays; the timeline goes to stdout.
func TestDemoPlaysAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mine.scenario")
	os.WriteFile(path, []byte(`scenario: My own flow
people: alice=write carol=admin
carol opens issue #1 "Write the docs"
expect #1 open
carol labels #1 docs
expect #1 labeled docs
`), 0o644)
	out, errOut, code := runDemo(t, path)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s\nstdout:\n%s", code, errOut, out)
	}
	for _, want := range []string{"My own flow", " 1. carol opens issue #1 \"Write the docs\"", "✓ #1 labeled docs", "Final state of acme/widgets"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}

// An expectation that is not met exits 1 and names the file line.
func TestDemoFailedExpectationExitsNonZero(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.scenario")
	os.WriteFile(path, []byte("scenario: Fails\ncarol opens issue #1 \"x\"\nexpect #1 labeled never\n"), 0o644)
	out, errOut, code := runDemo(t, "-v", path)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, path+":3: expect #1 labeled never: #1 is not labeled never") {
		t.Errorf("stderr does not name the line:\n%s", errOut)
	}
	if !strings.Contains(errOut, `"msg":`) {
		t.Errorf("-v did not write the bot's logs to stderr:\n%s", errOut)
	}
	if !strings.Contains(out, "✗ #1 labeled never") {
		t.Errorf("the timeline does not mark the failed expectation:\n%s", out)
	}
}

// The default demo plays the simple three-person workflow to the end:
// the task ends verified. (It passes once the task lifecycle is implemented.)
// The default demo plays the simple workflow to state:verified, then
// its two-rejection escalation.
func TestDemoDefaultReachesVerified(t *testing.T) {
	out, errOut, code := runDemo(t)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	simple, escalation, ok := strings.Cut(out, "Two-rejection escalation")
	if !strings.Contains(simple, "Simple three-person workflow") || !strings.Contains(simple, "#1     closed  state:verified") {
		t.Errorf("the default demo's simple workflow did not end verified:\n%s", simple)
	}
	if !ok || !strings.Contains(escalation, "escalated, state:in-progress") || !strings.Contains(escalation, "**#1 escalated**") {
		t.Errorf("the default demo did not show the two-rejection escalation:\n%s", escalation)
	}
}

// The agents' flow is listed and plays through countersign's MCP tools alone:
// the builder's own approval is refused with countersign's reason, and the
// lead's verify_goal confirms the goal.
func TestDemoAgentsOverMCP(t *testing.T) {
	list, _, _ := runDemo(t, "-list")
	if !strings.Contains(list, mcpDemo) {
		t.Errorf("-list lacks %s:\n%s", mcpDemo, list)
	}
	out, errOut, code := runDemo(t, mcpDemo)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"alice → approve_task", "refused (still review): @alice built this task",
		"bob   → verify_task", "accepted: now verified",
		"carol → verify_goal",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the agents' flow lacks %q:\n%s", want, out)
		}
	}
}

// The merge-queue story plays by name, to the end: the queued group passes,
// a task reopened while queued fails it, GitHub merges the queue, and a pull
// request that closes no task is answered. It is not a default play.
func TestDemoPlaysMergeQueue(t *testing.T) {
	out, errOut, code := runDemo(t, "merge-queue")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s\nstdout:\n%s", code, errOut, out)
	}
	for _, want := range []string{"Merge queue", "alice queues PR #2", "✓ check on group of PR #2 success",
		"✓ check on group of PR #2 failure", "github merges the queue", "✓ check on PR #5 failure"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(strings.Join(defaultDemos, " "), "merge-queue") {
		t.Errorf("default plays %q: keep the default short", defaultDemos)
	}
}

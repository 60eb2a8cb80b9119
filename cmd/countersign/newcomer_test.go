package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/githubtest"
)

// serveStderr runs the built binary's serve with env (nothing inherited) and
// returns its exit code and standard error.
func serveStderr(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := command(ctx, env, append([]string{"serve"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("serve: %v; stderr %q", err, stderr.String())
	}
	return exit.ExitCode(), stderr.String()
}

// With nothing set, serve names every required setting in one run, one line
// each, and exits 2.
func TestServeReportsEveryMissingSettingAtOnce(t *testing.T) {
	t.Chdir(t.TempDir())
	code, stderr := serveStderr(t, nil)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	want := []string{"GITHUB_APP_ID (--app-id) is not set", "no private key", "GITHUB_WEBHOOK_SECRET (--webhook-secret) is not set"}
	if code != 2 || len(lines) != len(want) {
		t.Fatalf("exit %d, stderr %q: want exit 2 and %d lines", code, stderr, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], "countersign serve: ") || !strings.Contains(lines[i], w) {
			t.Errorf("line %d = %q, want it to name %q", i+1, lines[i], w)
		}
	}
}

// Several bad settings, of every kind, are all reported in one run.
func TestServeReportsEveryBadSettingAtOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := []string{"GITHUB_APP_ID=twelve", "GITHUB_PRIVATE_KEY_PATH=" + filepath.Join(dir, "nope.pem"), "GITHUB_WEBHOOK_SECRET=0123456789abcdef",
		"COUNTERSIGN_WORKERS=0", "COUNTERSIGN_HEAL_INTERVAL=soon", "COUNTERSIGN_DATA=" + filepath.Join(dir, "db")}
	code, stderr := serveStderr(t, env)
	for _, w := range []string{"GITHUB_APP_ID (--app-id)", "GITHUB_PRIVATE_KEY_PATH (--private-key-path)", "COUNTERSIGN_WORKERS (--workers)", "COUNTERSIGN_HEAL_INTERVAL (--heal-interval)"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q: %q", w, stderr)
		}
	}
	if code != 2 || strings.Count(stderr, "\n") != 4 {
		t.Errorf("exit %d, %d lines, want 2 and 4: %q", code, strings.Count(stderr, "\n"), stderr)
	}
}

// A webhook secret shorter than 16 characters is refused, with the reason,
// and is not echoed.
func TestServeRefusesAShortWebhookSecret(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gh := newGitHub(githubtest.Options{})
	defer gh.Close()
	key := filepath.Join(dir, "key.pem")
	os.WriteFile(key, gh.PrivateKeyPEM(), 0o600)
	env := []string{"GITHUB_APP_ID=1", "GITHUB_PRIVATE_KEY_PATH=" + key, "GITHUB_WEBHOOK_SECRET=hunter", "COUNTERSIGN_DATA=" + filepath.Join(dir, "db")}
	code, stderr := serveStderr(t, env)
	if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "GITHUB_WEBHOOK_SECRET (--webhook-secret): shorter than 16 characters") ||
		!strings.Contains(stderr, "record") || strings.Contains(stderr, "hunter\"") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("serve created files: %v", entries)
	}
}

// countersign --version prints what `countersign version` prints.
func TestVersionFlag(t *testing.T) {
	t.Parallel()
	var want, out, errb bytes.Buffer
	run([]string{"version"}, &want, &errb)
	if code := run([]string{"--version"}, &out, &errb); code != 0 || out.String() != want.String() || errb.Len() != 0 {
		t.Fatalf("--version: exit %d, stdout %q (want %q), stderr %q", code, out.String(), want.String(), errb.String())
	}
}

// The root help lists the commands, not serve's settings; serve -h lists
// them, each flag naming its variable, in aligned columns.
func TestRootHelpIsShortAndServeHelpHasTheSettings(t *testing.T) {
	t.Parallel()
	var root, errb bytes.Buffer
	if code := run([]string{"--help"}, &root, &errb); code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	for _, env := range []string{"COUNTERSIGN_WRITE_HEADROOM", "GITHUB_PRIVATE_KEY_PATH", "COUNTERSIGN_GOAL_COALESCE"} {
		if strings.Contains(root.String(), env) {
			t.Errorf("root help lists serve's setting %s:\n%s", env, root.String())
		}
	}
	if lines := strings.Count(root.String(), "\n"); lines > 40 {
		t.Errorf("root help is %d lines", lines)
	}
	if !strings.Contains(root.String(), "serve -h") {
		t.Errorf("root help does not say where the settings are:\n%s", root.String())
	}
	var serve bytes.Buffer
	if code := run([]string{"serve", "-h"}, &serve, &errb); code != 0 {
		t.Fatalf("serve -h: exit %d", code)
	}
	flagCol := -1
	for _, env := range []string{"GITHUB_APP_ID", "COUNTERSIGN_WRITE_HEADROOM", "COUNTERSIGN_WEBHOOK_PROXY_URL"} {
		line := ""
		for l := range strings.SplitSeq(serve.String(), "\n") {
			if strings.Contains(l, "["+env+"]") {
				line = l
			}
		}
		if line == "" {
			t.Fatalf("serve -h lacks %s:\n%s", env, serve.String())
		}
		col := regexp.MustCompile(`--\S+`).FindStringIndex(line)
		if flagCol >= 0 && col[0] != flagCol {
			t.Errorf("flags not aligned:\n%s", serve.String())
		}
		flagCol = col[0]
	}
}

// An unknown command gets a suggestion of the nearest one.
func TestUnknownCommandSuggests(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ typo, want string }{{"serv", "serve"}, {"regsiter", "register"}, {"deadleters", "deadletters"}} {
		var out, errb bytes.Buffer
		if code := run([]string{tc.typo}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `unknown command "`+tc.typo+`"`) ||
			!strings.Contains(errb.String(), "Did you mean this?\n\t"+tc.want) {
			t.Errorf("%s: exit %d, stderr %q", tc.typo, code, errb.String())
		}
	}
}

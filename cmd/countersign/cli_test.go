package main

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/countersign/countersign/internal/githubtest"
)

// Every command and subcommand answers -h, --help and -help on stdout with
// exit code 0, and none of them opens or creates a store.
func TestHelpEverywhere(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	var paths [][]string
	var walk func(cmd *cobra.Command, path []string)
	walk = func(cmd *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, sub := range cmd.Commands() {
			if sub.Name() != "help" {
				walk(sub, append(append([]string{}, path...), sub.Name()))
			}
		}
	}
	walk(newRoot(&cli{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, getenv: os.Getenv}), nil)
	if len(paths) < 7 {
		t.Fatalf("only %d commands: %q", len(paths), paths)
	}
	for _, path := range paths {
		for _, h := range []string{"-h", "--help", "-help"} {
			var out, errb bytes.Buffer
			args := append(append([]string{}, path...), h)
			if code := run(args, &out, &errb); code != 0 || out.Len() == 0 || errb.Len() != 0 {
				t.Errorf("countersign %s: exit %d, stdout %d bytes, stderr %q", strings.Join(args, " "), code, out.Len(), errb.String())
			}
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"help", "deadletters"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "retry") {
		t.Errorf("help deadletters: exit %d, %q", code, out.String())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("help created files: %v", entries)
	}
}

// `countersign demo`, with any flags, says in one line how to run the demo
// binary, which carries the fake GitHub this binary leaves out.
func TestDemoPointsAtItsBinary(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"demo"}, {"demo", "-list"}, {"demo", "-v", "escalation"}} {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		if code != 2 || out.Len() != 0 || strings.Count(errb.String(), "\n") != 1 || !strings.Contains(errb.String(), "go run ./cmd/countersign-demo") {
			t.Errorf("countersign %s: exit %d, stdout %q, stderr %q", strings.Join(args, " "), code, out.String(), errb.String())
		}
	}
}

// Flags come before or after the verb and its arguments; a store that does not
// exist is an error and is not created.
func TestFlagsAnywhereAndNoNewStore(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	missing := filepath.Join(dir, "typo.db")
	for _, args := range [][]string{
		{"deadletters", "list", "--data", missing},
		{"deadletters", "--data", missing, "list"},
		{"deadletters", "list", "-data", missing},
		{"deadletters", "list", "--data=" + missing},
		{"deadletters", "retry", "x", "--data", missing},
		{"deadletters", "retry", "--all", "--data", missing},
	} {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		if code != 1 || out.Len() != 0 || !strings.Contains(errb.String(), "no store at "+missing) || strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out.String(), errb.String())
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a store was created: %v", entries)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"deadletters", "retry", "--data", missing}, "give dead letter ids or --all"},
		{[]string{"deadletters", "retry", "x", "--all", "--data", missing}, "give dead letter ids or --all"},
		{[]string{"deadletters", "lsit"}, `unknown subcommand "lsit"`},
		{[]string{"nope"}, `unknown command "nope"`},
		{[]string{"version", "extra"}, "unknown command"},
		{[]string{"serve", "--no-such-flag"}, "flag provided but not defined: -no-such-flag"},
	} {
		var out, errb bytes.Buffer
		if code := run(tc.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%q: exit %d, stderr %q, want exit 2 and %q", tc.args, code, errb.String(), tc.want)
		}
	}
}

// countersign version prints the module version and the commit from the
// binary's build information.
func TestVersion(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if code := run([]string{"version"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !regexp.MustCompile(`^countersign \S+ \(commit \S+?(, modified)?, go1\.[0-9.]+\)\n$`).MatchString(out.String()) {
		t.Fatalf("version = %q", out.String())
	}
}

// Each bad setting stops serve with exit 2 and one line naming it; no secret
// is echoed, and nothing is created.
func TestServeSettingErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := filepath.Join(dir, "key.pem")
	gh := newGitHub(githubtest.Options{})
	defer gh.Close()
	os.WriteFile(key, gh.PrivateKeyPEM(), 0o600)
	base := []string{"GITHUB_APP_ID=1", "GITHUB_PRIVATE_KEY_PATH=" + key, "GITHUB_WEBHOOK_SECRET=x-webhook-secret-for-tests",
		"COUNTERSIGN_DATA=" + filepath.Join(dir, "countersign.db"), "COUNTERSIGN_LISTEN=" + freeAddr(t)}
	tests := []struct {
		name string
		env  []string
		args []string
		code int
		want string
	}{
		{"blank secret", []string{"GITHUB_WEBHOOK_SECRET=   "}, nil, 2, "GITHUB_WEBHOOK_SECRET (--webhook-secret) is only whitespace"},
		{"blank secret flag", nil, []string{"--webhook-secret", "\t "}, 2, "GITHUB_WEBHOOK_SECRET (--webhook-secret) is only whitespace"},
		{"missing data directory", []string{"COUNTERSIGN_DATA=" + filepath.Join(dir, "no", "such", "countersign.db")}, nil, 2,
			"COUNTERSIGN_DATA (--data): directory " + filepath.Join(dir, "no", "such") + " does not exist"},
		{"data is a directory", []string{"COUNTERSIGN_DATA=" + dir}, nil, 2, "is a directory, not a file"},
		{"url with password", []string{"GITHUB_API_URL=ftp://user:hunter2@example.com/"}, nil, 2, `"ftp://example.com/" is not an http(s) URL`},
		{"bad redis url", []string{"REDIS_URL=http://:hunter2@x"}, nil, 2, "REDIS_URL (--redis-url): not a valid redis:// or rediss:// URL"},
		{"unreachable redis", []string{"REDIS_URL=redis://:hunter2@" + freeAddr(t) + "/0"}, nil, 1, "REDIS_URL: store: redis ping"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := command(ctx, append(append([]string{}, base...), tc.env...), append([]string{"serve"}, tc.args...)...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != tc.code {
				t.Fatalf("exit %v, want %d; stderr %q", err, tc.code, stderr.String())
			}
			if got := stderr.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, tc.want) || strings.Contains(got, "hunter2") {
				t.Fatalf("stderr = %q, want one line containing %q and no secret", got, tc.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "no")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("serve created the missing directory: %v", err)
	}
}

// The start-up log names the GitHub API without the credentials a URL may hold.
func TestServeLogsRedactedAPIURL(t *testing.T) {
	t.Parallel()
	gh := newGitHub(githubtest.Options{})
	defer gh.Close()
	dir := t.TempDir()
	addr := freeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	apiURL := strings.Replace(gh.URL(), "http://", "http://ops:hunter2@", 1)
	cmd := command(ctx, []string{"GITHUB_APP_ID=1", "GITHUB_PRIVATE_KEY=" + string(gh.PrivateKeyPEM()),
		"GITHUB_WEBHOOK_SECRET=s-webhook-secret-for-tests", "GITHUB_API_URL=" + apiURL, "COUNTERSIGN_DATA=" + filepath.Join(dir, "countersign.db")},
		"serve", "--listen", addr)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Contains(stderr.String(), "countersign serving") })
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	body.ReadFrom(resp.Body)
	resp.Body.Close()
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if strings.Contains(stderr.String(), "hunter2") || strings.Contains(stderr.String(), "ops:") {
		t.Fatalf("credentials in the log:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), `"github_api":"`+gh.URL()) {
		t.Fatalf("the log does not name the API:\n%s", stderr.String())
	}
	if !regexp.MustCompile(`(?m)^countersign_build_info\{goversion="go1\.[0-9.]+",revision="[^"]+",version="[^"]+"\} 1$`).MatchString(body.String()) {
		t.Fatalf("no countersign_build_info in /metrics")
	}
}

// lockedBuffer is a bytes.Buffer safe to write from a process's copier while
// the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

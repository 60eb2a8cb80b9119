package main

import (
	"bufio"
	"context"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/internal/githubtest"
)

// countersign register end to end against the fake GitHub: the local page's
// form (no script) posts the manifest with the webhook URL and the redirect;
// GitHub's redirect brings the code back; the code is exchanged; the App id,
// private key and webhook secret land in 0600 files; the printed serve
// command names them; and a replay of the redirect is refused.
func TestRegisterEndToEnd(t *testing.T) {
	t.Parallel()
	gh := newGitHub(githubtest.Options{})
	defer gh.Close()
	dir := filepath.Join(t.TempDir(), "app")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd, out, stderr := startCommand(ctx, t, []string{"GITHUB_URL=" + strings.TrimRight(gh.URL(), "/"), "GITHUB_API_URL=" + gh.URL()},
		"register", "--webhook-url", "https://cs.example.com/webhook", "--dir", dir, "--org", "acme")
	first, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("no first line: %v; stderr %q", err, stderr.String())
	}
	page := regexp.MustCompile(`Open (http://127\.0\.0\.1:\d+/) in your browser`).FindStringSubmatch(first)
	if page == nil {
		t.Fatalf("first line %q", first)
	}

	// The browser: load the page and submit its form as it is.
	resp, err := http.Get(page[1])
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(strings.ToLower(string(body)), "<script") {
		t.Fatal("the page has a script")
	}
	form := regexp.MustCompile(`<form method="post" action="([^"]+)">\s*<input type="hidden" name="manifest" value="([^"]+)">`).FindSubmatch(body)
	if form == nil {
		t.Fatalf("no form in:\n%s", body)
	}
	action := html.UnescapeString(string(form[1]))
	if !strings.HasPrefix(action, gh.URL()+"organizations/acme/settings/apps/new?state=") {
		t.Fatalf("form action %q", action)
	}
	resp, err = http.PostForm(action, url.Values{"manifest": {html.UnescapeString(string(form[2]))}}) // follows GitHub's redirect
	if err != nil {
		t.Fatal(err)
	}
	done, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(done), "countersign is registered") {
		t.Fatalf("after the redirect: %d\n%s", resp.StatusCode, done)
	}
	rest, _ := io.ReadAll(out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("register: %v; stderr %q", err, stderr.String())
	}

	apps := gh.ManifestApps()
	if len(apps) != 1 || !apps[0].Converted || apps[0].Owner != "acme" {
		t.Fatalf("apps %+v", apps)
	}
	app := apps[0]
	hook, _ := app.Manifest["hook_attributes"].(map[string]any)
	if hook["url"] != "https://cs.example.com/webhook" || !strings.HasPrefix(app.Manifest["redirect_url"].(string), page[1]+"callback") ||
		app.Manifest["name"] != "countersign" || len(app.Manifest["default_events"].([]any)) != strings.Count(string(countersign.AppManifest), "\n  - ") {
		t.Fatalf("manifest %v", app.Manifest)
	}
	want := map[string]string{"app-id": strconv.FormatInt(app.ID, 10), "private-key.pem": string(app.PEM), "webhook-secret": app.WebhookSecret}
	for name, content := range want {
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v", name, fi.Mode().Perm())
		}
		if b, _ := os.ReadFile(p); string(b) != content {
			t.Errorf("%s = %q, want %q", name, b, content)
		}
	}
	serve := "GITHUB_API_URL=" + gh.URL() + " GITHUB_APP_ID=" + want["app-id"] + " GITHUB_PRIVATE_KEY_PATH=" + filepath.Join(dir, "private-key.pem") +
		` GITHUB_WEBHOOK_SECRET="$(cat ` + filepath.Join(dir, "webhook-secret") + `)" countersign serve`
	if !strings.Contains(string(rest), serve) || !strings.Contains(string(rest), "kubectl create secret generic countersign --from-file="+dir) {
		t.Fatalf("next steps lack %q:\n%s", serve, rest)
	}
	if strings.Contains(string(rest), app.WebhookSecret) || strings.Contains(stderr.String(), app.WebhookSecret) {
		t.Fatal("the webhook secret was printed")
	}
}

// register refuses to start over existing files, and without a webhook URL.
func TestRegisterRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "private-key.pem"), []byte("old"), 0o600)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"register", "--dir", dir, "--webhook-url", "https://x.example/webhook"}, "private-key.pem exists"},
		{[]string{"register", "--dir", dir}, "--webhook-url is required"},
		{[]string{"register", "--dir", t.TempDir(), "--webhook-url", "x.example/webhook"}, "want the https://HOST/webhook address"},
	} {
		var out, errb lockedBuffer
		if code := run(tc.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%q: exit %d, stderr %q", tc.args, code, errb.String())
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "private-key.pem")); string(b) != "old" {
		t.Fatal("an existing key was overwritten")
	}
}

// Without --dir, register writes under the user's configuration directory
// (outside the checkout) and says where; a webhook URL GitHub cannot reach is
// warned about on stderr, and register goes on.
func TestRegisterDefaultDirAndWarnings(t *testing.T) {
	cfg := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd, out, stderr := startCommand(ctx, t, []string{"XDG_CONFIG_HOME=" + cfg}, "register", "--webhook-url", "http://localhost:8080/hooks")
	defer func() {
		cancel()
		cmd.Wait()
	}()
	for _, want := range []string{"Open http://127.0.0.1:", "will be written to " + filepath.Join(cfg, "countersign", "countersign") + "."} {
		line, err := out.ReadString('\n')
		if err != nil || !strings.Contains(line, want) {
			t.Fatalf("line %q (%v), want %q; stderr %q", line, err, want, stderr.String())
		}
	}
	// The warnings were written before the first line; the copy from the pipe
	// may lag behind it.
	wants := []string{"warning: localhost is this machine (loopback)", "warning: the webhook URL is http, not https", "warning: the webhook URL's path is /hooks"}
	deadline := time.Now().Add(10 * time.Second)
	for !containsAll(stderr.String(), wants) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !containsAll(stderr.String(), wants) {
		t.Fatalf("stderr %q lacks %q", stderr.String(), wants)
	}

	// The default directory is checked like --dir: an existing file stops it.
	dir := filepath.Join(cfg, "countersign", "countersign-acme")
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "private-key.pem"), []byte("old"), 0o600)
	var o, e lockedBuffer
	t.Setenv("XDG_CONFIG_HOME", cfg)
	if code := run([]string{"register", "--name", "countersign-acme", "--webhook-url", "https://cs.example.com/webhook"}, &o, &e); code != 2 ||
		!strings.Contains(e.String(), filepath.Join(dir, "private-key.pem")+" exists") {
		t.Fatalf("exit %d, stderr %q", code, e.String())
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// startCommand starts countersign with args in a process of its own, its
// standard output to read line by line and its standard error collected.
func startCommand(ctx context.Context, t *testing.T, env []string, args ...string) (*exec.Cmd, *bufio.Reader, *lockedBuffer) {
	t.Helper()
	cmd := command(ctx, env, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, bufio.NewReader(stdout), stderr
}

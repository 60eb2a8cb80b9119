package main

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/githubtest"
)

// `register --webhook-proxy URL` registers the App with the channel as its
// webhook URL, warns about nothing (a channel's path is not /webhook), and
// prints the serve command with the same proxy.
func TestRegisterWithWebhookProxy(t *testing.T) {
	t.Parallel()
	gh := newGitHub(githubtest.Options{})
	defer gh.Close()
	dir := filepath.Join(t.TempDir(), "app")
	channel := "https://smee.io/aBcDeF123"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd, out, stderr := startCommand(ctx, t, []string{"GITHUB_URL=" + strings.TrimRight(gh.URL(), "/"), "GITHUB_API_URL=" + gh.URL()},
		"register", "--webhook-proxy", channel, "--dir", dir)
	first, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("no first line: %v; stderr %q", err, stderr.String())
	}
	page := regexp.MustCompile(`Open (http://127\.0\.0\.1:\d+/) in your browser`).FindStringSubmatch(first)
	if page == nil {
		t.Fatalf("first line %q", first)
	}
	resp, err := http.Get(page[1])
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	form := regexp.MustCompile(`<form method="post" action="([^"]+)">\s*<input type="hidden" name="manifest" value="([^"]+)">`).FindSubmatch(body)
	if form == nil {
		t.Fatalf("no form in:\n%s", body)
	}
	resp, err = http.PostForm(html.UnescapeString(string(form[1])), url.Values{"manifest": {html.UnescapeString(string(form[2]))}})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	rest, _ := io.ReadAll(out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("register: %v; stderr %q", err, stderr.String())
	}
	apps := gh.ManifestApps()
	if len(apps) != 1 {
		t.Fatalf("apps %+v", apps)
	}
	hook, _ := apps[0].Manifest["hook_attributes"].(map[string]any)
	if hook["url"] != channel {
		t.Fatalf("hook_attributes.url = %v, want %s", hook["url"], channel)
	}
	if strings.Contains(stderr.String(), "warning") {
		t.Errorf("warnings for a proxy channel: %q", stderr.String())
	}
	if want := "COUNTERSIGN_WEBHOOK_PROXY_URL=" + channel + " GITHUB_APP_ID="; !strings.Contains(string(rest), want) {
		t.Fatalf("next steps lack %q:\n%s", want, rest)
	}
}

// --webhook-proxy and --webhook-url exclude each other, and the proxy must be a URL.
func TestRegisterWebhookProxyRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"register", "--dir", t.TempDir(), "--webhook-proxy", "https://smee.io/x", "--webhook-url", "https://x.example/webhook"}, "both set"},
		{[]string{"register", "--dir", t.TempDir(), "--webhook-proxy", "smee.io/x"}, "want a webhook proxy channel's URL"},
	} {
		var out, errb lockedBuffer
		if code := run(tc.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%q: exit %d, stderr %q", tc.args, code, errb.String())
		}
	}
}

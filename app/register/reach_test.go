package register

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign"
)

// Webhook URLs GitHub can never reach, or reach on a path countersign does
// not serve, are warned about, each reason once; a public https URL on
// /webhook is not.
func TestWebhookWarnings(t *testing.T) {
	for _, tc := range []struct {
		url    string
		dotCom bool
		want   []string // one fragment per warning, in order
	}{
		{"https://countersign.example.com/webhook", true, nil},
		{"https://203.0.113.7/webhook", true, nil},
		{"https://[2001:db8::1]/webhook", true, nil},
		{"https://countersign.example.com:8443/webhook", true, nil},
		{"https://localhost/webhook", true, []string{"loopback"}},
		{"https://LOCALHOST./webhook", true, []string{"loopback"}},
		{"https://app.localhost/webhook", true, []string{"loopback"}},
		{"https://127.0.0.1:8080/webhook", true, []string{"loopback"}},
		{"https://127.8.9.10/webhook", true, []string{"loopback"}},
		{"https://[::1]/webhook", true, []string{"loopback"}},
		{"https://[::ffff:127.0.0.1]/webhook", true, []string{"loopback"}},
		{"https://0.0.0.0/webhook", true, []string{"no address"}},
		{"https://10.1.2.3/webhook", true, []string{"private address"}},
		{"https://172.16.0.9/webhook", true, []string{"private address"}},
		{"https://192.168.1.20/webhook", true, []string{"private address"}},
		{"https://100.64.3.4/webhook", true, []string{"private address"}},
		{"https://[fd12:3456::1]/webhook", true, []string{"private address"}},
		{"https://169.254.169.254/webhook", true, []string{"link-local"}},
		{"https://[fe80::1]/webhook", true, []string{"link-local"}},
		{"https://countersign.local/webhook", true, []string{".local"}},
		{"https://cs.corp.internal/webhook", true, []string{".internal"}},
		{"https://router.home.arpa/webhook", true, []string{".home.arpa"}},
		{"https://countersign/webhook", true, []string{"single-label"}},
		// A GitHub Enterprise Server inside the network may reach these.
		{"https://10.1.2.3/webhook", false, nil},
		{"https://countersign.internal/webhook", false, nil},
		{"https://countersign/webhook", false, nil},
		{"https://localhost/webhook", false, []string{"loopback"}},
		// Plain http, and paths countersign does not serve.
		{"http://countersign.example.com/webhook", true, []string{"not https"}},
		{"https://countersign.example.com/", true, []string{"path is /:"}},
		{"https://countersign.example.com", true, []string{"path is /:"}},
		{"https://countersign.example.com/hooks/github", true, []string{"path is /hooks/github"}},
		{"https://countersign.example.com/webhook/", true, []string{"path is /webhook/"}},
		{"https://countersign.example.com/Webhook", true, []string{"path is /Webhook"}},
		{"http://localhost:8080/", true, []string{"loopback", "not https", "path is /:"}},
		{"http://192.168.0.2/gh", true, []string{"private address", "not https", "path is /gh"}},
		// Start refuses these; nothing to warn about.
		{"", true, nil},
		{"countersign.example.com/webhook", true, nil},
		{"://x", true, nil},
	} {
		got := WebhookWarnings(tc.url, tc.dotCom)
		if len(got) != len(tc.want) {
			t.Errorf("%q (github.com %v): %d warnings, want %d: %q", tc.url, tc.dotCom, len(got), len(tc.want), got)
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%q (github.com %v): warning %d %q lacks %q", tc.url, tc.dotCom, i, got[i], w)
			}
		}
	}
}

// The App's files go under the user's configuration directory, named after
// the App, unless --dir says otherwise.
func TestDefaultDir(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	t.Setenv("HOME", t.TempDir())
	for _, tc := range []struct{ name, want string }{
		{"", "countersign"}, // app.yml's name
		{"countersign-acme", "countersign-acme"},
		{"Countersign for ACME!", "countersign-for-acme"},
		{"---", "countersign"},
	} {
		got, err := DefaultDir(countersign.AppManifest, tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if base, _ := os.UserConfigDir(); got != filepath.Join(base, "countersign", tc.want) {
			t.Errorf("DefaultDir(%q) = %q, want %q under %q", tc.name, got, tc.want, base)
		}
	}
}

func TestGitCheckout(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := GitCheckout(filepath.Join(root, "countersign-app")); got != root {
		t.Errorf("GitCheckout inside %q = %q", root, got)
	}
	if got := GitCheckout(t.TempDir()); got != "" {
		t.Errorf("GitCheckout outside any checkout = %q", got)
	}
}

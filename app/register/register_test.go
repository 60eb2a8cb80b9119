package register

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/internal/githubtest"
)

func TestManifest(t *testing.T) {
	b, err := Manifest(countersign.AppManifest, "https://cs.example.com/webhook", "http://127.0.0.1:1/callback", "")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Name          string            `json:"name"`
		URL           string            `json:"url"`
		RedirectURL   string            `json:"redirect_url"`
		Public        bool              `json:"public"`
		Hook          map[string]any    `json:"hook_attributes"`
		DefaultEvents []string          `json:"default_events"`
		DefaultPerms  map[string]string `json:"default_permissions"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.Name != "countersign" || m.URL == "" || m.RedirectURL != "http://127.0.0.1:1/callback" || m.Public ||
		m.Hook["url"] != "https://cs.example.com/webhook" || m.Hook["active"] != true ||
		!slices.Equal(m.DefaultEvents, appYML(t).DefaultEvents) || !maps.Equal(m.DefaultPerms, appYML(t).DefaultPerms) ||
		m.DefaultPerms["checks"] != "write" || m.DefaultPerms["contents"] != "read" ||
		!slices.Contains(m.DefaultEvents, "merge_group") || m.DefaultPerms["merge_queues"] != "read" ||
		!slices.Contains(m.DefaultEvents, "projects_v2_item") || m.DefaultPerms["organization_projects"] != "write" {
		t.Fatalf("manifest %+v", m)
	}
	b, _ = Manifest(countersign.AppManifest, "https://x/webhook", "http://r/callback", "countersign-acme")
	if !strings.Contains(string(b), `"name":"countersign-acme"`) {
		t.Fatalf("name not replaced: %s", b)
	}
	for _, bad := range []string{"", "name: x\n", "url: https://x\n", ": : :"} {
		if _, err := Manifest([]byte(bad), "https://x/webhook", "http://r/callback", ""); err == nil {
			t.Errorf("manifest %q accepted", bad)
		}
	}
}

// appYML is app.yml's events and permissions.
func appYML(t *testing.T) (m struct {
	DefaultEvents []string          `yaml:"default_events"`
	DefaultPerms  map[string]string `yaml:"default_permissions"`
}) {
	t.Helper()
	if err := yaml.Unmarshal(countersign.AppManifest, &m); err != nil || len(m.DefaultEvents) == 0 {
		t.Fatalf("app.yml: %v", err)
	}
	return m
}

func get(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The callback takes GitHub's redirect only with this flow's state, exchanges
// a code once, and reports GitHub's 404 for a bad code as an error that says
// to start again; nothing is written then.
func TestCallbackChecks(t *testing.T) {
	gh := githubtest.New(githubtest.Options{})
	defer gh.Close()
	dir := filepath.Join(t.TempDir(), "app")
	f, err := Start(Options{Manifest: countersign.AppManifest, WebhookURL: "https://cs.example.com/webhook",
		GitHubURL: gh.URL(), APIURL: gh.URL(), Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	code, page := get(t, f.URL())
	if code != 200 || strings.Contains(page, "<script") || !strings.Contains(page, `action="`+strings.TrimRight(gh.URL(), "/")+`/settings/apps/new?state=`+f.state+`"`) {
		t.Fatalf("page %d:\n%s", code, page)
	}
	req, _ := http.NewRequest("GET", f.URL(), nil)
	req.Host = "attacker.example:" + strings.Split(strings.TrimSuffix(strings.TrimPrefix(f.URL(), "http://"), "/"), ":")[1]
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("a rebound host name was served: %v %v", resp, err)
	}
	if code, _ := get(t, f.URL()+"callback?code=abc&state=wrong"); code != http.StatusForbidden {
		t.Fatalf("wrong state: %d", code)
	}
	if code, _ := get(t, f.URL()+"callback?code=abc"); code != http.StatusForbidden {
		t.Fatalf("no state: %d", code)
	}
	if code, _ := get(t, f.URL()+"callback?state="+f.state); code != http.StatusBadRequest {
		t.Fatalf("no code: %d", code)
	}
	if code, _ := get(t, f.URL()+"callback?code=unknown&state="+f.state); code != http.StatusBadGateway {
		t.Fatalf("unknown code: %d", code)
	}
	if code, _ := get(t, f.URL()+"callback?code=again&state="+f.state); code != http.StatusConflict {
		t.Fatalf("second callback: %d", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := f.Wait(ctx); err == nil || !strings.Contains(err.Error(), "GitHub answered 404") || !strings.Contains(err.Error(), "start again") {
		t.Fatalf("Wait: %v", err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Fatal("files written for a failed exchange")
	}
}

// The fake's conversion endpoint answers a code once, as GitHub does.
func TestConversionIsOneTime(t *testing.T) {
	gh := githubtest.New(githubtest.Options{})
	defer gh.Close()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	manifest, _ := Manifest(countersign.AppManifest, "https://x.example/webhook", "http://127.0.0.1:9/callback", "")
	resp, err := noRedirect.PostForm(gh.URL()+"settings/apps/new?state=s1", map[string][]string{"manifest": {string(manifest)}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := resp.Location()
	if resp.StatusCode != http.StatusFound || loc == nil || loc.Query().Get("state") != "s1" || loc.Query().Get("code") == "" {
		t.Fatalf("redirect %d %v", resp.StatusCode, loc)
	}
	conv := gh.URL() + "app-manifests/" + loc.Query().Get("code") + "/conversions"
	for i, want := range []int{http.StatusCreated, http.StatusNotFound} {
		resp, err := http.Post(conv, "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("conversion %d: %d, want %d", i, resp.StatusCode, want)
		}
		if i == 0 {
			for _, k := range []string{"id", "slug", "node_id", "owner", "name", "html_url", "client_id", "client_secret", "webhook_secret", "pem", "permissions", "events"} {
				if body[k] == nil {
					t.Errorf("conversion lacks %q", k)
				}
			}
		} else if body["message"] != "Not Found" {
			t.Errorf("404 body %v", body)
		}
	}
	resp, err = noRedirect.PostForm(gh.URL()+"settings/apps/new", map[string][]string{"manifest": {`{"name":"x","url":"https://x"}`}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("manifest without redirect_url: %d", resp.StatusCode)
	}
}

// Found by review: the local page hands out the flow's state, so it listens
// on this machine only; another address is refused before anything starts.
func TestLocalPageIsLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0", "example.com:80"} {
		if _, err := Start(Options{Manifest: countersign.AppManifest, WebhookURL: "https://cs.example.com/webhook",
			GitHubURL: "https://github.com/", APIURL: "https://api.github.com/", Dir: filepath.Join(t.TempDir(), "app"), Listen: addr}); err == nil ||
			!strings.Contains(err.Error(), "loopback") {
			t.Errorf("Listen %q: %v, want refused as not loopback", addr, err)
		}
	}
}

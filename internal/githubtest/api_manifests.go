package githubtest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/google/go-github/v60/github"
)

// The App manifest flow (docs: "Registering a GitHub App from a manifest"):
// a person's browser posts a form with a `manifest` field to
// /settings/apps/new (or /organizations/ORG/settings/apps/new) on GitHub's
// web host, confirms, and GitHub redirects to the manifest's redirect_url with
// ?code=...&state=...; the app then exchanges the code, once and within an
// hour, with POST /app-manifests/{code}/conversions (no authentication), which
// answers 201 with the new App, its client id and secret, webhook secret and
// private key. The fake serves the web step at the same host as its API (as
// GitHub Enterprise Server does, its API being under /api/v3) and skips the
// person's confirmation: the POST creates the App and redirects at once.

// manifestCodeTTL is how long a manifest code can be exchanged.
const manifestCodeTTL = time.Hour

// ManifestApp is an App created through the manifest flow.
type ManifestApp struct {
	ID            int64
	Slug          string
	Owner         string // the organization, or "" for the person's own account
	Manifest      map[string]any
	WebhookSecret string
	PEM           []byte
	Code          string
	State         string
	Converted     bool
	created       time.Time
}

func (s *Server) manifestRoutes(r routeFunc) {
	r("POST", "/app-manifests/{code}/conversions", authNone, s.convertManifest)
	r("POST", "/settings/apps/new", authNone, s.newAppFromManifest)
	r("POST", "/organizations/{org}/settings/apps/new", authNone, s.newAppFromManifest)
}

var slugUnsafe = regexp.MustCompile(`[^a-z0-9]+`)

// newAppFromManifest is the web page's form target: it checks the manifest,
// creates the App and redirects to redirect_url with a one-time code.
func (s *Server) newAppFromManifest(c *apiCall) {
	if err := c.r.ParseForm(); err != nil {
		http.Error(c.w, "bad form", http.StatusBadRequest)
		return
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(c.r.PostForm.Get("manifest")), &m); err != nil {
		http.Error(c.w, "Invalid GitHub App manifest: not JSON", http.StatusUnprocessableEntity)
		return
	}
	str := func(k string) string { v, _ := m[k].(string); return v }
	hook, _ := m["hook_attributes"].(map[string]any)
	hookURL, _ := hook["url"].(string)
	redirect, err := url.Parse(str("redirect_url"))
	switch {
	case str("url") == "":
		http.Error(c.w, "Invalid GitHub App manifest: url is required", http.StatusUnprocessableEntity)
		return
	case hook != nil && hookURL == "":
		http.Error(c.w, "Invalid GitHub App manifest: hook_attributes.url is required", http.StatusUnprocessableEntity)
		return
	case str("redirect_url") == "" || err != nil || !redirect.IsAbs():
		http.Error(c.w, "Invalid GitHub App manifest: redirect_url is required for this flow", http.StatusUnprocessableEntity)
		return
	}
	name := str("name")
	if name == "" {
		name = "app"
	}
	slug := strings.Trim(slugUnsafe.ReplaceAllString(strings.ToLower(name), "-"), "-")
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		http.Error(c.w, "key generation failed", http.StatusInternalServerError)
		return
	}
	s.nextID++
	app := &ManifestApp{
		ID: s.nextID, Slug: slug, Owner: c.vars["org"], Manifest: m,
		WebhookSecret: randomHex(20),
		PEM:           pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
		Code:          randomHex(20), State: c.r.URL.Query().Get("state"), created: time.Now(),
	}
	if hook == nil {
		app.WebhookSecret = ""
	}
	s.manifestApps = append(s.manifestApps, app)
	q := redirect.Query()
	q.Set("code", app.Code)
	if app.State != "" {
		q.Set("state", app.State)
	}
	redirect.RawQuery = q.Encode()
	http.Redirect(c.w, c.r, redirect.String(), http.StatusFound)
}

// convertManifest answers POST /app-manifests/{code}/conversions: 201 with the
// App once per code, 404 for a code unknown, used or expired.
func (s *Server) convertManifest(c *apiCall) {
	var app *ManifestApp
	for _, a := range s.manifestApps {
		if a.Code == c.vars["code"] {
			app = a
		}
	}
	if app == nil || app.Converted || time.Since(app.created) > manifestCodeTTL {
		c.notFound()
		return
	}
	app.Converted = true
	owner := &github.User{Login: ptr("octocat"), Type: ptr("User")}
	if app.Owner != "" {
		owner = &github.User{Login: ptr(app.Owner), Type: ptr("Organization")}
	}
	name, _ := app.Manifest["name"].(string)
	desc, _ := app.Manifest["description"].(string)
	ext, _ := app.Manifest["url"].(string)
	now := github.Timestamp{Time: app.created.UTC().Truncate(time.Second)}
	var events []string
	if evs, ok := app.Manifest["default_events"].([]any); ok {
		for _, e := range evs {
			if s, ok := e.(string); ok {
				events = append(events, s)
			}
		}
	}
	perms := map[string]string{}
	if ps, ok := app.Manifest["default_permissions"].(map[string]any); ok {
		for k, v := range ps {
			if s, ok := v.(string); ok {
				perms[k] = s
			}
		}
	}
	body := map[string]any{
		"id": app.ID, "slug": app.Slug, "node_id": nodeID("A", app.ID), "owner": owner,
		"name": name, "description": desc, "external_url": ext,
		"html_url":   s.webURL("apps/" + app.Slug),
		"created_at": now, "updated_at": now,
		"permissions": perms, "events": events,
		"client_id":     fmt.Sprintf("Iv1.%s", randomHex(8)),
		"client_secret": randomHex(20),
		"pem":           string(app.PEM),
	}
	if app.WebhookSecret != "" {
		body["webhook_secret"] = app.WebhookSecret
	} else {
		body["webhook_secret"] = nil
	}
	c.json(http.StatusCreated, body)
}

// ManifestApps are the Apps created through the manifest flow, oldest first.
func (s *Server) ManifestApps() []ManifestApp {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ManifestApp, len(s.manifestApps))
	for i, a := range s.manifestApps {
		out[i] = *a
	}
	return out
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("githubtest: " + err.Error())
	}
	return hex.EncodeToString(b)
}

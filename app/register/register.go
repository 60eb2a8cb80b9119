// Package register registers countersign as a GitHub App through GitHub's App
// manifest flow: it serves a local page whose form posts the manifest
// (app.yml, with the webhook URL given) to GitHub, receives the one-time code
// on its redirect, exchanges it (POST /app-manifests/{code}/conversions) and
// writes the App id, private key and webhook secret to files only the user
// can read. The page has no script: the person clicks one button.
package register

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/goccy/go-yaml"
)

// The files Run writes in Options.Dir; their names are the keys of the
// Kubernetes secret (deploy/kubernetes), so the directory can be loaded with
// kubectl create secret generic countersign --from-file=DIR.
const (
	AppIDFile         = "app-id"
	PrivateKeyFile    = "private-key.pem"
	WebhookSecretFile = "webhook-secret"
)

// Options say how to register.
type Options struct {
	Manifest   []byte // app.yml (YAML)
	WebhookURL string // where GitHub sends deliveries: https://HOST/webhook
	Name       string // the App's name, when not app.yml's (names are unique on GitHub)
	Org        string // register under this organization instead of the person's account
	GitHubURL  string // GitHub's web address (default https://github.com; GitHub Enterprise Server: https://HOST)
	APIURL     string // its REST API (default: api.github.com for github.com, else GitHubURL/api/v3)
	Dir        string // where the files go (created 0700 when missing)
	Listen     string // the local page's address (default 127.0.0.1:0, a free port)
	Client     *http.Client
}

// Result is the registered App.
type Result struct {
	AppID   int64
	Slug    string
	HTMLURL string // the App's page on GitHub (install it from there)
	Files   []string
}

// Flow is a registration in progress: its local page is up.
type Flow struct {
	opts     Options
	manifest []byte // JSON
	state    string
	ln       net.Listener
	srv      *http.Server
	action   string

	mu   sync.Mutex
	busy bool // a code is being exchanged, or was
	done chan outcome
}

type outcome struct {
	res *Result
	err error
}

// Start checks the options, refuses to overwrite any file and starts the local
// page. Open URL in a browser, then Wait.
func Start(opts Options) (*Flow, error) {
	if opts.GitHubURL == "" {
		opts.GitHubURL = "https://github.com"
	}
	web, err := url.Parse(strings.TrimRight(opts.GitHubURL, "/"))
	if err != nil || (web.Scheme != "https" && web.Scheme != "http") || web.Host == "" || web.User != nil {
		return nil, fmt.Errorf("GitHub URL %q: want https://HOST", opts.GitHubURL)
	}
	if opts.APIURL == "" {
		if strings.EqualFold(web.Host, "github.com") {
			opts.APIURL = "https://api.github.com/"
		} else {
			opts.APIURL = web.String() + "/api/v3/"
		}
	}
	if !strings.HasSuffix(opts.APIURL, "/") {
		opts.APIURL += "/"
	}
	if u, err := url.Parse(opts.APIURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("GitHub API URL %q: want https://HOST/...", opts.APIURL)
	}
	hook, err := url.Parse(opts.WebhookURL)
	if opts.WebhookURL == "" || err != nil || (hook.Scheme != "https" && hook.Scheme != "http") || hook.Host == "" || hook.User != nil {
		return nil, fmt.Errorf("webhook URL %q: want the https://HOST/webhook address where GitHub can reach countersign", opts.WebhookURL)
	}
	if opts.Org != "" && strings.ContainsAny(opts.Org, "/?#% ") {
		return nil, fmt.Errorf("organization %q: not an organization login", opts.Org)
	}
	if opts.Dir == "" {
		return nil, errors.New("no directory for the App's files")
	}
	for _, f := range []string{AppIDFile, PrivateKeyFile, WebhookSecretFile} {
		p := filepath.Join(opts.Dir, f)
		if _, err := os.Lstat(p); err == nil {
			return nil, fmt.Errorf("%s exists: move it away or choose another directory (nothing was registered)", p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: 30 * time.Second}
	}
	if host, _, err := net.SplitHostPort(opts.Listen); err != nil || !loopback(host) {
		// The page hands out the flow's state: anyone who reaches it could
		// finish the registration with an App of their own.
		return nil, fmt.Errorf("local page: %q is not a loopback address (127.0.0.1:PORT, [::1]:PORT or localhost:PORT)", opts.Listen)
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("local page: %w", err)
	}
	f := &Flow{opts: opts, ln: ln, state: randomHex(16), done: make(chan outcome, 1)}
	redirect := "http://" + ln.Addr().String() + "/callback"
	if f.manifest, err = Manifest(opts.Manifest, opts.WebhookURL, redirect, opts.Name); err != nil {
		ln.Close()
		return nil, err
	}
	newApp := "/settings/apps/new"
	if opts.Org != "" {
		newApp = "/organizations/" + url.PathEscape(opts.Org) + "/settings/apps/new"
	}
	f.action = web.String() + newApp + "?state=" + f.state

	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", f.page)
	mux.HandleFunc("GET /callback", f.callback)
	f.srv = &http.Server{Handler: securityHeaders(ln.Addr().String(), mux), ReadHeaderTimeout: 10 * time.Second}
	go f.srv.Serve(ln)
	return f, nil
}

// URL is the local page to open.
func (f *Flow) URL() string { return "http://" + f.ln.Addr().String() + "/" }

// Wait waits until the App is registered and its files written (or it failed,
// or ctx ended), then stops the local page.
func (f *Flow) Wait(ctx context.Context) (*Result, error) {
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		f.srv.Shutdown(sctx)
	}()
	select {
	case o := <-f.done:
		return o.res, o.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Manifest turns app.yml into the manifest GitHub takes (JSON), with the
// webhook URL, the redirect back to the local page, and the name when given.
func Manifest(appYML []byte, webhookURL, redirectURL, name string) ([]byte, error) {
	var m map[string]any
	if err := yaml.Unmarshal(appYML, &m); err != nil {
		return nil, fmt.Errorf("app.yml: %w", err)
	}
	if m == nil {
		return nil, errors.New("app.yml: empty manifest")
	}
	hook, _ := m["hook_attributes"].(map[string]any)
	if hook == nil {
		hook = map[string]any{"active": true}
	}
	hook["url"] = webhookURL
	m["hook_attributes"] = hook
	m["redirect_url"] = redirectURL
	if name != "" {
		m["name"] = name
	}
	if s, _ := m["name"].(string); s == "" {
		return nil, errors.New("app.yml: no name")
	}
	if s, _ := m["url"].(string); s == "" {
		return nil, errors.New("app.yml: no url (the App's homepage)")
	}
	return json.Marshal(m)
}

var pageTmpl = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Register countersign</title></head>
<body>
<h1>Register the countersign GitHub App</h1>
<p>The button sends this manifest to <strong>{{.Host}}</strong>{{if .Org}} for the organization <strong>{{.Org}}</strong>{{end}}.
GitHub shows what the App may do and asks you to confirm; then it sends you back here,
and countersign writes the App's id, private key and webhook secret to <code>{{.Dir}}</code>.</p>
<p>Webhook URL: <code>{{.Hook}}</code></p>
<form method="post" action="{{.Action}}">
<input type="hidden" name="manifest" value="{{.Manifest}}">
<button type="submit">Create the GitHub App on {{.Host}}</button>
</form>
<details><summary>The manifest</summary><pre>{{.Pretty}}</pre></details>
</body></html>
`))

var doneTmpl = template.Must(template.New("done").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>countersign registered</title></head>
<body>
{{if .Err}}<h1>Registration failed</h1><p>{{.Err}}</p>
{{else}}<h1>countersign is registered</h1>
<p>App id {{.Res.AppID}}. Its files are in <code>{{.Dir}}</code>; the terminal shows the command to run.</p>
<p>Next: <a href="{{.Res.HTMLURL}}/installations/new">install the App</a> on the repositories countersign should watch.</p>{{end}}
</body></html>
`))

func (f *Flow) page(w http.ResponseWriter, r *http.Request) {
	web, _ := url.Parse(f.opts.GitHubURL)
	var pretty strings.Builder
	var v any
	json.Unmarshal(f.manifest, &v)
	b, _ := json.MarshalIndent(v, "", "  ")
	pretty.Write(b)
	pageTmpl.Execute(w, map[string]any{
		"Host": web.Host, "Org": f.opts.Org, "Dir": f.opts.Dir, "Hook": f.opts.WebhookURL,
		"Action": template.URL(f.action), "Manifest": string(f.manifest), "Pretty": pretty.String(),
	})
}

// callback receives GitHub's redirect: it checks the state, exchanges the code
// once, writes the files and reports the outcome to Wait.
func (f *Flow) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state, code := q.Get("state"), q.Get("code")
	if subtle.ConstantTimeCompare([]byte(state), []byte(f.state)) != 1 {
		http.Error(w, "This link does not belong to this registration (state mismatch): start again from the page countersign register printed.", http.StatusForbidden)
		return
	}
	if code == "" {
		http.Error(w, "GitHub sent no code.", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	if f.busy {
		f.mu.Unlock()
		http.Error(w, "This registration is already complete (or under way).", http.StatusConflict)
		return
	}
	f.busy = true
	f.mu.Unlock()

	// The code is good once: the exchange must finish even if the person
	// leaves the page, or the App would exist with no files to run it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), time.Minute)
	defer cancel()
	res, err := f.exchange(ctx, code)
	if err == nil {
		err = f.write(res)
		if err != nil {
			err = fmt.Errorf("the App %d was created but its files could not be written (%w): delete it at %s/advanced, or generate a new private key there", res.app.ID, err, res.app.HTMLURL)
		}
	}
	var out *Result
	if err == nil {
		out = &Result{AppID: res.app.ID, Slug: res.app.Slug, HTMLURL: res.app.HTMLURL}
		for _, n := range []string{AppIDFile, PrivateKeyFile, WebhookSecretFile} {
			out.Files = append(out.Files, filepath.Join(f.opts.Dir, n))
		}
		w.WriteHeader(http.StatusOK)
	} else {
		w.WriteHeader(http.StatusBadGateway)
	}
	doneTmpl.Execute(w, map[string]any{"Res": out, "Err": errString(err), "Dir": f.opts.Dir})
	f.done <- outcome{out, err}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// conversion is the answer of POST /app-manifests/{code}/conversions.
type conversion struct {
	ID            int64   `json:"id"`
	Slug          string  `json:"slug"`
	HTMLURL       string  `json:"html_url"`
	WebhookSecret *string `json:"webhook_secret"`
	PEM           string  `json:"pem"`
}

type exchanged struct{ app conversion }

func (f *Flow) exchange(ctx context.Context, code string) (*exchanged, error) {
	u := f.opts.APIURL + "app-manifests/" + url.PathEscape(code) + "/conversions"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	resp, err := f.opts.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("exchanging the code: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("exchanging the code: %w", err)
	}
	if resp.StatusCode != http.StatusCreated {
		var e struct {
			Message string `json:"message"`
		}
		json.Unmarshal(body, &e)
		if resp.StatusCode == http.StatusNotFound {
			return nil, fmt.Errorf("exchanging the code: GitHub answered 404 (%s): the code is unknown, used or older than an hour; start again", e.Message)
		}
		return nil, fmt.Errorf("exchanging the code: GitHub answered %d (%s)", resp.StatusCode, e.Message)
	}
	var c conversion
	if err := json.Unmarshal(body, &c); err != nil {
		return nil, fmt.Errorf("exchanging the code: the answer is not the App: %w", err)
	}
	switch {
	case c.ID <= 0:
		return nil, errors.New("exchanging the code: the answer has no App id")
	case !strings.Contains(c.PEM, "PRIVATE KEY"):
		return nil, errors.New("exchanging the code: the answer has no private key")
	case c.WebhookSecret == nil || strings.TrimSpace(*c.WebhookSecret) == "":
		return nil, fmt.Errorf("the App %d has no webhook secret: set one at %s (General → Webhook secret) and write it to %s", c.ID, c.HTMLURL, filepath.Join(f.opts.Dir, WebhookSecretFile))
	}
	return &exchanged{app: c}, nil
}

// write writes the three files, 0600, never over an existing one.
func (f *Flow) write(x *exchanged) error {
	if err := os.MkdirAll(f.opts.Dir, 0o700); err != nil {
		return err
	}
	files := []struct{ name, data string }{
		{AppIDFile, fmt.Sprintf("%d", x.app.ID)},
		{PrivateKeyFile, x.app.PEM},
		{WebhookSecretFile, *x.app.WebhookSecret},
	}
	for _, file := range files {
		p := filepath.Join(f.opts.Dir, file.name)
		fh, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		_, err = fh.WriteString(file.data)
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

// securityHeaders answers only requests for the page's own address (a web
// page that rebinds its domain name to 127.0.0.1 cannot read the state), and
// keeps the page from being framed or cached, and from running any script.
func securityHeaders(host string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host != host {
			http.Error(w, "wrong host", http.StatusMisdirectedRequest)
			return
		}
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action *; frame-ancestors 'none'")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Referrer-Policy", "no-referrer")
		h.ServeHTTP(w, r)
	})
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("register: " + err.Error())
	}
	return hex.EncodeToString(b)
}

// loopback reports whether host names this machine only.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

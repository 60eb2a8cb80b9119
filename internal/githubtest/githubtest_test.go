package githubtest

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/golang-jwt/jwt/v4"
	"github.com/google/go-github/v60/github"
)

const (
	repoName = "acme/widgets"
	instID   = int64(7)
)

var hookSecret = []byte("s3cret")

// ---- webhook receiver ----

type gotHook struct {
	ID, Event, Action, Sender, SenderType string
	Payload                               map[string]any
	Raw                                   []byte
}

type receiver struct {
	t      *testing.T
	mu     sync.Mutex
	hooks  []gotHook
	badSig int
	srv    *httptest.Server
	status int
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{t: t, status: http.StatusAccepted}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	m := hmac.New(sha256.New, hookSecret)
	m.Write(body)
	want := "sha256=" + hex.EncodeToString(m.Sum(nil))
	r.mu.Lock()
	defer r.mu.Unlock()
	if !hmac.Equal([]byte(want), []byte(req.Header.Get("X-Hub-Signature-256"))) ||
		req.Header.Get("Content-Type") != "application/json" ||
		!strings.HasPrefix(req.Header.Get("User-Agent"), "GitHub-Hookshot/") {
		r.badSig++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var p map[string]any
	_ = json.Unmarshal(body, &p)
	h := gotHook{ID: req.Header.Get("X-GitHub-Delivery"), Event: req.Header.Get("X-GitHub-Event"), Payload: p, Raw: body}
	h.Action, _ = p["action"].(string)
	if snd, ok := p["sender"].(map[string]any); ok {
		h.Sender, _ = snd["login"].(string)
		h.SenderType, _ = snd["type"].(string)
	}
	r.hooks = append(r.hooks, h)
	w.WriteHeader(r.status)
}

func (r *receiver) all() []gotHook {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.badSig > 0 {
		r.t.Errorf("%d webhooks with a bad signature or headers", r.badSig)
	}
	return append([]gotHook(nil), r.hooks...)
}

// since returns the hooks after the first n.
func (r *receiver) since(n int) []gotHook { return r.all()[n:] }

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.hooks)
}

func kinds(hs []gotHook) []string {
	out := []string{}
	for _, h := range hs {
		k := h.Event
		if h.Action != "" {
			k += "." + h.Action
		}
		out = append(out, k)
	}
	return out
}

// ---- environment ----

type env struct {
	t      *testing.T
	s      *Server
	hooks  *receiver
	client *github.Client
	itr    *ghinstallation.Transport
	ctx    context.Context
}

var (
	keyOnce sync.Once
	testKey *rsa.PrivateKey
)

// sharedKey keeps the suite fast: one RSA key for every test server but
// TestNewGeneratesKey.
func sharedKey(t *testing.T) *rsa.PrivateKey {
	keyOnce.Do(func() {
		var err error
		testKey, err = rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
	})
	return testKey
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, Options{})
}

func newEnvWith(t *testing.T, opts Options) *env {
	t.Helper()
	opts.PrivateKey = sharedKey(t)
	s := New(opts)
	t.Cleanup(s.Close)
	s.AddRepo(repoName, instID)
	s.SetPermission(repoName, "alice", "write")
	s.SetPermission(repoName, "bob", "maintain")
	rcv := newReceiver(t)
	s.SetWebhook(rcv.srv.URL, hookSecret)

	itr, err := ghinstallation.New(http.DefaultTransport, s.AppID(), instID, s.PrivateKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	client, err := github.NewClient(&http.Client{Transport: itr}).WithEnterpriseURLs(s.URL(), s.URL())
	if err != nil {
		t.Fatal(err)
	}
	itr.BaseURL = strings.TrimRight(client.BaseURL.String(), "/")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return &env{t: t, s: s, hooks: rcv, client: client, itr: itr, ctx: ctx}
}

func (e *env) wait() {
	e.t.Helper()
	if err := e.s.WaitWebhooks(e.ctx); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) noErr() {
	e.t.Helper()
	if err := e.s.Err(); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) token() string {
	e.t.Helper()
	tok, err := e.itr.Token(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return tok
}

// raw sends a request with the given Authorization header value.
func (e *env) raw(method, path, auth string, body any, hdr map[string]string) (*http.Response, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(e.ctx, method, strings.TrimRight(e.s.URL(), "/")+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func (e *env) appJWT(key *rsa.PrivateKey, iss any, iat, exp time.Time) string {
	e.t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"iss": iss, "iat": iat.Unix(), "exp": exp.Unix()})
	ss, err := tok.SignedString(key)
	if err != nil {
		e.t.Fatal(err)
	}
	return ss
}

func statusOf(err error) int {
	var er *github.ErrorResponse
	if errors.As(err, &er) {
		return er.Response.StatusCode
	}
	var rl *github.RateLimitError
	if errors.As(err, &rl) {
		return rl.Response.StatusCode
	}
	var ab *github.AbuseRateLimitError
	if errors.As(err, &ab) {
		return ab.Response.StatusCode
	}
	return 0
}

// ---- tests ----

func TestNewGeneratesKey(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	key, err := jwt.ParseRSAPrivateKeyFromPEM(s.PrivateKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	if key.N.BitLen() != 2048 {
		t.Fatalf("key size %d", key.N.BitLen())
	}
	if s.BotLogin() != "countersign[bot]" || s.AppID() != 1 {
		t.Fatalf("defaults: %q %d", s.BotLogin(), s.AppID())
	}
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") || !strings.HasSuffix(s.URL(), "/") {
		t.Fatalf("URL %q", s.URL())
	}
}

func TestAppAuthAndTokens(t *testing.T) {
	e := newEnv(t)
	key := sharedKey(t)
	now := time.Now()
	good := e.appJWT(key, "1", now.Add(-30*time.Second), now.Add(2*time.Minute))

	resp, body := e.raw("GET", "/api/v3/app", "Bearer "+good, nil, nil)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"slug":"countersign"`) {
		t.Fatalf("GET /app: %d %s", resp.StatusCode, body)
	}
	// numeric iss is accepted too
	if resp, _ := e.raw("GET", "/app", "Bearer "+e.appJWT(key, 1, now, now.Add(time.Minute)), nil, nil); resp.StatusCode != 200 {
		t.Fatalf("numeric iss: %d", resp.StatusCode)
	}

	resp, body = e.raw("POST", "/api/v3/app/installations/7/access_tokens", "Bearer "+good, nil, nil)
	if resp.StatusCode != 201 {
		t.Fatalf("access_tokens: %d %s", resp.StatusCode, body)
	}
	var it github.InstallationToken
	if err := json.Unmarshal(body, &it); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(it.GetToken(), "ghs_") || it.GetExpiresAt().Sub(time.Now()) < 59*time.Minute {
		t.Fatalf("token %q expires %v", it.GetToken(), it.GetExpiresAt())
	}
	if resp, _ := e.raw("GET", "/api/v3/repos/acme/widgets", "token "+it.GetToken(), nil, nil); resp.StatusCode != 200 {
		t.Fatalf("repo with token: %d", resp.StatusCode)
	}

	otherKey, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	for name, auth := range map[string]string{
		"no auth":   "",
		"wrong key": "Bearer " + e.appJWT(otherKey, "1", now, now.Add(time.Minute)),
		"expired":   "Bearer " + e.appJWT(key, "1", now.Add(-10*time.Minute), now.Add(-5*time.Minute)),
		"too long":  "Bearer " + e.appJWT(key, "1", now, now.Add(time.Hour)),
		"wrong iss": "Bearer " + e.appJWT(key, "2", now, now.Add(time.Minute)),
		"token":     "token " + it.GetToken(),
		"not a jwt": "Bearer abc",
		"hs256 token": "Bearer " + func() string {
			s, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"iss": "1"}).SignedString([]byte("k"))
			return s
		}(),
	} {
		if resp, body := e.raw("POST", "/api/v3/app/installations/7/access_tokens", auth, nil, nil); resp.StatusCode != 401 {
			t.Errorf("%s: %d %s", name, resp.StatusCode, body)
		}
	}
	if resp, _ := e.raw("POST", "/api/v3/app/installations/99/access_tokens", "Bearer "+good, nil, nil); resp.StatusCode != 404 {
		t.Errorf("unknown installation: %d", resp.StatusCode)
	}

	// Installation tokens on repository endpoints.
	if resp, _ := e.raw("GET", "/api/v3/repos/acme/widgets", "", nil, nil); resp.StatusCode != 401 {
		t.Errorf("no token: %d", resp.StatusCode)
	}
	if resp, _ := e.raw("GET", "/api/v3/repos/acme/widgets", "token ghs_bogus", nil, nil); resp.StatusCode != 401 {
		t.Errorf("bogus token: %d", resp.StatusCode)
	}
	if resp, _ := e.raw("GET", "/api/v3/repos/acme/widgets", "Bearer "+good, nil, nil); resp.StatusCode != 401 {
		t.Errorf("jwt on repo endpoint: %d", resp.StatusCode)
	}
	e.s.AddRepo("other/thing", 8)
	if resp, _ := e.raw("GET", "/api/v3/repos/other/thing", "token "+it.GetToken(), nil, nil); resp.StatusCode != 404 {
		t.Errorf("repo of another installation: %d", resp.StatusCode)
	}
	if resp, _ := e.raw("GET", "/api/v3/repos/acme/nope", "token "+it.GetToken(), nil, nil); resp.StatusCode != 404 {
		t.Errorf("unknown repo: %d", resp.StatusCode)
	}

	// ghinstallation end to end, then token expiry.
	repo, _, err := e.client.Repositories.Get(e.ctx, "acme", "widgets")
	if err != nil {
		t.Fatal(err)
	}
	if repo.GetFullName() != repoName || repo.GetDefaultBranch() != "main" || repo.GetOwner().GetLogin() != "acme" || repo.GetID() == 0 {
		t.Fatalf("repo %+v", repo)
	}
	e.s.ExpireTokens()
	if resp, _ := e.raw("GET", "/api/v3/repos/acme/widgets", "token "+it.GetToken(), nil, nil); resp.StatusCode != 401 {
		t.Errorf("expired token: %d", resp.StatusCode)
	}
	var sawToken bool
	for _, r := range e.s.Requests() {
		if r.Method == "POST" && r.Path == "/app/installations/7/access_tokens" && r.Status == 201 {
			sawToken = true
		}
		if strings.HasPrefix(r.Path, "/api/v3") {
			t.Errorf("recorded path keeps the prefix: %q", r.Path)
		}
	}
	if !sawToken {
		t.Error("access_tokens call not recorded")
	}
}

func TestLabels(t *testing.T) {
	e := newEnv(t)
	n := e.s.OpenIssue(repoName, "alice", "Broken", "it broke")
	e.wait()
	start := e.hooks.count()

	labels, _, err := e.client.Issues.AddLabelsToIssue(e.ctx, "acme", "widgets", n, []string{"state:pending", "kind/bug"})
	if err != nil {
		t.Fatal(err)
	}
	if len(labels) != 2 {
		t.Fatalf("labels %v", labels)
	}
	if got := e.s.Labels(repoName, n); strings.Join(got, ",") != "kind/bug,state:pending" {
		t.Fatalf("labels %v", got)
	}
	// adding again changes nothing and sends nothing
	if _, _, err := e.client.Issues.AddLabelsToIssue(e.ctx, "acme", "widgets", n, []string{"State:Pending"}); err != nil {
		t.Fatal(err)
	}
	// {"labels": [...]} body form
	resp, body := e.raw("POST", fmt.Sprintf("/api/v3/repos/acme/widgets/issues/%d/labels", n), "token "+e.token(), map[string]any{"labels": []string{"triaged"}}, nil)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "triaged") {
		t.Fatalf("object body: %d %s", resp.StatusCode, body)
	}

	if _, err := e.client.Issues.RemoveLabelForIssue(e.ctx, "acme", "widgets", n, "state%3Apending"); err != nil {
		t.Fatal(err)
	}
	// go-github does not escape label names: callers pass them escaped
	if _, err := e.client.Issues.RemoveLabelForIssue(e.ctx, "acme", "widgets", n, url.PathEscape("kind/bug")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.Issues.RemoveLabelForIssue(e.ctx, "acme", "widgets", n, "kind/bug"); statusOf(err) != 404 {
		t.Fatalf("unescaped slash: %v", err)
	}
	_, err = e.client.Issues.RemoveLabelForIssue(e.ctx, "acme", "widgets", n, "state%3Apending")
	if statusOf(err) != 404 {
		t.Fatalf("removing an absent label: %v", err)
	}
	if _, _, err := e.client.Issues.ReplaceLabelsForIssue(e.ctx, "acme", "widgets", n, []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	if got := e.s.Labels(repoName, n); strings.Join(got, ",") != "a,b" {
		t.Fatalf("after replace %v", got)
	}

	// repository labels
	if _, _, err := e.client.Issues.CreateLabel(e.ctx, "acme", "widgets", &github.Label{Name: github.String("prio:high"), Color: github.String("ff0000")}); err != nil {
		t.Fatal(err)
	}
	_, _, err = e.client.Issues.CreateLabel(e.ctx, "acme", "widgets", &github.Label{Name: github.String("PRIO:HIGH")})
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response.StatusCode != 422 || len(er.Errors) != 1 || er.Errors[0].Code != "already_exists" {
		t.Fatalf("duplicate label: %v", err)
	}
	l, _, err := e.client.Issues.GetLabel(e.ctx, "acme", "widgets", "prio:high")
	if err != nil || l.GetColor() != "ff0000" {
		t.Fatalf("GetLabel: %v %v", l, err)
	}
	if _, _, err := e.client.Issues.EditLabel(e.ctx, "acme", "widgets", "prio:high", &github.Label{Description: github.String("urgent")}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.client.Issues.GetLabel(e.ctx, "acme", "widgets", "nope"); statusOf(err) != 404 {
		t.Fatalf("unknown label: %v", err)
	}
	all, _, err := e.client.Issues.ListLabels(e.ctx, "acme", "widgets", nil)
	if err != nil || len(all) != 6 {
		t.Fatalf("ListLabels %d %v", len(all), err)
	}
	if rl := e.s.RepoLabels(repoName); len(rl) != 6 || rl[5].Description != "urgent" {
		t.Fatalf("RepoLabels %+v", rl)
	}

	e.wait()
	want := []string{
		"label.created", "issues.labeled", "label.created", "issues.labeled", // state:pending, kind/bug
		"label.created", "issues.labeled", // triaged
		"issues.unlabeled", "issues.unlabeled",
		"issues.unlabeled", // replace: triaged removed
		"label.created", "issues.labeled", "label.created", "issues.labeled",
		"label.created", "label.edited",
	}
	got := e.hooks.since(start)
	if strings.Join(kinds(got), " ") != strings.Join(want, " ") {
		t.Fatalf("webhooks\n got %v\nwant %v", kinds(got), want)
	}
	for _, h := range got {
		if h.Sender != "countersign[bot]" || h.SenderType != "Bot" {
			t.Errorf("%s.%s sender %s/%s", h.Event, h.Action, h.Sender, h.SenderType)
		}
		if inst, _ := h.Payload["installation"].(map[string]any); inst["id"] != float64(instID) {
			t.Errorf("installation %v", h.Payload["installation"])
		}
		if repo, _ := h.Payload["repository"].(map[string]any); repo["full_name"] != repoName {
			t.Errorf("repository %v", h.Payload["repository"])
		}
	}
	if lab, _ := got[1].Payload["label"].(map[string]any); lab["name"] != "state:pending" {
		t.Errorf("labeled payload label %v", got[1].Payload["label"])
	}
	if ch, _ := got[len(got)-1].Payload["changes"].(map[string]any); ch["description"] == nil {
		t.Errorf("label.edited changes %v", got[len(got)-1].Payload["changes"])
	}

	var paths []string
	for _, r := range e.s.Requests() {
		if r.Method == "DELETE" {
			paths = append(paths, fmt.Sprintf("%s %d", r.Path, r.Status))
		}
	}
	wantPaths := fmt.Sprintf("/repos/acme/widgets/issues/%[1]d/labels/state:pending 200,/repos/acme/widgets/issues/%[1]d/labels/kind/bug 200,/repos/acme/widgets/issues/%[1]d/labels/kind/bug 404,/repos/acme/widgets/issues/%[1]d/labels/state:pending 404", n)
	if strings.Join(paths, ",") != wantPaths {
		t.Fatalf("DELETE requests %v", paths)
	}
	e.noErr()
}

func TestCommentsPagination(t *testing.T) {
	e := newEnv(t)
	n := e.s.OpenIssue(repoName, "alice", "Many comments", "")
	for i := 0; i < 64; i++ {
		if _, _, err := e.client.Issues.CreateComment(e.ctx, "acme", "widgets", n, &github.IssueComment{Body: github.String(fmt.Sprintf("c%d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	userComment := e.s.Comment(repoName, n, "alice", "from alice")

	var bodies []string
	opt := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 30}}
	pages := 0
	for {
		cs, resp, err := e.client.Issues.ListComments(e.ctx, "acme", "widgets", n, opt)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if pages == 1 {
			link := resp.Header.Get("Link")
			if !strings.Contains(link, `rel="next"`) || !strings.Contains(link, `rel="last"`) || !strings.Contains(link, "/api/v3/repos/acme/widgets/issues/") {
				t.Fatalf("Link %q", link)
			}
			if resp.NextPage != 2 || resp.LastPage != 3 {
				t.Fatalf("next %d last %d", resp.NextPage, resp.LastPage)
			}
		}
		for _, c := range cs {
			bodies = append(bodies, c.GetBody())
		}
		if resp.NextPage == 0 {
			if !strings.Contains(resp.Header.Get("Link"), `rel="prev"`) {
				t.Fatalf("last page Link %q", resp.Header.Get("Link"))
			}
			break
		}
		opt.Page = resp.NextPage
	}
	if pages != 3 || len(bodies) != 65 || bodies[0] != "c0" || bodies[63] != "c63" || bodies[64] != "from alice" {
		t.Fatalf("pages %d, %d comments, %q...%q", pages, len(bodies), bodies[0], bodies[len(bodies)-1])
	}
	// default per_page is 30; beyond the last page is empty
	cs, _, err := e.client.Issues.ListComments(e.ctx, "acme", "widgets", n, nil)
	if err != nil || len(cs) != 30 {
		t.Fatalf("default page: %d %v", len(cs), err)
	}
	cs, _, err = e.client.Issues.ListComments(e.ctx, "acme", "widgets", n, &github.IssueListCommentsOptions{ListOptions: github.ListOptions{Page: 9}})
	if err != nil || cs == nil || len(cs) != 0 {
		t.Fatalf("page 9: %v %v", cs, err)
	}

	views := e.s.Comments(repoName, n)
	first := views[0]
	edited, _, err := e.client.Issues.EditComment(e.ctx, "acme", "widgets", first.ID, &github.IssueComment{Body: github.String("c0 edited")})
	if err != nil || edited.GetBody() != "c0 edited" || edited.GetUser().GetLogin() != "countersign[bot]" {
		t.Fatalf("EditComment %v %v", edited, err)
	}
	got, _, err := e.client.Issues.GetComment(e.ctx, "acme", "widgets", userComment)
	if err != nil || got.GetUser().GetLogin() != "alice" || got.GetUser().GetType() != "User" {
		t.Fatalf("GetComment %v %v", got, err)
	}
	if _, _, err := e.client.Issues.GetComment(e.ctx, "acme", "widgets", 999999999); statusOf(err) != 404 {
		t.Fatalf("unknown comment: %v", err)
	}
	if _, _, err := e.client.Issues.CreateComment(e.ctx, "acme", "widgets", n, &github.IssueComment{Body: github.String("")}); statusOf(err) != 422 {
		t.Fatalf("empty comment: %v", err)
	}
	if _, _, err := e.client.Issues.CreateComment(e.ctx, "acme", "widgets", 4242, &github.IssueComment{Body: github.String("x")}); statusOf(err) != 404 {
		t.Fatalf("comment on unknown issue: %v", err)
	}
	if _, err := e.client.Issues.DeleteComment(e.ctx, "acme", "widgets", views[1].ID); err != nil {
		t.Fatal(err)
	}
	if iv, _ := e.s.Issue(repoName, n); len(iv.Comments) != 64 || iv.Comments[0].Body != "c0 edited" {
		t.Fatalf("after edit/delete: %d comments, first %q", len(iv.Comments), iv.Comments[0].Body)
	}

	e.wait()
	hs := e.hooks.all()
	var created, userCreated int
	var editedHook, deletedHook *gotHook
	for i, h := range hs {
		switch {
		case h.Event == "issue_comment" && h.Action == "created" && h.SenderType == "Bot":
			created++
		case h.Event == "issue_comment" && h.Action == "created" && h.Sender == "alice" && h.SenderType == "User":
			userCreated++
		case h.Event == "issue_comment" && h.Action == "edited":
			editedHook = &hs[i]
		case h.Event == "issue_comment" && h.Action == "deleted":
			deletedHook = &hs[i]
		}
	}
	if created != 64 || userCreated != 1 || editedHook == nil || deletedHook == nil {
		t.Fatalf("created %d/%d edited %v deleted %v", created, userCreated, editedHook != nil, deletedHook != nil)
	}
	ch := editedHook.Payload["changes"].(map[string]any)["body"].(map[string]any)
	if ch["from"] != "c0" || editedHook.Payload["comment"].(map[string]any)["body"] != "c0 edited" {
		t.Fatalf("edited payload %s", editedHook.Raw)
	}
	e.noErr()
}

func TestETag(t *testing.T) {
	e := newEnv(t)
	n := e.s.OpenIssue(repoName, "alice", "Cache me", "")
	auth := "token " + e.token()
	path := fmt.Sprintf("/api/v3/repos/acme/widgets/issues/%d", n)

	resp, body := e.raw("GET", path, auth, nil, nil)
	etag := resp.Header.Get("ETag")
	if resp.StatusCode != 200 || !strings.HasPrefix(etag, `"`) || len(body) == 0 {
		t.Fatalf("first GET %d etag %q", resp.StatusCode, etag)
	}
	for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "X-GitHub-Request-Id"} {
		if resp.Header.Get(h) == "" {
			t.Errorf("missing header %s", h)
		}
	}
	resp, body = e.raw("GET", path, auth, nil, map[string]string{"If-None-Match": etag})
	if resp.StatusCode != 304 || len(body) != 0 || resp.Header.Get("ETag") != etag {
		t.Fatalf("conditional GET %d %q", resp.StatusCode, body)
	}
	resp, _ = e.raw("GET", path, auth, nil, map[string]string{"If-None-Match": `W/` + etag})
	if resp.StatusCode != 304 {
		t.Fatalf("weak conditional GET %d", resp.StatusCode)
	}
	e.s.AddLabels(repoName, n, "bob", "bug")
	resp, _ = e.raw("GET", path, auth, nil, map[string]string{"If-None-Match": etag})
	if resp.StatusCode != 200 || resp.Header.Get("ETag") == etag {
		t.Fatalf("after change %d", resp.StatusCode)
	}
	// PATCH answers carry no ETag
	resp, _ = e.raw("PATCH", path, auth, map[string]any{"title": "x"}, nil)
	if resp.StatusCode != 200 || resp.Header.Get("ETag") != "" {
		t.Fatalf("PATCH %d etag %q", resp.StatusCode, resp.Header.Get("ETag"))
	}
	var statuses []int
	for _, r := range e.s.Requests() {
		if r.Method == "GET" {
			statuses = append(statuses, r.Status)
		}
	}
	if fmt.Sprint(statuses) != "[200 304 304 200]" {
		t.Fatalf("recorded %v", statuses)
	}
}

func TestPullRequests(t *testing.T) {
	e := newEnv(t)
	e.s.SetFile(repoName, "README.md", "hi")
	issue := e.s.OpenIssue(repoName, "alice", "Bug", "")
	n, sha := e.s.OpenPR(repoName, "alice", PROptions{
		Title: "Fix bug", Body: "This fixes #" + fmt.Sprint(issue) + ".", Draft: true,
		Commits: []Commit{{Message: "first"}, {Author: "bob", Message: "second", Files: []string{"b.go"}}},
		Files:   []string{"README.md", "a.go"},
	})
	if n != issue+1 || len(sha) != 40 {
		t.Fatalf("OpenPR %d %q", n, sha)
	}
	pr, _, err := e.client.PullRequests.Get(e.ctx, "acme", "widgets", n)
	if err != nil {
		t.Fatal(err)
	}
	if pr.GetHead().GetSHA() != sha || !pr.GetDraft() || pr.GetBase().GetRef() != "main" || pr.GetUser().GetLogin() != "alice" || pr.GetState() != "open" {
		t.Fatalf("pr %+v", pr)
	}
	if _, _, err := e.client.PullRequests.Get(e.ctx, "acme", "widgets", issue); statusOf(err) != 404 {
		t.Fatalf("issue as PR: %v", err)
	}
	asIssue, _, err := e.client.Issues.Get(e.ctx, "acme", "widgets", n)
	if err != nil || !asIssue.IsPullRequest() {
		t.Fatalf("PR as issue: %v %v", asIssue, err)
	}
	commits, _, err := e.client.PullRequests.ListCommits(e.ctx, "acme", "widgets", n, nil)
	if err != nil || len(commits) != 2 || commits[1].GetSHA() != sha || commits[1].GetAuthor().GetLogin() != "bob" || commits[0].GetCommit().GetMessage() != "first" {
		t.Fatalf("commits %v %v", commits, err)
	}
	files, _, err := e.client.PullRequests.ListFiles(e.ctx, "acme", "widgets", n, nil)
	if err != nil || len(files) != 3 {
		t.Fatalf("files %v %v", files, err)
	}
	status := map[string]string{}
	for _, f := range files {
		status[f.GetFilename()] = f.GetStatus()
	}
	if status["README.md"] != "modified" || status["a.go"] != "added" || status["b.go"] != "added" {
		t.Fatalf("file statuses %v", status)
	}

	e.s.ReadyForReview(repoName, n, "alice")
	e.s.Review(repoName, n, "bob", "APPROVED", "lgtm")
	if id := e.s.Review(repoName, n, "alice", "APPROVED", "self"); id != 0 {
		t.Fatal("self approval accepted")
	}
	if e.s.Err() == nil {
		t.Fatal("self approval not reported")
	}
	newSHA := e.s.Push(repoName, n, Commit{Message: "third"})
	reviews, _, err := e.client.PullRequests.ListReviews(e.ctx, "acme", "widgets", n, nil)
	if err != nil || len(reviews) != 1 || reviews[0].GetState() != "APPROVED" || reviews[0].GetCommitID() != sha {
		t.Fatalf("reviews %v %v", reviews, err)
	}
	prs, _, err := e.client.PullRequests.List(e.ctx, "acme", "widgets", &github.PullRequestListOptions{Head: "acme:" + "alice-patch-2"})
	if err != nil || len(prs) != 1 || prs[0].GetHead().GetSHA() != newSHA {
		t.Fatalf("list by head %v %v", prs, err)
	}
	e.s.Comment(repoName, n, "bob", "nice")
	merge := e.s.MergePR(repoName, n, "bob")
	if len(merge) != 40 || e.s.HeadSHA(repoName) != merge {
		t.Fatalf("merge sha %q", merge)
	}
	iv, _ := e.s.Issue(repoName, issue)
	if iv.State != "closed" || iv.StateReason != "completed" || iv.ClosedBy != "bob" {
		t.Fatalf("closing keyword: %+v", iv)
	}
	pv, _ := e.s.Issue(repoName, n)
	if !pv.Merged || pv.State != "closed" || pv.MergedBy != "bob" {
		t.Fatalf("merged PR %+v", pv)
	}

	e.wait()
	want := "issues.opened pull_request.opened pull_request.ready_for_review pull_request_review.submitted pull_request.synchronize issue_comment.created pull_request.closed push issues.closed"
	hs := e.hooks.all()
	if got := strings.Join(kinds(hs), " "); got != want {
		t.Fatalf("webhooks\n got %s\nwant %s", got, want)
	}
	for _, h := range hs {
		if h.SenderType != "User" {
			t.Errorf("%s sender type %s", h.Event, h.SenderType)
		}
	}
	if st := hs[3].Payload["review"].(map[string]any)["state"]; st != "approved" {
		t.Errorf("webhook review state %v", st)
	}
	if hs[4].Payload["before"] != sha || hs[4].Payload["after"] != newSHA {
		t.Errorf("synchronize %v %v", hs[4].Payload["before"], hs[4].Payload["after"])
	}
	if _, ok := hs[5].Payload["issue"].(map[string]any)["pull_request"]; !ok {
		t.Error("issue_comment on a PR lacks issue.pull_request")
	}
	if merged := hs[6].Payload["pull_request"].(map[string]any)["merged"]; merged != true {
		t.Errorf("closed merged=%v", merged)
	}
	if hs[8].Sender != "bob" || hs[8].Payload["issue"].(map[string]any)["state_reason"] != "completed" {
		t.Errorf("issues.closed %s %v", hs[8].Sender, hs[8].Payload["issue"])
	}
	if hs[7].Payload["ref"] != "refs/heads/main" {
		t.Errorf("push ref %v", hs[7].Payload["ref"])
	}
}

func TestCheckRunsAndStatuses(t *testing.T) {
	e := newEnv(t)
	n, sha := e.s.OpenPR(repoName, "alice", PROptions{Title: "x"})
	e.wait()
	start := e.hooks.count()

	cr, _, err := e.client.Checks.CreateCheckRun(e.ctx, "acme", "widgets", github.CreateCheckRunOptions{
		Name: "countersign", HeadSHA: sha, Status: github.String("in_progress"),
		Output: &github.CheckRunOutput{Title: github.String("Waiting"), Summary: github.String("2 of 3")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if cr.GetStatus() != "in_progress" || cr.GetApp().GetSlug() != "countersign" || len(cr.PullRequests) != 1 || cr.PullRequests[0].GetNumber() != n {
		t.Fatalf("created %+v", cr)
	}
	if _, _, err := e.client.Checks.CreateCheckRun(e.ctx, "acme", "widgets", github.CreateCheckRunOptions{Name: "x", HeadSHA: strings.Repeat("0", 40)}); statusOf(err) != 422 {
		t.Fatalf("unknown sha: %v", err)
	}
	if _, _, err := e.client.Checks.UpdateCheckRun(e.ctx, "acme", "widgets", cr.GetID(), github.UpdateCheckRunOptions{Status: github.String("completed")}); statusOf(err) != 422 {
		t.Fatalf("completed without conclusion: %v", err)
	}
	up, _, err := e.client.Checks.UpdateCheckRun(e.ctx, "acme", "widgets", cr.GetID(), github.UpdateCheckRunOptions{
		Name: "countersign", Conclusion: github.String("success"),
		Output: &github.CheckRunOutput{Title: github.String("Done"), Summary: github.String("3 of 3"), Text: github.String("details")},
	})
	if err != nil || up.GetStatus() != "completed" || up.GetConclusion() != "success" || up.GetCompletedAt().IsZero() {
		t.Fatalf("updated %+v %v", up, err)
	}
	got, _, err := e.client.Checks.GetCheckRun(e.ctx, "acme", "widgets", cr.GetID())
	if err != nil || got.GetOutput().GetText() != "details" {
		t.Fatalf("get %v %v", got, err)
	}

	ciID := e.s.CheckRun(repoName, sha, "build", "in_progress", "", "ci")
	if e.s.CheckRun(repoName, sha, "build", "completed", "failure", "ci") != ciID {
		t.Fatal("CheckRun did not update the pending run")
	}
	res, _, err := e.client.Checks.ListCheckRunsForRef(e.ctx, "acme", "widgets", sha, nil)
	if err != nil || res.GetTotal() != 2 || len(res.CheckRuns) != 2 {
		t.Fatalf("list %v %v", res, err)
	}
	res, _, err = e.client.Checks.ListCheckRunsForRef(e.ctx, "acme", "widgets", sha, &github.ListCheckRunsOptions{CheckName: github.String("build")})
	if err != nil || res.GetTotal() != 1 || res.CheckRuns[0].GetConclusion() != "failure" || res.CheckRuns[0].GetApp().GetSlug() != "ci" {
		t.Fatalf("filtered %v %v", res, err)
	}
	// by branch name too
	if res, _, err := e.client.Checks.ListCheckRunsForRef(e.ctx, "acme", "widgets", "alice-patch-1", nil); err != nil || res.GetTotal() != 2 {
		t.Fatalf("by branch %v %v", res, err)
	}
	if _, _, err := e.client.Checks.UpdateCheckRun(e.ctx, "acme", "widgets", ciID, github.UpdateCheckRunOptions{Name: "build"}); statusOf(err) != 403 {
		t.Fatalf("updating another app's run: %v", err)
	}
	views := e.s.CheckRuns(repoName, sha)
	if len(views) != 2 || views[0].Summary != "3 of 3" || views[0].App != "countersign" || views[1].Conclusion != "failure" {
		t.Fatalf("views %+v", views)
	}

	e.s.SetStatus(repoName, sha, "ci/legacy", "pending", "http://ci/1")
	if _, _, err := e.client.Repositories.CreateStatus(e.ctx, "acme", "widgets", sha, &github.RepoStatus{State: github.String("success"), Context: github.String("countersign")}); err != nil {
		t.Fatal(err)
	}
	e.s.SetStatus(repoName, sha, "ci/legacy", "success", "http://ci/1")
	comb, _, err := e.client.Repositories.GetCombinedStatus(e.ctx, "acme", "widgets", sha, nil)
	if err != nil || comb.GetState() != "success" || comb.GetTotalCount() != 2 {
		t.Fatalf("combined %+v %v", comb, err)
	}
	sts, _, err := e.client.Repositories.ListStatuses(e.ctx, "acme", "widgets", sha, nil)
	if err != nil || len(sts) != 3 || sts[0].GetState() != "success" {
		t.Fatalf("statuses %v %v", sts, err)
	}

	e.wait()
	hs := e.hooks.since(start)
	want := "check_run.created check_run.completed check_run.created check_run.completed status status status"
	if got := strings.Join(kinds(hs), " "); got != want {
		t.Fatalf("webhooks\n got %s\nwant %s", got, want)
	}
	if hs[0].SenderType != "Bot" || hs[0].Sender != "countersign[bot]" || hs[2].Sender != "ci[bot]" {
		t.Errorf("senders %s %s", hs[0].Sender, hs[2].Sender)
	}
	prs := hs[3].Payload["check_run"].(map[string]any)["pull_requests"].([]any)
	if len(prs) != 1 || prs[0].(map[string]any)["number"] != float64(n) {
		t.Errorf("check_run.pull_requests %v", prs)
	}
	e.noErr()
}

func TestContentsPermissionsTeams(t *testing.T) {
	e := newEnv(t)
	cfg := strings.Repeat("rules:\n  - name: x\n", 20)
	e.s.SetFile(repoName, ".github/countersign.yml", cfg)
	e.s.SetFile(repoName, ".github/other.yml", "a")
	e.s.AddTeam("acme", "core", "alice", "carol")

	fc, _, _, err := e.client.Repositories.GetContents(e.ctx, "acme", "widgets", ".github/countersign.yml", &github.RepositoryContentGetOptions{Ref: "main"})
	if err != nil {
		t.Fatal(err)
	}
	content, err := fc.GetContent()
	if err != nil || content != cfg || fc.GetEncoding() != "base64" || fc.GetSHA() == "" {
		t.Fatalf("content %q %v", content, err)
	}
	_, dir, _, err := e.client.Repositories.GetContents(e.ctx, "acme", "widgets", ".github", nil)
	if err != nil || len(dir) != 2 {
		t.Fatalf("dir %v %v", dir, err)
	}
	if _, _, _, err := e.client.Repositories.GetContents(e.ctx, "acme", "widgets", "nope.yml", nil); statusOf(err) != 404 {
		t.Fatalf("missing file: %v", err)
	}

	for user, want := range map[string][2]string{
		"alice": {"write", "write"}, "bob": {"write", "maintain"}, "mallory": {"none", "none"}, "acme": {"admin", "admin"},
	} {
		p, _, err := e.client.Repositories.GetPermissionLevel(e.ctx, "acme", "widgets", user)
		if err != nil || p.GetPermission() != want[0] || p.GetUser().GetLogin() != user {
			t.Errorf("%s: %v %v", user, p, err)
		}
		if p.GetUser().GetRoleName() != want[1] {
			t.Errorf("%s role %q", user, p.GetUser().GetRoleName())
		}
	}
	members, _, err := e.client.Teams.ListTeamMembersBySlug(e.ctx, "acme", "core", nil)
	if err != nil || len(members) != 2 || members[1].GetLogin() != "carol" {
		t.Fatalf("members %v %v", members, err)
	}
	if _, _, err := e.client.Teams.ListTeamMembersBySlug(e.ctx, "acme", "nope", nil); statusOf(err) != 404 {
		t.Fatalf("unknown team: %v", err)
	}
}

func TestIssuesAPI(t *testing.T) {
	e := newEnv(t)
	ms := e.s.CreateMilestone(repoName, "bob", "v1")
	is, _, err := e.client.Issues.Create(e.ctx, "acme", "widgets", &github.IssueRequest{
		Title: github.String("Tracking"), Body: github.String("body"), Labels: &[]string{"goal"}, Assignees: &[]string{"alice"},
	})
	if err != nil || is.GetNumber() != 1 || is.GetUser().GetLogin() != "countersign[bot]" || len(is.Labels) != 1 {
		t.Fatalf("create %v %v", is, err)
	}
	if _, _, err := e.client.Issues.Create(e.ctx, "acme", "widgets", &github.IssueRequest{Body: github.String("no title")}); statusOf(err) != 422 {
		t.Fatalf("no title: %v", err)
	}
	is, _, err = e.client.Issues.Edit(e.ctx, "acme", "widgets", 1, &github.IssueRequest{Milestone: github.Int(ms), Assignees: &[]string{"bob"}})
	if err != nil || is.GetMilestone().GetNumber() != ms || len(is.Assignees) != 1 || is.Assignees[0].GetLogin() != "bob" {
		t.Fatalf("edit %v %v", is, err)
	}
	if _, _, err := e.client.Issues.Edit(e.ctx, "acme", "widgets", 1, &github.IssueRequest{Milestone: github.Int(99)}); statusOf(err) != 422 {
		t.Fatalf("bad milestone: %v", err)
	}
	e.s.OpenIssue(repoName, "carol", "Second", "")
	list, _, err := e.client.Issues.ListByRepo(e.ctx, "acme", "widgets", &github.IssueListByRepoOptions{Milestone: fmt.Sprint(ms)})
	if err != nil || len(list) != 1 || list[0].GetNumber() != 1 {
		t.Fatalf("by milestone %v %v", list, err)
	}
	list, _, err = e.client.Issues.ListByRepo(e.ctx, "acme", "widgets", &github.IssueListByRepoOptions{Labels: []string{"goal"}})
	if err != nil || len(list) != 1 {
		t.Fatalf("by label %v %v", list, err)
	}
	is, _, err = e.client.Issues.Edit(e.ctx, "acme", "widgets", 1, &github.IssueRequest{State: github.String("closed"), StateReason: github.String("not_planned")})
	if err != nil || is.GetState() != "closed" || is.GetStateReason() != "not_planned" {
		t.Fatalf("close %v %v", is, err)
	}
	list, _, err = e.client.Issues.ListByRepo(e.ctx, "acme", "widgets", nil)
	if err != nil || len(list) != 1 || list[0].GetNumber() != 2 {
		t.Fatalf("open issues %v %v", list, err)
	}
	if _, _, err := e.client.Issues.RemoveMilestone(e.ctx, "acme", "widgets", 1); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.client.Issues.AddAssignees(e.ctx, "acme", "widgets", 2, []string{"alice", "bob"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.client.Issues.RemoveAssignees(e.ctx, "acme", "widgets", 2, []string{"alice"}); err != nil {
		t.Fatal(err)
	}
	m, _, err := e.client.Issues.EditMilestone(e.ctx, "acme", "widgets", ms, &github.Milestone{State: github.String("closed")})
	if err != nil || m.GetState() != "closed" {
		t.Fatalf("close milestone %v %v", m, err)
	}
	if _, _, err := e.client.Issues.GetMilestone(e.ctx, "acme", "widgets", 42); statusOf(err) != 404 {
		t.Fatalf("unknown milestone: %v", err)
	}
	e.s.ReopenMilestone(repoName, ms, "bob")
	e.s.SetMilestone(repoName, 2, "bob", ms)
	if mv, _ := e.s.Milestone(repoName, ms); mv.State != "open" || mv.OpenIssues != 1 {
		t.Fatalf("milestone %+v", mv)
	}
	e.s.EditIssue(repoName, 2, "carol", "Second (edited)", "now with body")
	e.s.CloseIssue(repoName, 2, "carol", "")
	e.s.ReopenIssue(repoName, 2, "carol")

	e.wait()
	want := "milestone.created " +
		"label.created issues.opened issues.labeled issues.assigned " +
		"issues.unassigned issues.assigned issues.milestoned " +
		"issues.opened issues.closed issues.demilestoned " +
		"issues.assigned issues.assigned issues.unassigned milestone.closed " +
		"milestone.opened issues.milestoned issues.edited issues.closed issues.reopened"
	hs := e.hooks.all()
	if got := strings.Join(kinds(hs), " "); got != want {
		t.Fatalf("webhooks\n got %s\nwant %s", got, want)
	}
	edited := hs[17].Payload["changes"].(map[string]any)
	if edited["title"].(map[string]any)["from"] != "Second" {
		t.Errorf("edited changes %v", edited)
	}
	if hs[9].Payload["issue"].(map[string]any)["state_reason"] != "not_planned" || hs[9].SenderType != "Bot" {
		t.Errorf("bot close %v", hs[9].Payload["issue"])
	}
	if iv, _ := e.s.Issue(repoName, 2); iv.StateReason != "reopened" || iv.State != "open" || iv.Title != "Second (edited)" {
		t.Errorf("issue 2 %+v", iv)
	}
	e.noErr()
}

func TestWebhookDelivery(t *testing.T) {
	e := newEnv(t)
	n := e.s.OpenIssue(repoName, "alice", "Hook me", "")
	e.s.SetWebhookPaused(true)
	e.s.Comment(repoName, n, "alice", "paused")
	short, cancel := context.WithTimeout(e.ctx, 100*time.Millisecond)
	if err := e.s.WaitWebhooks(short); err == nil {
		t.Fatal("WaitWebhooks returned while paused")
	}
	cancel()
	e.s.SetWebhookPaused(false)
	e.wait()
	if e.hooks.count() != 2 {
		t.Fatalf("%d hooks", e.hooks.count())
	}

	e.s.DropWebhooks(true)
	e.s.Comment(repoName, n, "alice", "lost")
	e.s.DropWebhooks(false)
	e.wait()
	if e.hooks.count() != 2 {
		t.Fatal("dropped webhook was sent")
	}
	ds := e.s.Deliveries()
	lost := ds[len(ds)-1]
	if !lost.Dropped || lost.Event != "issue_comment" || lost.Sender != "alice" || lost.Status != 0 {
		t.Fatalf("dropped delivery %+v", lost)
	}
	if err := e.s.Redeliver(lost.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.s.Redeliver(ds[0].ID); err != nil {
		t.Fatal(err)
	}
	if e.s.Redeliver("nope") == nil {
		t.Fatal("Redeliver of an unknown id")
	}
	e.wait()
	hs := e.hooks.all()
	if len(hs) != 4 || hs[2].ID != lost.ID || hs[3].ID != ds[0].ID || hs[3].ID != hs[0].ID || string(hs[3].Raw) != string(hs[0].Raw) {
		t.Fatalf("redeliveries %v", kinds(hs))
	}
	ds = e.s.Deliveries()
	if len(ds) != 5 || !ds[3].Redelivery || ds[3].Status != http.StatusAccepted || ds[0].Status != http.StatusAccepted {
		t.Fatalf("deliveries %+v", ds)
	}

	// a receiver error is recorded; no URL means recorded but not sent
	e.hooks.mu.Lock()
	e.hooks.status = 500
	e.hooks.mu.Unlock()
	e.s.Comment(repoName, n, "alice", "boom")
	e.wait()
	e.s.SetWebhook("", nil)
	e.s.Comment(repoName, n, "alice", "nowhere")
	e.wait()
	ds = e.s.Deliveries()
	if ds[5].Status != 500 || ds[6].Status != 0 || ds[6].Pending || e.hooks.count() != 5 {
		t.Fatalf("deliveries %+v", ds[5:])
	}
	e.noErr()
}

func TestFailNext(t *testing.T) {
	e := newEnv(t)
	n := e.s.OpenIssue(repoName, "alice", "Flaky", "")
	if _, _, err := e.client.Issues.Get(e.ctx, "acme", "widgets", n); err != nil { // token fetched
		t.Fatal(err)
	}

	e.s.FailNext(2, 502, nil)
	for i := 0; i < 2; i++ {
		if _, _, err := e.client.Issues.CreateComment(e.ctx, "acme", "widgets", n, &github.IssueComment{Body: github.String("x")}); statusOf(err) != 502 {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if len(e.s.Comments(repoName, n)) != 0 {
		t.Fatal("a failed call changed the state")
	}
	if _, _, err := e.client.Issues.CreateComment(e.ctx, "acme", "widgets", n, &github.IssueComment{Body: github.String("x")}); err != nil {
		t.Fatal(err)
	}

	e.s.FailNext(1, 403, map[string]string{"X-RateLimit-Remaining": "0"})
	_, _, err := e.client.Issues.Get(e.ctx, "acme", "widgets", n)
	var rl *github.RateLimitError
	if !errors.As(err, &rl) || rl.Rate.Remaining != 0 || rl.Rate.Reset.Time.After(time.Now().Add(5*time.Second)) {
		t.Fatalf("rate limit: %v", err)
	}

	e.s.FailNext(1, 429, map[string]string{"Retry-After": "1"})
	resp, _ := e.raw("GET", fmt.Sprintf("/api/v3/repos/acme/widgets/issues/%d", n), "token "+e.token(), nil, nil)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("429: %d %v", resp.StatusCode, resp.Header)
	}

	// FailNextFor only hits matching calls.
	// A fresh client must fetch a token first; the fault spares that call.
	itr, err := ghinstallation.New(http.DefaultTransport, e.s.AppID(), instID, e.s.PrivateKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	fresh, _ := github.NewClient(&http.Client{Transport: itr}).WithEnterpriseURLs(e.s.URL(), e.s.URL())
	itr.BaseURL = strings.TrimRight(fresh.BaseURL.String(), "/")
	e.s.FailNextFor(1, 502, nil, ExceptTokenRequests)
	if _, _, err := fresh.Issues.Get(e.ctx, "acme", "widgets", n); statusOf(err) != 502 {
		t.Fatalf("fault after a token fetch: %v", err)
	}
	e.s.FailNextFor(1, 500, nil, func(method, path string) bool { return method == "POST" })
	resp, _ = e.raw("GET", fmt.Sprintf("/repos/acme/widgets/issues/%d", n), "token "+e.token(), nil, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("GET hit by a POST fault: %d", resp.StatusCode)
	}
	resp, _ = e.raw("POST", fmt.Sprintf("/repos/acme/widgets/issues/%d/comments", n), "token "+e.token(), map[string]string{"body": "y"}, nil)
	if resp.StatusCode != 500 {
		t.Fatalf("POST fault: %d", resp.StatusCode)
	}
	var faults []int
	for _, r := range e.s.Requests() {
		if r.Status >= 400 {
			faults = append(faults, r.Status)
		}
	}
	if fmt.Sprint(faults) != "[502 502 403 429 502 500]" {
		t.Fatalf("recorded faults %v", faults)
	}
	e.s.ResetRequests()
	if len(e.s.Requests()) != 0 {
		t.Fatal("ResetRequests")
	}
}

func TestSecondaryWriteLimit(t *testing.T) {
	e := newEnvWith(t, Options{WriteLimit: WriteLimit{Writes: 3, Window: 400 * time.Millisecond}})
	n := e.s.OpenIssue(repoName, "alice", "Busy", "")
	comment := func() error {
		_, _, err := e.client.Issues.CreateComment(e.ctx, "acme", "widgets", n, &github.IssueComment{Body: github.String("x")})
		return err
	}
	for i := range 3 {
		if err := comment(); err != nil {
			t.Fatalf("write %d within the limit: %v", i, err)
		}
	}
	err := comment()
	var abuse *github.AbuseRateLimitError
	if !errors.As(err, &abuse) || abuse.RetryAfter == nil || *abuse.RetryAfter != time.Second ||
		!strings.Contains(abuse.Message, "You have exceeded a secondary rate limit") {
		t.Fatalf("the 4th write in the window: %v, want a secondary rate limit with Retry-After: 1", err)
	}
	if got := len(e.s.Comments(repoName, n)); got != 3 {
		t.Fatalf("%d comments, want 3: a refused write changed the state", got)
	}
	// Reads are not content-generating.
	resp, _ := e.raw("GET", fmt.Sprintf("/repos/acme/widgets/issues/%d", n), "token "+e.token(), nil, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("a read under the write limit: %d", resp.StatusCode)
	}
	// A raw refusal: 403, Retry-After, and a healthy X-RateLimit-Remaining (it is not the primary limit).
	resp, body := e.raw("DELETE", fmt.Sprintf("/repos/acme/widgets/issues/%d/labels", n), "token "+e.token(), nil, nil)
	if resp.StatusCode != 403 || resp.Header.Get("Retry-After") != "1" || resp.Header.Get("X-RateLimit-Remaining") == "0" ||
		!strings.Contains(string(body), "secondary rate limit") {
		t.Fatalf("refusal: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if got := e.s.WritesRefused(); got != 2 {
		t.Fatalf("WritesRefused = %d, want 2", got)
	}
	time.Sleep(400 * time.Millisecond) // the window moves on (go-github itself would hold back for Retry-After)
	if resp, _ := e.raw("POST", fmt.Sprintf("/repos/acme/widgets/issues/%d/comments", n), "token "+e.token(), map[string]string{"body": "y"}, nil); resp.StatusCode != 201 {
		t.Fatalf("a write after the window: %d", resp.StatusCode)
	}

	e429 := newEnvWith(t, Options{WriteLimit: WriteLimit{Writes: 1, Window: time.Hour, Status: 429}})
	m := e429.s.OpenIssue(repoName, "alice", "Busy", "")
	for i, want := range []int{201, 429} {
		resp, _ := e429.raw("POST", fmt.Sprintf("/repos/acme/widgets/issues/%d/comments", m), "token "+e429.token(), map[string]string{"body": "y"}, nil)
		if resp.StatusCode != want {
			t.Fatalf("write %d: %d, want %d", i, resp.StatusCode, want)
		}
		if want == 429 && resp.Header.Get("Retry-After") != "3600" {
			t.Fatalf("Retry-After %q, want 3600", resp.Header.Get("Retry-After"))
		}
	}
}

// Both of GitHub's windows bind: a write must fit in the minute and in the
// hour, and Retry-After names the later of the two.
func TestSecondaryWriteLimitsMinuteAndHour(t *testing.T) {
	limits := SecondaryLimits(40 * time.Millisecond) // an "hour" of 2.4 s
	if len(limits) != 2 || limits[0].Writes != 80 || limits[1].Writes != 500 || limits[1].Window != 2400*time.Millisecond {
		t.Fatalf("SecondaryLimits = %+v", limits)
	}
	e := newEnvWith(t, Options{WriteLimits: []WriteLimit{{Writes: 2, Window: 300 * time.Millisecond}, {Writes: 3, Window: 3 * time.Second}}})
	n := e.s.OpenIssue(repoName, "alice", "Busy", "")
	post := func() *http.Response {
		resp, _ := e.raw("POST", fmt.Sprintf("/repos/acme/widgets/issues/%d/comments", n), "token "+e.token(), map[string]string{"body": "y"}, nil)
		return resp
	}
	for i, want := range []int{201, 201, 403} { // the "minute" is full
		if resp := post(); resp.StatusCode != want {
			t.Fatalf("write %d: %d, want %d", i, resp.StatusCode, want)
		}
	}
	time.Sleep(300 * time.Millisecond)
	if resp := post(); resp.StatusCode != 201 { // a new minute: the hour's third
		t.Fatalf("a write in the next minute: %d", resp.StatusCode)
	}
	time.Sleep(300 * time.Millisecond)
	resp := post() // the minute has room, the hour has none
	if resp.StatusCode != 403 || resp.Header.Get("Retry-After") != "3" {
		t.Fatalf("a write past the hour's limit: %d, Retry-After %q, want 403 and 3", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if got := e.s.WritesRefused(); got != 2 {
		t.Fatalf("WritesRefused = %d, want 2", got)
	}
	if got := len(e.s.Comments(repoName, n)); got != 3 {
		t.Fatalf("%d comments, want 3", got)
	}
}

func TestWithoutPrefix(t *testing.T) {
	e := newEnv(t)
	n := e.s.OpenIssue(repoName, "alice", "Plain", "")
	itr, err := ghinstallation.New(http.DefaultTransport, e.s.AppID(), instID, e.s.PrivateKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	itr.BaseURL = strings.TrimRight(e.s.URL(), "/")
	client := github.NewClient(&http.Client{Transport: itr})
	base, _ := client.BaseURL.Parse(e.s.URL())
	client.BaseURL = base
	if _, _, err := client.Issues.AddLabelsToIssue(e.ctx, "acme", "widgets", n, []string{"state:done"}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Issues.RemoveLabelForIssue(e.ctx, "acme", "widgets", n, "state:done"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		e.s.Comment(repoName, n, "alice", fmt.Sprint(i))
	}
	_, resp, err := client.Issues.ListComments(e.ctx, "acme", "widgets", n, &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 2}})
	if err != nil || resp.NextPage != 2 || strings.Contains(resp.Header.Get("Link"), "/api/v3") {
		t.Fatalf("no-prefix pagination %v %q", err, resp.Header.Get("Link"))
	}
	for _, r := range e.s.Requests() {
		if r.Status >= 400 {
			t.Errorf("%s %s -> %d", r.Method, r.Path, r.Status)
		}
	}
}

func TestNeverPanics(t *testing.T) {
	e := newEnv(t)
	n := e.s.OpenIssue(repoName, "alice", "Target", "")
	_, sha := e.s.OpenPR(repoName, "alice", PROptions{})
	tok := "token " + e.token()
	paths := []string{
		"/", "/api/v3", "/api/v3/", "/api/v3/repos", "/api/v3/repos/acme", "/api/v3/repos/acme/widgets/issues/abc",
		fmt.Sprintf("/api/v3/repos/acme/widgets/issues/%d", n), fmt.Sprintf("/api/v3/repos/acme/widgets/issues/%d/labels/%%ZZ", n),
		fmt.Sprintf("/api/v3/repos/acme/widgets/issues/%d/labels", n), fmt.Sprintf("/api/v3/repos/acme/widgets/issues/%d/comments", n),
		"/api/v3/repos/acme/widgets/issues/comments/1", "/api/v3/repos/acme/widgets/labels", "/api/v3/repos/acme/widgets/labels/%2F",
		"/api/v3/repos/acme/widgets/check-runs", "/api/v3/repos/acme/widgets/check-runs/99999999999999999999",
		"/api/v3/repos/acme/widgets/commits/" + sha + "/check-runs", "/api/v3/repos/acme/widgets/commits//status",
		"/api/v3/repos/acme/widgets/contents/", "/api/v3/repos/acme/widgets/contents/../../etc/passwd",
		"/api/v3/repos/acme/widgets/pulls/2/files?per_page=-1&page=-5", "/api/v3/repos/acme/widgets/milestones/0",
		"/api/v3/repos/acme/widgets/statuses/" + sha, "/api/v3/orgs/acme/teams/x/members", "/api/v3/app/installations/x/access_tokens",
		"/api/v3/repos/acme/widgets/issues?milestone=abc&labels=,,&since=yesterday&per_page=1000",
	}
	bodies := []string{"", "null", "[]", "{}", `{"labels":5}`, `{"title":null,"body":5,"milestone":"x","labels":[1,{}],"assignees":"bob","state":7}`,
		`["a",null]`, `{"name":"","head_sha":null,"output":{},"conclusion":"weird"}`, `{"body":` + strings.Repeat("[", 1000), "\x00\xff"}
	for _, p := range paths {
		for _, m := range []string{"GET", "POST", "PATCH", "PUT", "DELETE"} {
			for _, b := range bodies {
				req, err := http.NewRequestWithContext(e.ctx, m, strings.TrimRight(e.s.URL(), "/")+p, strings.NewReader(b))
				if err != nil {
					continue
				}
				req.Header.Set("Authorization", tok)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatalf("%s %s: %v", m, p, err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode >= 500 {
					t.Errorf("%s %s %q -> %d", m, p, b, resp.StatusCode)
				}
			}
		}
	}
}

func TestPushDefaultAndLatency(t *testing.T) {
	s := New(Options{PrivateKey: sharedKey(t), Latency: 30 * time.Millisecond, AppSlug: "cs", AppID: 42})
	defer s.Close()
	if s.BotLogin() != "cs[bot]" {
		t.Fatal(s.BotLogin())
	}
	s.AddRepo("o/r", 3)
	s.SetFile("o/r", "a.txt", "old")
	rcv := newReceiver(t)
	s.SetWebhook(rcv.srv.URL, hookSecret)
	head := s.PushDefault("o/r", "alice", map[string]string{"a.txt": "new", "b.txt": "b"})
	if v, _ := s.File("o/r", "a.txt"); v != "new" || s.HeadSHA("o/r") != head {
		t.Fatalf("file %q head %q", v, s.HeadSHA("o/r"))
	}
	if err := s.WaitWebhooks(context.Background()); err != nil {
		t.Fatal(err)
	}
	hs := rcv.all()
	if len(hs) != 1 || hs[0].Event != "push" || hs[0].Payload["after"] != head {
		t.Fatalf("push %v", kinds(hs))
	}
	c := hs[0].Payload["commits"].([]any)[0].(map[string]any)
	if fmt.Sprint(c["added"]) != "[b.txt]" || fmt.Sprint(c["modified"]) != "[a.txt]" {
		t.Fatalf("commit %v", c)
	}

	itr, err := ghinstallation.New(http.DefaultTransport, 42, 3, s.PrivateKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	client, _ := github.NewClient(&http.Client{Transport: itr}).WithEnterpriseURLs(s.URL(), s.URL())
	itr.BaseURL = strings.TrimRight(client.BaseURL.String(), "/")
	start := time.Now()
	if _, _, err := client.Repositories.Get(context.Background(), "o", "r"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 60*time.Millisecond { // token call + GET
		t.Fatalf("latency not applied: %v", d)
	}
}

func TestIssueEndpointsOnPullRequests(t *testing.T) {
	e := newEnv(t)
	n, sha := e.s.OpenPR(repoName, "alice", PROptions{Title: "PR"})
	e.wait()
	start := e.hooks.count()
	if _, _, err := e.client.Issues.AddLabelsToIssue(e.ctx, "acme", "widgets", n, []string{"ready"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.client.Issues.CreateComment(e.ctx, "acme", "widgets", n, &github.IssueComment{Body: github.String("hi")}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.client.Issues.Edit(e.ctx, "acme", "widgets", n, &github.IssueRequest{State: github.String("closed")}); err != nil {
		t.Fatal(err)
	}
	e.s.ReopenPR(repoName, n, "alice")
	e.s.ConvertToDraft(repoName, n, "alice")
	e.s.EditPR(repoName, n, "alice", "PR v2", "body")
	e.s.CheckSuiteCompleted(repoName, sha, "ci", "success")
	e.s.ClosePR(repoName, n, "alice")
	e.wait()
	hs := e.hooks.since(start)
	want := "label.created pull_request.labeled issue_comment.created pull_request.closed pull_request.reopened " +
		"pull_request.converted_to_draft pull_request.edited check_suite.completed pull_request.closed"
	if got := strings.Join(kinds(hs), " "); got != want {
		t.Fatalf("webhooks\n got %s\nwant %s", got, want)
	}
	if hs[1].Payload["label"].(map[string]any)["name"] != "ready" {
		t.Errorf("labeled %v", hs[1].Payload["label"])
	}
	if hs[3].Payload["pull_request"].(map[string]any)["merged"] != false || hs[3].SenderType != "Bot" {
		t.Errorf("closed %v", hs[3].Payload["pull_request"])
	}
	suite := hs[7].Payload["check_suite"].(map[string]any)
	if suite["head_sha"] != sha || suite["conclusion"] != "success" || len(suite["pull_requests"].([]any)) != 1 {
		t.Errorf("check_suite %v", suite)
	}
	e.noErr()
}

// GET /repos/{owner}/{repo}/issues/{n}/events lists the issue's history:
// who labeled, assigned, closed and reopened it, oldest first, paginated.
func TestIssueEvents(t *testing.T) {
	e := newEnv(t)
	n := e.s.OpenIssue(repoName, "alice", "History", "")
	e.s.AddLabels(repoName, n, "alice", "bug")
	e.s.Assign(repoName, n, "carol", "bob")
	if _, _, err := e.client.Issues.AddLabelsToIssue(e.ctx, "acme", "widgets", n, []string{"state:pending"}); err != nil {
		t.Fatal(err)
	}
	e.s.RemoveLabel(repoName, n, "alice", "bug")
	e.s.CloseIssue(repoName, n, "carol", "")
	e.s.ReopenIssue(repoName, n, "carol")
	e.s.EditIssue(repoName, n, "alice", "", "not an event")

	var got []string
	opt := &github.ListOptions{PerPage: 2}
	for {
		evs, resp, err := e.client.Issues.ListIssueEvents(e.ctx, "acme", "widgets", n, opt)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			s := ev.GetEvent() + " by " + ev.GetActor().GetLogin()
			if ev.Label != nil {
				s += " " + ev.GetLabel().GetName()
			}
			if ev.Assignee != nil {
				s += " " + ev.GetAssignee().GetLogin()
			}
			if ev.GetID() == 0 || ev.GetCreatedAt().IsZero() {
				t.Errorf("event without id or time: %+v", ev)
			}
			if (ev.PerformedViaGithubApp != nil) != (ev.GetActor().GetType() == "Bot") {
				t.Errorf("performed_via_github_app %v for %s", ev.PerformedViaGithubApp, s)
			}
			got = append(got, s)
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	want := []string{"labeled by alice bug", "assigned by carol bob", "labeled by " + e.s.BotLogin() + " state:pending",
		"unlabeled by alice bug", "closed by carol", "reopened by carol"}
	if !slices.Equal(got, want) {
		t.Fatalf("events:\n%q\nwant\n%q", got, want)
	}
	if _, resp, err := e.client.Issues.ListIssueEvents(e.ctx, "acme", "widgets", 999, nil); err == nil || resp.StatusCode != 404 {
		t.Fatalf("events of a missing issue: %v", err)
	}
}

// POST /graphql answers as GitHub does: 401 without a token, errors (and no
// data) for a field the schema lacks, null and a NOT_FOUND error for what the
// token cannot see, and the commit authors GitHub resolves by verified email.
func TestGraphQL(t *testing.T) {
	e := newEnv(t)
	e.s.SetEmails("alice", "alice@company.example")
	n, _ := e.s.OpenPR(repoName, "bob", PROptions{Title: "x", Commits: []Commit{
		{Author: "bob", Message: "m\n\nCo-authored-by: Alice <alice@company.example>", Committer: "erin", CommitterEmail: "erin@company.example"},
	}})
	post := func(auth bool, query string, vars map[string]any) (int, map[string]any) {
		b, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
		req, _ := http.NewRequest(http.MethodPost, e.s.URL()+"graphql", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		client := http.DefaultClient
		if auth {
			client = &http.Client{Transport: e.itr}
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	q := `query($n: Int!) { repository(owner: "acme", name: "widgets") { pullRequest(number: $n) { number, commits(first: 5) { totalCount nodes { commit { authors(first: 5) { nodes { email user { login } } } committer { user { login } } } } } } } }`
	if code, _ := post(false, q, map[string]any{"n": n}); code != http.StatusUnauthorized {
		t.Fatalf("no token: %d", code)
	}
	code, out := post(true, q, map[string]any{"n": n})
	b, _ := json.Marshal(out)
	want := `{"data":{"repository":{"pullRequest":{"commits":{"nodes":[{"commit":{"authors":{"nodes":[{"email":"bob@users.noreply.github.com","user":{"login":"bob"}},{"email":"alice@company.example","user":{"login":"alice"}}]},"committer":{"user":null}}}],"totalCount":1},"number":` + fmt.Sprint(n) + `}}}}`
	if code != 200 || string(b) != want {
		t.Fatalf("%d %s\nwant %s", code, b, want)
	}
	if _, out := post(true, `{ repository(owner: "acme", name: "widgets") { stars } }`, nil); out["data"] != nil || !strings.Contains(fmt.Sprint(out["errors"]), "Field 'stars' doesn't exist on type 'Repository'") {
		t.Fatalf("unknown field: %v", out)
	}
	if _, out := post(true, `{ repository(owner: "other", name: "repo") { nameWithOwner } }`, nil); !strings.Contains(fmt.Sprint(out), "NOT_FOUND") {
		t.Fatalf("unseen repository: %v", out)
	}
	if _, out := post(true, q, nil); out["data"] != nil || out["errors"] == nil {
		t.Fatalf("missing variable: %v", out)
	}
	if _, out := post(true, `{ repository(owner: "acme", name: "widgets") { pullRequest(number: 1) { commits { totalCount } } } }`, nil); !strings.Contains(fmt.Sprint(out), "first") {
		t.Fatalf("connection without first: %v", out)
	}
}

func FuzzParseGQL(f *testing.F) {
	f.Add(`query($n: Int!, $c: String) { repository(owner: "a", name: "b") { pullRequest(number: $n) { commits(first: 100, after: $c) { nodes { commit { oid } } } } } }`)
	f.Add(`{ a: repository(owner: "x\"y", name: "b") { nameWithOwner } }`)
	f.Add(`query { x(a: [1]) { y } }`)
	f.Fuzz(func(t *testing.T, q string) {
		parseGQL(q) // must not panic or hang
	})
}

func TestHookDeliveryLog(t *testing.T) {
	e := newEnv(t)
	atr, err := ghinstallation.NewAppsTransport(http.DefaultTransport, e.s.AppID(), e.s.PrivateKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	app, err := github.NewClient(&http.Client{Transport: atr}).WithEnterpriseURLs(e.s.URL(), e.s.URL())
	if err != nil {
		t.Fatal(err)
	}
	n := e.s.OpenIssue(repoName, "alice", "Log me", "") // 1: OK
	e.s.SetWebhookFault(1, HookUnavailable, func(event, action string) bool { return event == "issue_comment" })
	e.s.Comment(repoName, n, "alice", "503'd")  // 2: 503, not received
	e.s.Comment(repoName, n, "alice", "passes") // 3: OK
	e.s.SetWebhookFault(1, HookTimeout, nil)
	e.s.Comment(repoName, n, "alice", "lost") // 4: timed out
	e.wait()
	e.s.SetBotDown(true)
	e.s.Comment(repoName, n, "alice", "down") // 5: cannot connect
	e.wait()
	e.s.SetBotDown(false)
	e.wait()
	if got := kinds(e.hooks.all()); len(got) != 2 {
		t.Fatalf("received %v; want the two unfaulted ones", got)
	}

	// Newest first, cursor pagination through Link.
	var all []*github.HookDelivery
	opt := &github.ListCursorOptions{PerPage: 2}
	pages := 0
	for {
		ds, resp, err := app.Apps.ListHookDeliveries(e.ctx, opt)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		all = append(all, ds...)
		if resp.Cursor == "" {
			break
		}
		opt.Cursor = resp.Cursor
	}
	if pages != 3 || len(all) != 5 {
		t.Fatalf("%d pages, %d deliveries; want 3, 5", pages, len(all))
	}
	type row struct {
		id     int64
		status string
		code   int
	}
	var got []row
	for _, d := range all {
		got = append(got, row{d.GetID(), d.GetStatus(), d.GetStatusCode()})
		if d.GetInstallationID() != instID || d.GetRepositoryID() == 0 || d.GetGUID() == "" || d.GetDeliveredAt().IsZero() {
			t.Errorf("delivery %+v lacks fields", d)
		}
	}
	want := []row{{5, "failed to connect to host", 0}, {4, "timed out", 0}, {3, "OK", 202}, {2, "Invalid HTTP Response: 503", 503}, {1, "OK", 202}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("log %v; want %v", got, want)
	}
	if all[4].GetEvent() != "issues" || all[4].GetAction() != "opened" || all[3].GetEvent() != "issue_comment" {
		t.Fatalf("events %s.%s, %s", all[4].GetEvent(), all[4].GetAction(), all[3].GetEvent())
	}

	// Redelivery: 202, the same body with the same guid, logged as a new entry.
	failed := all[3]
	if _, resp, err := app.Apps.RedeliverHookDelivery(e.ctx, failed.GetID()); err != nil && resp.StatusCode != http.StatusAccepted {
		t.Fatalf("redeliver: %v", err)
	}
	e.wait()
	hs := e.hooks.all()
	if last := hs[len(hs)-1]; last.ID != failed.GetGUID() || !strings.Contains(string(last.Raw), "503'd") {
		t.Fatalf("redelivered %s %s; want guid %s", last.ID, last.Raw, failed.GetGUID())
	}
	ds, _, err := app.Apps.ListHookDeliveries(e.ctx, &github.ListCursorOptions{PerPage: 1})
	if err != nil || len(ds) != 1 || ds[0].GetID() != 6 || !ds[0].GetRedelivery() || ds[0].GetGUID() != failed.GetGUID() || ds[0].GetStatus() != "OK" {
		t.Fatalf("newest after redelivery %+v, %v", ds, err)
	}
	one, _, err := app.Apps.GetHookDelivery(e.ctx, 2)
	if err != nil || one.GetGUID() != failed.GetGUID() || one.Request == nil || one.Request.RawPayload == nil || len(*one.Request.RawPayload) == 0 {
		t.Fatalf("get delivery 2: %+v, %v", one, err)
	}
	if _, _, err := app.Apps.RedeliverHookDelivery(e.ctx, 99); statusOf(err) != http.StatusNotFound {
		t.Fatalf("redeliver unknown: %v; want 404", err)
	}
	// App JWT only.
	if resp, _ := e.raw("GET", "/app/hook/deliveries", "token "+e.token(), nil, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("installation token on /app/hook/deliveries: %d; want 401", resp.StatusCode)
	}
	if resp, _ := e.raw("GET", "/app/hook/deliveries?cursor=junk", "Bearer "+e.appJWT(sharedKey(t), e.s.AppID(), time.Now(), time.Now().Add(time.Minute)), nil, nil); resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("bad cursor: %d; want 422", resp.StatusCode)
	}

	// An outage fails every call until lifted.
	e.s.SetOutage(http.StatusServiceUnavailable, nil)
	if _, _, err := app.Apps.ListHookDeliveries(e.ctx, nil); statusOf(err) != http.StatusServiceUnavailable {
		t.Fatalf("during outage: %v", err)
	}
	e.s.SetOutage(0, nil)
	if _, _, err := app.Apps.ListHookDeliveries(e.ctx, nil); err != nil {
		t.Fatalf("after outage: %v", err)
	}
	e.noErr()
}

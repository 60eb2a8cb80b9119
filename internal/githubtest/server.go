// Package githubtest is an in-memory fake of the parts of GitHub that
// countersign uses: the REST API (as reached through go-github v60 with
// WithEnterpriseURLs, i.e. under /api/v3, or without that prefix), GitHub App
// authentication (RS256 app JWT, then installation access tokens), and
// webhook deliveries back to the bot.
//
// Tests (and the no-account demo command) drive it with "user actions"
// (OpenIssue, Comment, OpenPR, Review, ...) that change the state and send
// the webhook GitHub would send, and inspect what the bot did with Issue,
// Labels, CheckRuns, Requests and Deliveries. The package does not import
// "testing".
package githubtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/mux"
)

// Options configures a fake GitHub.
type Options struct {
	// AppID is the GitHub App's id: the `iss` of the app JWT. Default 1.
	AppID int64
	// AppSlug is the App's slug; the bot's login is AppSlug+"[bot]".
	// Default "countersign".
	AppSlug string
	// Latency is added to every API call (to simulate a slow GitHub).
	Latency time.Duration
	// Logf, when set, receives a line per API call and webhook delivery.
	// It may be called with the server's locks held: it must not call back
	// into the Server.
	Logf func(format string, args ...any)

	// Addr is the address to listen on. Default "127.0.0.1:0".
	Addr string
	// TokenTTL is the lifetime of installation access tokens. Default 1h.
	TokenTTL time.Duration
	// PrivateKey is the App's private key. Default: a fresh RSA 2048 key.
	PrivateKey *rsa.PrivateKey
	// HTMLURL is the base of the html_url fields. Default "https://github.com/".
	HTMLURL string
	// WriteLimit, when its Writes is positive, is a secondary rate limit on
	// content-generating requests, as GitHub enforces one (about 80 a
	// minute and 500 an hour per installation).
	WriteLimit WriteLimit
	// WriteLimits are more such limits, each enforced as WriteLimit is: a
	// write must fit in every one of them (SecondaryLimits: GitHub's).
	WriteLimits []WriteLimit
	// RecordBodies makes Requests keep each call's request and response
	// bodies (Request.Body, Request.Response): the OpenAPI conformance test
	// checks them. Off by default, so other tests pay nothing.
	RecordBodies bool
}

// SecondaryLimits are GitHub's documented secondary limits on
// content-generating requests per installation: 80 in any minute and 500 in
// any hour, minute long (time.Minute for GitHub's own; tests shorten it, an
// hour being 60 of them). Refusals answer 403 with Retry-After.
func SecondaryLimits(minute time.Duration) []WriteLimit {
	return []WriteLimit{{Writes: 80, Window: minute}, {Writes: 500, Window: 60 * minute}}
}

// WriteLimit is a secondary rate limit: at most Writes content-generating
// requests (POST, PATCH, PUT, DELETE with an installation token; a GraphQL
// query is not one) per installation in any Window. A write beyond it is
// refused without effect, as GitHub does: 403 (or Status, e.g. 429) with
// "You have exceeded a secondary rate limit" and Retry-After, the seconds
// until the window has room again. Refused writes do not count.
type WriteLimit struct {
	Writes int
	Window time.Duration
	Status int // 403 (default) or 429
}

// Request is one API request the fake answered.
type Request struct {
	Method string
	// Path is the unescaped path without the /api/v3 prefix and without the
	// query, e.g. "/repos/o/r/issues/1/labels/state:pending".
	Path  string
	Query string
	// Status is the HTTP status answered (304 for a conditional hit, the
	// injected status for a FailNext fault).
	Status int
	// Installation is the installation whose token authenticated the call
	// (0 for app-JWT calls and unauthenticated ones).
	Installation int64
	// User is the login whose personal access token authenticated the call
	// ("" for installation tokens, app JWTs and unauthenticated calls).
	User string
	Time time.Time
	// Route is the fake's route pattern that served the call (gorilla/mux,
	// e.g. "/repos/{owner}/{repo}/issues/{number:[0-9]+}"), as Routes lists
	// it; "" when no route matched.
	Route string
	// Body and Response are the request body and the response body as
	// sent (nil for 204 and 304); kept only with Options.RecordBodies.
	Body, Response []byte
	// GraphQL is a GraphQL request's query text (a mutation's starts with
	// "mutation"); kept always.
	GraphQL string
}

// Server is a running fake GitHub. All its methods are safe for concurrent use.
type Server struct {
	opts     Options
	key      *rsa.PrivateKey
	keyPEM   []byte
	botLogin string
	htmlURL  string

	ln     net.Listener
	srv    *http.Server
	url    string
	router *mux.Router

	mu            sync.Mutex
	nextID        int64
	seq           int64
	userIDs       map[string]int64
	emails        map[string]string // lower(verified email) -> login (SetEmails)
	currentLogin  map[int64]string  // id -> login after a RenameUser
	loginSpelling map[string]string
	installations map[int64]*installationState
	repos         map[string]*repoState
	forks         map[string]*forkState // lower("user/owner/repo"): user's fork (forks.go)
	teams         map[string]*teamState
	comments      map[int64]*commentState
	checkRuns     map[int64]*checkRunState
	tokens        map[string]*tokenState
	pats          map[string]string // personal access token -> login (AddToken)
	rate          map[int64]*rateState
	writeTimes    map[int64][]time.Time // each installation's accepted writes within the longest write limit's window
	writeRefused  int                   // writes refused by WriteLimit
	faults        []*fault
	outage        *fault // every call fails so while set (SetOutage)
	stacks        stacks // branches and what a retargeted pull request carries (retarget.go)
	requests      []Request
	manifestApps  []*ManifestApp
	projects      map[string]*projectState // organizations' boards (projects.go)
	errs          []error

	wmu        sync.Mutex
	wcond      *sync.Cond
	hookURL    string
	hookSecret []byte
	paused     bool
	drop       bool
	closed     bool
	queue      []*delivery
	deliveries []*delivery
	enqueued   int
	processed  int
	hookFaults []*hookFault // SetWebhookFault
	botDown    bool         // SetBotDown
	logSeq     int64        // ids of the App's delivery log
	hookLog    []*delivery  // attempted deliveries, oldest first (the App's delivery log)
	hookClient *http.Client
	jitter     *jitter // SetWebhookJitter (jitter.go)
	closeCtx   context.Context
	cancel     context.CancelFunc
	wg         sync.WaitGroup
}

type tokenState struct {
	installation int64
	expires      time.Time
}

type rateState struct {
	used  int
	reset time.Time
}

type fault struct {
	remaining int
	status    int
	headers   map[string]string
	match     func(method, path string) bool
}

// New starts a fake GitHub listening on 127.0.0.1 (Options.Addr).
// It panics only if it cannot listen or generate its key.
func New(opts Options) *Server {
	if opts.AppID == 0 {
		opts.AppID = 1
	}
	if opts.AppSlug == "" {
		opts.AppSlug = "countersign"
	}
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if opts.TokenTTL <= 0 {
		opts.TokenTTL = time.Hour
	}
	if opts.HTMLURL == "" {
		opts.HTMLURL = "https://github.com/"
	}
	if !strings.HasSuffix(opts.HTMLURL, "/") {
		opts.HTMLURL += "/"
	}
	key := opts.PrivateKey
	if key == nil {
		var err error
		key, err = rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic("githubtest: generating the app key: " + err.Error())
		}
	}
	s := &Server{
		opts:          opts,
		key:           key,
		keyPEM:        pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
		botLogin:      opts.AppSlug + "[bot]",
		htmlURL:       opts.HTMLURL,
		nextID:        1000,
		userIDs:       map[string]int64{},
		emails:        map[string]string{},
		installations: map[int64]*installationState{},
		repos:         map[string]*repoState{},
		teams:         map[string]*teamState{},
		comments:      map[int64]*commentState{},
		checkRuns:     map[int64]*checkRunState{},
		tokens:        map[string]*tokenState{},
		rate:          map[int64]*rateState{},
		writeTimes:    map[int64][]time.Time{},
		hookClient:    &http.Client{Timeout: 10 * time.Second},
	}
	s.wcond = sync.NewCond(&s.wmu)
	s.closeCtx, s.cancel = context.WithCancel(context.Background())
	s.router = s.routes()

	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		panic("githubtest: listen: " + err.Error())
	}
	s.ln = ln
	s.url = "http://" + ln.Addr().String() + "/"
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		_ = s.srv.Serve(ln)
	}()
	go func() {
		defer s.wg.Done()
		s.sendLoop()
	}()
	return s
}

// URL is the base URL of the fake, with a trailing slash
// (e.g. "http://127.0.0.1:41234/"). Use it as GITHUB_API_URL or with
// go-github's WithEnterpriseURLs(url, url).
func (s *Server) URL() string { return s.url }

// PrivateKeyPEM is the App's private key (PKCS#1 PEM). App JWTs must be
// signed with it.
func (s *Server) PrivateKeyPEM() []byte { return append([]byte(nil), s.keyPEM...) }

// AppID is the App's id.
func (s *Server) AppID() int64 { return s.opts.AppID }

// BotLogin is the login of the App's bot user, e.g. "countersign[bot]".
func (s *Server) BotLogin() string { return s.botLogin }

// Close stops the server and the webhook sender. Webhooks still queued are
// not sent.
func (s *Server) Close() {
	s.wmu.Lock()
	if s.closed {
		s.wmu.Unlock()
		return
	}
	s.closed = true
	s.wcond.Broadcast()
	s.wmu.Unlock()
	s.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		_ = s.srv.Close()
	}
	s.wg.Wait()
}

// Err reports misuses of the user-action and seeding API (unknown repo,
// unknown issue, ...), which are otherwise only logged; nil if none.
func (s *Server) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.errs...)
}

// Requests returns every API request answered so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// RequestCount is how many API requests were answered so far (len of
// Requests, without the copy: cheap to poll).
func (s *Server) RequestCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// ResetRequests forgets the recorded requests.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}

// FailNext makes the next n API calls (any endpoint, the access_tokens call
// included) answer status with the given extra headers, without changing any
// state. For 403 and 429 the body is GitHub's rate-limit message; when
// headers set X-RateLimit-Remaining to "0" without X-RateLimit-Reset, the
// reset is one second ahead.
func (s *Server) FailNext(n int, status int, headers map[string]string) {
	s.FailNextFor(n, status, headers, nil)
}

// FailNextFor is FailNext restricted to calls for which match(method, path)
// is true (path as in Request.Path). A nil match matches every call.
func (s *Server) FailNextFor(n int, status int, headers map[string]string, match func(method, path string) bool) {
	if n <= 0 {
		return
	}
	h := map[string]string{}
	for k, v := range headers {
		h[k] = v
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &fault{remaining: n, status: status, headers: h, match: match})
}

// ExpireTokens makes every installation token issued so far invalid, so the
// next call with one gets 401 "Bad credentials".
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.tokens {
		delete(s.tokens, k)
	}
}

func (s *Server) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf("githubtest: "+format, args...)
	}
}

// misuse records an error of the test-side API. Call with s.mu held.
func (s *Server) misuse(format string, args ...any) {
	err := fmt.Errorf("githubtest: "+format, args...)
	s.errs = append(s.errs, err)
	s.logf("%v", err)
}

// ---- HTTP plumbing ----

type ctxKey struct{}

// reqInfo travels with a request through the router.
type reqInfo struct {
	prefix   string // "/api/v3" or ""
	origPath string // escaped path as received (with prefix)
	body     []byte
	inst     int64  // installation of the token, once authenticated
	user     string // login of the personal access token, once authenticated
	route    string // the route pattern that matched
}

func infoOf(r *http.Request) *reqInfo {
	if ri, ok := r.Context().Value(ctxKey{}).(*reqInfo); ok {
		return ri
	}
	return &reqInfo{}
}

// recorder buffers a handler's response so the server can add ETag and
// rate-limit headers and answer conditional requests.
type recorder struct {
	h    http.Header
	code int
	buf  bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.h }
func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.buf.Write(b)
}
func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := &recorder{h: http.Header{}}
	ri := &reqInfo{}
	path := r.URL.Path
	finished := false
	defer func() {
		if p := recover(); p != nil {
			s.logf("panic serving %s %s: %v", r.Method, r.URL.Path, p)
			if !finished {
				rec = &recorder{h: http.Header{}}
				writeJSON(rec, http.StatusInternalServerError, errorBody(fmt.Sprintf("Server Error: %v", p)))
				s.finish(w, r, rec, ri, path)
			}
		}
	}()

	escaped := r.URL.EscapedPath()
	ri.origPath = escaped
	if escaped == "/api/v3" || strings.HasPrefix(escaped, "/api/v3/") {
		ri.prefix = "/api/v3"
		escaped = strings.TrimPrefix(escaped, "/api/v3")
		if escaped == "" {
			escaped = "/"
		}
	}
	if p, err := url.PathUnescape(escaped); err == nil {
		path = p
	}
	if r.Body != nil {
		b, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
		if err != nil {
			writeJSON(rec, http.StatusBadRequest, errorBody("Problems reading body"))
			s.finish(w, r, rec, ri, path)
			return
		}
		ri.body = b
	}

	if d := s.opts.Latency; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
		}
	}

	if f := s.takeFault(r.Method, path); f != nil {
		s.writeFault(rec, f)
		s.finish(w, r, rec, ri, path)
		return
	}

	r2 := r.Clone(context.WithValue(r.Context(), ctxKey{}, ri))
	r2.URL.Path = path
	r2.URL.RawPath = escaped
	r2.Body = io.NopCloser(bytes.NewReader(ri.body))
	s.router.ServeHTTP(rec, r2)
	finished = true
	s.finish(w, r, rec, ri, path)
}

func (s *Server) takeFault(method, path string) *fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.outage != nil {
		return s.outage
	}
	for i, f := range s.faults {
		if f.match != nil && !safeMatch(f.match, method, path) {
			continue
		}
		f.remaining--
		if f.remaining <= 0 {
			s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
		}
		return f
	}
	return nil
}

// ExceptTokenRequests is a FailNextFor matcher that spares the
// access_tokens calls (so faults hit only the API calls proper).
func ExceptTokenRequests(method, path string) bool {
	return !strings.HasSuffix(path, "/access_tokens")
}

func safeMatch(match func(method, path string) bool, method, path string) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return match(method, path)
}

func (s *Server) writeFault(rec *recorder, f *fault) {
	for k, v := range f.headers {
		rec.h.Set(k, v)
	}
	if rec.h.Get("X-RateLimit-Remaining") == "0" && rec.h.Get("X-RateLimit-Reset") == "" {
		rec.h.Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Second).Unix(), 10))
	}
	var body any
	switch {
	case f.status == http.StatusForbidden && rec.h.Get("X-RateLimit-Remaining") == "0":
		body = map[string]string{
			"message":           "API rate limit exceeded for installation.",
			"documentation_url": "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting",
		}
	case f.status == http.StatusForbidden || f.status == http.StatusTooManyRequests:
		body = map[string]string{
			"message":           "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
			"documentation_url": "https://docs.github.com/free-pro-team@latest/rest/overview/resources-in-the-rest-api#secondary-rate-limits",
		}
	case f.status >= 500:
		body = errorBody("Server Error")
	case f.status == http.StatusNotFound:
		body = errorBody("Not Found")
	case f.status == http.StatusUnauthorized:
		body = errorBody("Bad credentials")
	default:
		body = errorBody(http.StatusText(f.status))
	}
	if f.status == http.StatusNoContent || f.status == http.StatusNotModified {
		rec.code = f.status
		return
	}
	writeJSON(rec, f.status, body)
}

// finish adds GitHub's common headers, the ETag, answers If-None-Match,
// writes the response and records the request.
func (s *Server) finish(w http.ResponseWriter, r *http.Request, rec *recorder, ri *reqInfo, path string) {
	code := rec.code
	if code == 0 {
		code = http.StatusOK
	}
	body := rec.buf.Bytes()
	h := w.Header()
	now := time.Now()

	s.mu.Lock()
	rs := s.rate[ri.inst]
	if rs == nil || now.After(rs.reset) {
		rs = &rateState{reset: now.Add(time.Hour).Truncate(time.Second)}
		s.rate[ri.inst] = rs
	}
	rs.used++
	remaining := 5000 - rs.used
	if remaining < 1 {
		remaining = 1 // never make go-github refuse calls by itself
	}
	s.seq++
	reqID := fmt.Sprintf("F%03X:%04X:%06X:%06X:%08X", s.opts.AppID%4096, s.seq%65536, s.seq, now.UnixNano()%0xFFFFFF, now.Unix())
	s.mu.Unlock()

	h.Set("X-RateLimit-Limit", "5000")
	h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(rs.reset.Unix(), 10))
	h.Set("X-RateLimit-Used", strconv.Itoa(5000-remaining))
	h.Set("X-RateLimit-Resource", "core")
	h.Set("X-GitHub-Media-Type", "github.v3; format=json")
	h.Set("X-GitHub-Request-Id", reqID)
	for k, v := range rec.h {
		h[k] = v
	}

	if r.Method == http.MethodGet && code == http.StatusOK {
		sum := sha256.Sum256(body)
		etag := `"` + hex.EncodeToString(sum[:16]) + `"`
		h.Set("ETag", etag)
		if etagMatches(r.Header.Get("If-None-Match"), etag) {
			code = http.StatusNotModified
			body = nil
			h.Del("Content-Type")
		}
	}
	if code == http.StatusNoContent || code == http.StatusNotModified {
		body = nil
	}
	if body != nil {
		h.Set("Content-Length", strconv.Itoa(len(body)))
	}
	w.WriteHeader(code)
	if r.Method != http.MethodHead && body != nil {
		_, _ = w.Write(body)
	}

	req := Request{
		Method: r.Method, Path: path, Query: r.URL.RawQuery, Status: code,
		Installation: ri.inst, User: ri.user, Time: now, Route: ri.route,
	}
	if req.Route == "" {
		req.Route = s.routeOf(r, path)
	}
	if strings.HasSuffix(req.Path, "/graphql") {
		var q struct {
			Query string `json:"query"`
		}
		if json.Unmarshal(ri.body, &q) == nil {
			req.GraphQL = q.Query
		}
	}
	if s.opts.RecordBodies {
		req.Body = ri.body
		req.Response = append([]byte(nil), body...)
		if body == nil {
			req.Response = nil
		}
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	s.logf("%s %s -> %d", r.Method, r.URL.RequestURI(), code)
}

func etagMatches(header, etag string) bool {
	if header == "" {
		return false
	}
	for _, part := range strings.Split(header, ",") {
		part = strings.TrimSpace(part)
		part = strings.TrimPrefix(part, "W/")
		if part == "*" || part == etag {
			return true
		}
	}
	return false
}

// ---- responses ----

type apiError struct {
	Message          string       `json:"message"`
	Errors           []fieldError `json:"errors,omitempty"`
	DocumentationURL string       `json:"documentation_url"`
	Status           string       `json:"status,omitempty"`
}

type fieldError struct {
	Resource string `json:"resource,omitempty"`
	Field    string `json:"field,omitempty"`
	Code     string `json:"code"`
	Message  string `json:"message,omitempty"`
	Value    any    `json:"value,omitempty"`
}

func errorBody(msg string) *apiError {
	return &apiError{Message: msg, DocumentationURL: "https://docs.github.com/rest"}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		b, _ = json.Marshal(errorBody("Server Error: " + err.Error()))
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// apiCall is the context of one routed API call.
type apiCall struct {
	s    *Server
	w    http.ResponseWriter
	r    *http.Request
	info *reqInfo
	vars map[string]string // unescaped route variables
	repo *repoState        // for repository routes
	inst int64             // authenticated installation (token auth)
	user string            // the person acting (personal access token auth)
}

func (c *apiCall) json(code int, v any) { writeJSON(c.w, code, v) }

func (c *apiCall) noContent() { c.w.WriteHeader(http.StatusNoContent) }

func (c *apiCall) fail(code int, msg string) {
	e := errorBody(msg)
	e.Status = strconv.Itoa(code)
	c.json(code, e)
}

func (c *apiCall) notFound() { c.fail(http.StatusNotFound, "Not Found") }

// invalid answers 422 Validation Failed with one error entry.
func (c *apiCall) invalid(resource, field, code, message string) {
	e := errorBody("Validation Failed")
	e.Status = "422"
	e.Errors = []fieldError{{Resource: resource, Field: field, Code: code, Message: message}}
	c.json(http.StatusUnprocessableEntity, e)
}

// unprocessable answers 422 with a plain message (GitHub does this for e.g.
// "No commit found for SHA").
func (c *apiCall) unprocessable(msg string) { c.fail(http.StatusUnprocessableEntity, msg) }

// decode parses the JSON request body into v; on failure it answers 400
// and returns false.
func (c *apiCall) decode(v any) bool {
	body := bytes.TrimSpace(c.info.body)
	if len(body) == 0 {
		body = []byte("{}")
	}
	if err := json.Unmarshal(body, v); err != nil {
		c.fail(http.StatusBadRequest, "Problems parsing JSON")
		return false
	}
	return true
}

func (c *apiCall) intVar(name string) (int64, bool) {
	n, err := strconv.ParseInt(c.vars[name], 10, 64)
	return n, err == nil
}

// paginate slices items like GitHub (per_page default 30, max 100; page from
// 1) and sets the Link header. It never returns nil.
func paginate[T any](c *apiCall, items []T) []T {
	q := c.r.URL.Query()
	perPage, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || perPage < 1 {
		perPage = 30
	}
	if perPage > 100 {
		perPage = 100
	}
	page, err := strconv.Atoi(q.Get("page"))
	if err != nil || page < 1 {
		page = 1
	}
	last := (len(items) + perPage - 1) / perPage
	if last < 1 {
		last = 1
	}
	var links []string
	link := func(p int, rel string) {
		q2 := c.r.URL.Query()
		q2.Set("page", strconv.Itoa(p))
		if q.Get("per_page") != "" {
			q2.Set("per_page", strconv.Itoa(perPage))
		}
		links = append(links, fmt.Sprintf(`<http://%s%s?%s>; rel="%s"`, c.r.Host, c.info.origPath, q2.Encode(), rel))
	}
	if page > 1 {
		prev := page - 1
		if prev > last {
			prev = last
		}
		link(prev, "prev")
	}
	if page < last {
		link(page+1, "next")
		link(last, "last")
	}
	if page > 1 {
		link(1, "first")
	}
	if len(links) > 0 {
		c.w.Header().Set("Link", strings.Join(links, ", "))
	}
	start := (page - 1) * perPage
	if start >= len(items) {
		return []T{}
	}
	end := start + perPage
	if end > len(items) {
		end = len(items)
	}
	out := make([]T, end-start)
	copy(out, items[start:end])
	return out
}

// ---- routing and auth ----

type authKind int

const (
	authNone  authKind = iota
	authJWT            // app JWT (Bearer)
	authToken          // any valid installation token
	authRepo           // installation token covering {owner}/{repo}
	authOrg            // installation token covering a repo of {org}
)

func (s *Server) routes() *mux.Router {
	r := mux.NewRouter().UseEncodedPath().SkipClean(true)
	nf := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		e := errorBody("Not Found")
		e.Status = "404"
		writeJSON(w, http.StatusNotFound, e)
	})
	r.NotFoundHandler = nf
	r.MethodNotAllowedHandler = nf

	h := func(method, path string, auth authKind, fn func(*apiCall)) {
		r.Handle(path, s.wrap(auth, fn)).Methods(method)
	}
	s.appRoutes(h)
	s.repoRoutes(h)
	s.issueRoutes(h)
	s.dependencyRoutes(h)
	s.pullRoutes(h)
	s.checkRoutes(h)
	s.graphqlRoutes(h)
	s.manifestRoutes(h)
	s.personRoutes(h)
	s.activityRoutes(h)
	return r
}

// routeOf is the route pattern that serves method and (unescaped) path, for
// calls answered before routing (a FailNext fault); "" if none.
func (s *Server) routeOf(r *http.Request, path string) string {
	r2 := r.Clone(r.Context())
	r2.URL.Path = path
	r2.URL.RawPath = ""
	var m mux.RouteMatch
	if s.router == nil || !s.router.Match(r2, &m) || m.Route == nil || m.MatchErr != nil {
		return ""
	}
	t, _ := m.Route.GetPathTemplate()
	return t
}

// Route is one API route of the fake: a method and a gorilla/mux path
// pattern, without the /api/v3 prefix.
type Route struct {
	Method  string
	Pattern string
}

// Routes lists every API route the fake serves, in the order they are
// registered (the OpenAPI conformance test checks each against GitHub's
// description).
func Routes() []Route {
	var out []Route
	r := (&Server{}).routes()
	_ = r.Walk(func(rt *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		p, err := rt.GetPathTemplate()
		if err != nil {
			return nil
		}
		ms, _ := rt.GetMethods()
		for _, m := range ms {
			out = append(out, Route{Method: m, Pattern: p})
		}
		return nil
	})
	return out
}

type routeFunc func(method, path string, auth authKind, fn func(*apiCall))

func (s *Server) wrap(auth authKind, fn func(*apiCall)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := &apiCall{s: s, w: w, r: r, info: infoOf(r), vars: map[string]string{}}
		if cr := mux.CurrentRoute(r); cr != nil {
			c.info.route, _ = cr.GetPathTemplate()
		}
		for k, v := range mux.Vars(r) {
			u, err := url.PathUnescape(v)
			if err != nil {
				c.notFound()
				return
			}
			c.vars[k] = u
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		switch auth {
		case authJWT:
			if !s.checkJWT(c) {
				return
			}
		case authToken, authRepo, authOrg:
			if login, ok := s.personOf(c); ok {
				if s.authorizePerson(c, auth, login) {
					fn(c)
				}
				return
			}
			inst, ok := s.checkToken(c)
			if !ok {
				return
			}
			c.inst = inst
			c.info.inst = inst
			if auth == authRepo {
				rp := s.repos[strings.ToLower(c.vars["owner"]+"/"+c.vars["repo"])]
				if rp == nil || rp.installation != inst {
					c.notFound()
					return
				}
				c.repo = rp
			}
			if auth == authOrg && !s.installationHasOwner(inst, c.vars["org"]) {
				c.notFound()
				return
			}
			if !s.allowWrite(c) {
				return
			}
		}
		fn(c)
	})
}

// allowWrite applies Options.WriteLimit to an installation's call, answering
// it when the limit refuses it. Call with s.mu held.
func (s *Server) allowWrite(c *apiCall) bool {
	switch c.r.Method {
	case http.MethodPost, http.MethodPatch, http.MethodPut, http.MethodDelete:
	default:
		return true
	}
	var limits []WriteLimit
	longest := time.Duration(0)
	for _, l := range append([]WriteLimit{s.opts.WriteLimit}, s.opts.WriteLimits...) {
		if l.Writes > 0 && l.Window > 0 {
			limits = append(limits, l)
			longest = max(longest, l.Window)
		}
	}
	if len(limits) == 0 || (strings.HasSuffix(c.r.URL.Path, "/graphql") && !isMutation(c.info.body)) {
		return true
	}
	now := time.Now()
	times := s.writeTimes[c.inst]
	i := 0
	for i < len(times) && !times[i].After(now.Add(-longest)) {
		i++
	}
	times = times[i:]
	s.writeTimes[c.inst] = times
	var wait time.Duration
	status := 0
	for _, l := range limits {
		n := 0 // accepted writes within l's window
		for j := len(times) - 1; j >= 0 && times[j].After(now.Add(-l.Window)); j-- {
			n++
		}
		if n >= l.Writes {
			wait = max(wait, times[len(times)-l.Writes].Add(l.Window).Sub(now))
			if status == 0 {
				status = l.Status
			}
		}
	}
	if wait <= 0 {
		s.writeTimes[c.inst] = append(times, now)
		return true
	}
	s.writeRefused++
	secs := max(int64((wait+time.Second-1)/time.Second), 1)
	c.w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	if status == 0 {
		status = http.StatusForbidden
	}
	writeJSON(c.w, status, &apiError{
		Message: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. " +
			"If you reach out to GitHub Support for help, please include the request ID.",
		DocumentationURL: "https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
	})
	return false
}

// isMutation reports whether a GraphQL request body is a mutation.
func isMutation(body []byte) bool {
	var q struct {
		Query string `json:"query"`
	}
	if json.Unmarshal(body, &q) != nil {
		return false
	}
	return strings.HasPrefix(strings.TrimSpace(q.Query), "mutation")
}

// WritesRefused is how many writes WriteLimit and WriteLimits refused so far.
func (s *Server) WritesRefused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writeRefused
}

func (s *Server) installationHasOwner(inst int64, owner string) bool {
	for _, rp := range s.repos {
		if rp.installation == inst && strings.EqualFold(rp.owner, owner) {
			return true
		}
	}
	return false
}

// authHeader splits the Authorization header into scheme and credentials.
func authHeader(r *http.Request) (scheme, cred string) {
	a := strings.TrimSpace(r.Header.Get("Authorization"))
	i := strings.IndexByte(a, ' ')
	if i < 0 {
		return "", a
	}
	return strings.ToLower(a[:i]), strings.TrimSpace(a[i+1:])
}

func (s *Server) checkToken(c *apiCall) (int64, bool) {
	scheme, cred := authHeader(c.r)
	if cred == "" {
		c.fail(http.StatusUnauthorized, "Requires authentication")
		return 0, false
	}
	if scheme != "token" && scheme != "bearer" {
		c.fail(http.StatusUnauthorized, "Bad credentials")
		return 0, false
	}
	t := s.tokens[cred]
	if t == nil || time.Now().After(t.expires) {
		c.fail(http.StatusUnauthorized, "Bad credentials")
		return 0, false
	}
	return t.installation, true
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

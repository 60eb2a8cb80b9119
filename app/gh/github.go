// Package gh is countersign's GitHub client: the App's and each installation's
// go-github clients, their transports (retries, metrics, ETag caching, rate
// limit readings), the pacing of writes, and the few cached reads (the bot's
// login, accounts by login).
package gh

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/countersign/countersign/app/authors"
	"github.com/countersign/countersign/app/clock"
	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/ghhealth"
	"github.com/countersign/countersign/app/metrics"
	"github.com/countersign/countersign/app/pace"
	"github.com/countersign/countersign/rules"
	"github.com/shurcooL/githubv4"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v60/github"
)

// publicAPI is github.com's API; any other GITHUB_API_URL is treated as GitHub
// Enterprise Server (go-github then adds the /api/v3/ prefix if it is missing).
const publicAPI = "https://api.github.com/"

// GitHub hands out go-github clients: one authenticated as the App (a JWT) and
// one per installation (installation tokens, cached by ghinstallation until near
// expiry). Every request goes through the retrying, instrumented transport,
// each installation's GETs through its own ETag cache, and its writes through
// its own pacing (PaceWrites).
type GitHub struct {
	apiURL string
	appID  int64
	base   http.RoundTripper
	apps   *ghinstallation.AppsTransport
	tokens *ghinstallation.AppsTransport // the installations' token requests (tokenAnswers)
	app    *github.Client
	m      *metrics.Metrics

	mu sync.Mutex
	// insts are the installations' clients and token sources, at most
	// instsMax of them and none unused for instsIdle (insts.go).
	insts    map[int64]*instClients
	instsMax int
	clock    clock.Clock // what the sweeps and the buckets go by
	swept    time.Time   // when insts and buckets were last swept
	botLogin string
	accounts map[string]account // lower(login) -> the account, as last read
	pace     *pace.Limits       // nil: writes are not paced (PaceWrites)
	// buckets are the installations' write pacing; one is dropped only
	// when idle (insts.go).
	buckets map[int64]*bucketEntry
	// health knows whom GitHub is away for (away.go); wake wakes the
	// keys that waited when it is back.
	health      *ghhealth.Health
	wake        func(ctx context.Context, keys ...string) error
	expected    map[labelWrite]time.Time // label writes about to be made (ExpectLabel)
	expectSwept time.Time                // when the expired were last dropped
	// etags are the installations' conditional GETs' answers, one bounded
	// cache for all of them.
	etags *etagCache
	// rates are the rate-limit gauge's series (a bounded few).
	rates *rateSeries
	// dir is the App's installations by account (directory.go).
	dir directory
}

// account is an account read from GET /users/{login}, and when.
type account struct {
	user rules.User
	at   time.Time
}

// accountTTL is how long a login's account is trusted to be the same: a
// rename frees a login for someone else to take.
const accountTTL = time.Hour

// accountsMax bounds the accounts cached, across every installation.
const accountsMax = 10000

// Account is the account that login names now (its id), read with c and
// cached for accountTTL. A login GitHub does not know is returned without an
// id (it can match no one by id).
func (g *GitHub) Account(ctx context.Context, c UserReader, login string) (rules.User, error) {
	key := strings.ToLower(login)
	g.mu.Lock()
	a, ok := g.accounts[key]
	g.mu.Unlock()
	if ok && time.Since(a.at) < accountTTL {
		return a.user, nil
	}
	u, _, err := c.GetUser(ctx, login)
	switch {
	case fault.IsStatus(err, http.StatusNotFound):
		a = account{user: rules.User{Login: login}, at: time.Now()}
	case err != nil:
		return rules.User{}, fmt.Errorf("read account %s: %w", login, err)
	default:
		a = account{user: rules.User{ID: u.GetID(), Login: u.GetLogin()}, at: time.Now()}
	}
	g.mu.Lock()
	if g.accounts == nil {
		g.accounts = map[string]account{}
	}
	if len(g.accounts) >= accountsMax {
		// Full: forget what is stale, and if that is not enough, any (the
		// cache only saves reads).
		for k, old := range g.accounts {
			if time.Since(old.at) >= accountTTL || len(g.accounts) >= accountsMax {
				delete(g.accounts, k)
			}
		}
	}
	g.accounts[key] = a
	g.mu.Unlock()
	return a.user, nil
}

// New builds the client factory for the App appID with its PEM key.
func New(apiURL string, appID int64, key []byte, m *metrics.Metrics) (*GitHub, error) {
	g := &GitHub{apiURL: apiURL, appID: appID, m: m, insts: map[int64]*instClients{}, instsMax: instsMax, clock: clock.Real{},
		etags: newETagCache(etagCacheEntries, etagCacheBytes), rates: newRateSeries(m.RateLimitRemain)}
	g.health = g.newHealth()
	base := newRetryTransport(&ghhealth.Transport{Next: &metricsTransport{next: newHTTPTransport(), m: m}, Health: g.health}, m)
	base.stop = g.health.Stop
	apps, err := ghinstallation.NewAppsTransport(base, appID, key)
	if err != nil {
		return nil, fmt.Errorf("github app key: %w", err)
	}
	// Installation tokens are minted through a copy that forgets the
	// repositories GitHub lists with each token (tokenAnswers).
	tokens, err := ghinstallation.NewAppsTransport(tokenAnswers{base}, appID, key)
	if err != nil {
		return nil, fmt.Errorf("github app key: %w", err)
	}
	g.base, g.apps, g.tokens = base, apps, tokens
	if g.app, err = g.newClient(ghhealth.ScopeTransport{Scope: ghhealth.App, Health: g.health, Next: &rateTransport{next: apps, series: g.rates, label: "app"}}); err != nil {
		return nil, err
	}
	apps.BaseURL = strings.TrimRight(g.app.BaseURL.String(), "/")
	tokens.BaseURL = apps.BaseURL
	if err := m.Registry.Register(newBucketCollector(g)); err != nil {
		return nil, fmt.Errorf("register the write pacing metric: %w", err)
	}
	return g, nil
}

// idleConnsPerHost is how many idle connections to GitHub are kept: every
// call goes to one host, from every worker at once. Go's default keeps 2,
// so the others were closed after each call and dialled (with a TLS
// handshake) again for the next.
const idleConnsPerHost = 64

// newHTTPTransport is Go's default transport keeping idleConnsPerHost idle
// connections to GitHub.
func newHTTPTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = idleConnsPerHost
	t.MaxIdleConnsPerHost = idleConnsPerHost
	return t
}

func (g *GitHub) newClient(rt http.RoundTripper) (*github.Client, error) {
	c := github.NewClient(&http.Client{Transport: rt})
	if g.apiURL == publicAPI {
		return c, nil
	}
	c, err := c.WithEnterpriseURLs(g.apiURL, g.apiURL)
	if err != nil {
		return nil, fmt.Errorf("GITHUB_API_URL %q: %w", g.apiURL, err)
	}
	return c, nil
}

// Installation returns the client acting as installation id.
func (g *GitHub) Installation(id int64) (*github.Client, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	in := g.inst(id)
	if in.rest != nil {
		return in.rest, nil
	}
	rt := &rateTransport{next: in.itr, series: g.rates, label: strconv.FormatInt(id, 10)}
	et := &etagTransport{next: g.paced(id, rt), cache: g.etags, scope: strconv.FormatInt(id, 10)}
	c, err := g.newClient(ghhealth.ScopeTransport{Scope: ghhealth.Scope(id), Health: g.health, Next: et})
	if err != nil {
		return nil, err
	}
	in.rest = c
	return c, nil
}

// App is the client acting as the App itself (its JWT): /app routes such as
// the webhook delivery log.
func (g *GitHub) App() *github.Client { return g.app }

// AppID is the App's id (0 when unknown): its check runs carry it.
func (g *GitHub) AppID() int64 { return g.appID }

// newITR is a token transport for installation id.
func (g *GitHub) newITR(id int64) *ghinstallation.Transport {
	// Each installation gets its own copy of the App transport: ghinstallation
	// writes to it on every token refresh, so sharing one would race. Its
	// REST and GraphQL clients share the installation's token transport.
	apps := *g.tokens
	t := ghinstallation.NewFromAppsTransport(&apps, id)
	t.BaseURL = g.tokens.BaseURL
	return t
}

// GraphQL returns the GraphQL client acting as installation id (GitHub's
// GraphQL endpoint for GITHUB_API_URL, see authors.Endpoint).
func (g *GitHub) GraphQL(id int64) *githubv4.Client {
	g.mu.Lock()
	defer g.mu.Unlock()
	in := g.inst(id)
	if in.graphql == nil {
		in.graphql = githubv4.NewEnterpriseClient(authors.Endpoint(g.apiURL), &http.Client{Transport: ghhealth.ScopeTransport{Scope: ghhealth.Scope(id), Health: g.health, Next: graphqlAnswers{in.itr}}})
	}
	return in.graphql
}

// BotLogin is the login under which the App's own writes appear ("slug[bot]"),
// read once from GET /app.
func (g *GitHub) BotLogin(ctx context.Context) (string, error) {
	g.mu.Lock()
	login := g.botLogin
	g.mu.Unlock()
	if login != "" {
		return login, nil
	}
	a, _, err := g.app.Apps.Get(ctx, "")
	if err != nil {
		return "", fmt.Errorf("get the app's own identity: %w", err)
	}
	if a.GetSlug() == "" {
		return "", fmt.Errorf("get the app's own identity: GitHub returned no slug")
	}
	login = a.GetSlug() + "[bot]"
	g.mu.Lock()
	g.botLogin = login
	g.mu.Unlock()
	return login, nil
}

// graphqlAnswers makes a GraphQL answer other than 200 an error that says
// what GitHub answered (status, Retry-After, rate-limit headers), as
// go-github's REST errors do: the GraphQL client would only say
// "non-200 OK status code", and a 502 or a rate limit must be waited out
// like the REST API's (fault.GitHubWait), not count against a delivery.
type graphqlAnswers struct{ next http.RoundTripper }

func (t graphqlAnswers) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.StatusCode == http.StatusOK {
		return resp, err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return nil, &github.ErrorResponse{Response: resp, Message: fmt.Sprintf("GraphQL answered %s: %.200s", resp.Status, body)}
}

// GraphQLWrites returns the GraphQL client for installation id's mutations:
// each takes a turn of the installation's write pacing, as a REST write
// does (a mutation is a content-generating request), and is counted in its
// write budget. Queries go through GraphQL, unpaced.
func (g *GitHub) GraphQLWrites(id int64) *githubv4.Client {
	g.mu.Lock()
	defer g.mu.Unlock()
	in := g.inst(id)
	if in.graphqlWrites == nil {
		rt := &rateTransport{next: in.itr, series: g.rates, label: strconv.FormatInt(id, 10)}
		in.graphqlWrites = githubv4.NewEnterpriseClient(authors.Endpoint(g.apiURL), &http.Client{Transport: ghhealth.ScopeTransport{Scope: ghhealth.Scope(id), Health: g.health,
			Next: graphqlAnswers{g.paced(id, rt)}}})
	}
	return in.graphqlWrites
}

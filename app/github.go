package app

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v60/github"
)

// publicAPI is github.com's API; any other GITHUB_API_URL is treated as GitHub
// Enterprise Server (go-github then adds the /api/v3/ prefix if it is missing).
const publicAPI = "https://api.github.com/"

// GitHub hands out go-github clients: one authenticated as the App (a JWT) and
// one per installation (installation tokens, cached by ghinstallation until near
// expiry). Every request goes through the retrying, instrumented transport, and
// each installation's GETs through its own ETag cache.
type GitHub struct {
	apiURL string
	appID  int64
	base   http.RoundTripper
	apps   *ghinstallation.AppsTransport
	app    *github.Client
	m      *Metrics

	mu       sync.Mutex
	clients  map[int64]*github.Client
	botLogin string
}

// NewGitHub builds the client factory for the App appID with its PEM key.
func NewGitHub(apiURL string, appID int64, key []byte, m *Metrics) (*GitHub, error) {
	base := newRetryTransport(&metricsTransport{next: http.DefaultTransport, m: m}, m)
	apps, err := ghinstallation.NewAppsTransport(base, appID, key)
	if err != nil {
		return nil, fmt.Errorf("github app key: %w", err)
	}
	g := &GitHub{apiURL: apiURL, appID: appID, base: base, apps: apps, m: m, clients: map[int64]*github.Client{}}
	if g.app, err = g.newClient(&rateTransport{next: apps, g: m.RateLimitRemain.WithLabelValues("app")}); err != nil {
		return nil, err
	}
	apps.BaseURL = strings.TrimRight(g.app.BaseURL.String(), "/")
	return g, nil
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
	if c, ok := g.clients[id]; ok {
		return c, nil
	}
	// Each installation gets its own copy of the App transport: ghinstallation
	// writes to it on every token refresh, so sharing one would race.
	apps := *g.apps
	itr := ghinstallation.NewFromAppsTransport(&apps, id)
	itr.BaseURL = g.apps.BaseURL
	rt := &rateTransport{next: itr, g: g.m.RateLimitRemain.WithLabelValues(strconv.FormatInt(id, 10))}
	c, err := g.newClient(newETagTransport(rt, 4096))
	if err != nil {
		return nil, err
	}
	g.clients[id] = c
	return c, nil
}

// App is the client acting as the App itself (its JWT): /app routes such as
// the webhook delivery log.
func (g *GitHub) App() *github.Client { return g.app }

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

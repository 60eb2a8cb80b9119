package githubtest

import (
	"crypto/rand"
	"encoding/json"
	"math/big"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v4"
	"github.com/google/go-github/v60/github"
)

// jwtLeeway is the clock drift tolerated on iat and exp.
const jwtLeeway = 60 * time.Second

func (s *Server) appRoutes(h routeFunc) {
	h("GET", "/app", authJWT, s.getApp)
	h("GET", "/app/installations", authJWT, s.listInstallations)
	h("GET", "/app/installations/{id:[0-9]+}", authJWT, s.getInstallation)
	h("POST", "/app/installations/{id:[0-9]+}/access_tokens", authJWT, s.createAccessToken)
	h("GET", "/repos/{owner}/{repo}/installation", authJWT, s.getRepoInstallation)
	h("GET", "/orgs/{org}/installation", authJWT, s.getOwnerInstallation)
	h("GET", "/users/{org}/installation", authJWT, s.getOwnerInstallation)
	h("GET", "/users/{user}", authNone, s.getUser)
	h("GET", "/installation/repositories", authToken, s.listInstallationRepos)
	h("GET", "/rate_limit", authNone, s.getRateLimit)
	h("GET", "/app/hook/deliveries", authJWT, s.listHookDeliveries)
	h("GET", "/app/hook/deliveries/{id:[0-9]+}", authJWT, s.getHookDelivery)
	h("POST", "/app/hook/deliveries/{id:[0-9]+}/attempts", authJWT, s.redeliverHookDelivery)
}

// checkJWT verifies an app JWT like GitHub: RS256 signed with the App key,
// iss = the app id (string or number), iat not in the future, exp in the
// future but at most 10 minutes ahead (with a minute of leeway).
func (s *Server) checkJWT(c *apiCall) bool {
	scheme, cred := authHeader(c.r)
	if cred == "" {
		c.fail(http.StatusUnauthorized, "Requires authentication")
		return false
	}
	if scheme != "bearer" || strings.Count(cred, ".") != 2 {
		c.fail(http.StatusUnauthorized, "A JSON web token could not be decoded")
		return false
	}
	claims := jwt.MapClaims{}
	p := jwt.NewParser(jwt.WithValidMethods([]string{"RS256"}), jwt.WithoutClaimsValidation(), jwt.WithJSONNumber())
	if _, err := p.ParseWithClaims(cred, claims, func(*jwt.Token) (any, error) { return &s.key.PublicKey, nil }); err != nil {
		c.fail(http.StatusUnauthorized, "A JSON web token could not be decoded")
		return false
	}
	now := time.Now()
	exp, ok := numericClaim(claims["exp"])
	if !ok {
		c.fail(http.StatusUnauthorized, "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires")
		return false
	}
	if time.Unix(exp, 0).Before(now.Add(-jwtLeeway)) {
		c.fail(http.StatusUnauthorized, "'Expiration time' claim ('exp') is too far in the past")
		return false
	}
	if time.Unix(exp, 0).After(now.Add(10*time.Minute + jwtLeeway)) {
		c.fail(http.StatusUnauthorized, "'Expiration time' claim ('exp') is too far in the future")
		return false
	}
	iat, ok := numericClaim(claims["iat"])
	if !ok || time.Unix(iat, 0).After(now.Add(jwtLeeway)) {
		c.fail(http.StatusUnauthorized, "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued")
		return false
	}
	var iss string
	switch v := claims["iss"].(type) {
	case string:
		iss = v
	case json.Number:
		iss = v.String()
	}
	if iss != strconv.FormatInt(s.opts.AppID, 10) {
		c.fail(http.StatusUnauthorized, "'Issuer' claim ('iss') must be an Integer")
		return false
	}
	return true
}

func numericClaim(v any) (int64, bool) {
	switch n := v.(type) {
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return i, true
		}
		if f, err := n.Float64(); err == nil {
			return int64(f), true
		}
	case float64:
		return int64(n), true
	}
	return 0, false
}

func (s *Server) getApp(c *apiCall) {
	app := s.ghApp(s.opts.AppSlug)
	app.Owner = s.ghUser("countersign") // GitHub's owner is a whole account (id, html_url, ...)
	app.Owner.Type = ptr("Organization")
	app.Description = ptr("fake GitHub App (githubtest)")
	app.Permissions = installationPermissions()
	app.Events = s.ghInstallationFull(&installationState{}).Events
	app.InstallationsCount = ptr(len(s.installations))
	c.json(http.StatusOK, app)
}

func (s *Server) sortedInstallations() []*installationState {
	out := make([]*installationState, 0, len(s.installations))
	for _, in := range s.installations {
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

func (s *Server) listInstallations(c *apiCall) {
	var out []*github.Installation
	for _, in := range s.sortedInstallations() {
		out = append(out, s.ghInstallationFull(in))
	}
	c.json(http.StatusOK, paginate(c, out))
}

func (s *Server) getInstallation(c *apiCall) {
	id, _ := c.intVar("id")
	in := s.installations[id]
	if in == nil {
		c.notFound()
		return
	}
	c.json(http.StatusOK, s.ghInstallationFull(in))
}

func (s *Server) getRepoInstallation(c *apiCall) {
	rp := s.repoByName(c.vars["owner"] + "/" + c.vars["repo"])
	if rp == nil || s.installations[rp.installation] == nil {
		c.notFound()
		return
	}
	c.json(http.StatusOK, s.ghInstallationFull(s.installations[rp.installation]))
}

// getUser is GET /users/{username}: the public profile of an account the fake
// has seen (a collaborator, a team member, anyone who acted), else 404.
func (s *Server) getUser(c *apiCall) {
	login := c.vars["user"]
	if _, known := s.userIDs[strings.ToLower(login)]; !known {
		if _, spelled := s.loginSpelling[strings.ToLower(login)]; !spelled {
			c.notFound()
			return
		}
	}
	c.json(http.StatusOK, s.ghUser(login))
}

func (s *Server) getOwnerInstallation(c *apiCall) {
	for _, in := range s.sortedInstallations() {
		if strings.EqualFold(in.account, c.vars["org"]) {
			c.json(http.StatusOK, s.ghInstallationFull(in))
			return
		}
	}
	c.notFound()
}

const tokenAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

func newToken() string {
	b := make([]byte, 36)
	for i := range b {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(tokenAlphabet))))
		if err != nil {
			b[i] = 'x'
			continue
		}
		b[i] = tokenAlphabet[n.Int64()]
	}
	return "ghs_" + string(b)
}

func (s *Server) createAccessToken(c *apiCall) {
	id, _ := c.intVar("id")
	in := s.installations[id]
	if in == nil {
		c.notFound()
		return
	}
	tok := newToken()
	exp := time.Now().Add(s.opts.TokenTTL).UTC().Truncate(time.Second)
	s.tokens[tok] = &tokenState{installation: id, expires: exp}
	var repos []*github.Repository
	for _, k := range sortedKeys(s.repos) {
		if rp := s.repos[k]; rp.installation == id {
			repos = append(repos, s.ghRepo(rp))
		}
	}
	out := &github.InstallationToken{
		Token:        ptr(tok),
		ExpiresAt:    ts(exp),
		Permissions:  installationPermissions(),
		Repositories: repos,
	}
	c.json(http.StatusCreated, withFields{out, map[string]any{"repository_selection": "selected"}})
}

func (s *Server) listInstallationRepos(c *apiCall) {
	var repos []*github.Repository
	for _, k := range sortedKeys(s.repos) {
		if rp := s.repos[k]; rp.installation == c.inst {
			repos = append(repos, s.ghRepo(rp))
		}
	}
	total := len(repos)
	page := paginate(c, repos)
	c.json(http.StatusOK, map[string]any{"total_count": total, "repository_selection": "selected", "repositories": page})
}

func (s *Server) getRateLimit(c *apiCall) {
	reset := time.Now().Add(time.Hour).Unix()
	core := map[string]any{"limit": 5000, "remaining": 4999, "reset": reset, "used": 1, "resource": "core"}
	c.json(http.StatusOK, map[string]any{"resources": map[string]any{"core": core}, "rate": core})
}

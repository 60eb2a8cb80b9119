// Package mcp serves countersign's workflow to AI agents over the Model
// Context Protocol: the goal and verification tools of seed 000 (create_goal,
// verify_task, ...), each acting only as the caller, through the same GitHub
// actions a person takes (a comment with a command, a review, an issue or
// milestone write), so that countersign's bot judges an agent exactly as it
// judges a person. An action waits, bounded, for the bot's verdict and returns
// it; reads come only from what the bot alone can keep (its owned labels, and
// its card when nobody else edited it).
package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/app/clock"
	"github.com/countersign/countersign/app/mcp/ghread"
)

// DefaultBot is the login of countersign's bot account: the App's slug and "[bot]".
const DefaultBot = "countersign[bot]"

// DefaultWait bounds how long an action waits for countersign's verdict.
const DefaultWait = 30 * time.Second

// Options configures the server.
type Options struct {
	// Dial makes a GitHub client acting with a caller's token.
	Dial ghread.Dial
	// Token is the caller's GitHub token for one tool call: StaticToken over
	// stdio, BearerToken over HTTP.
	Token func(ctx context.Context, req *sdk.CallToolRequest) (string, error)
	// Bot is countersign's bot login (default DefaultBot): only its labels
	// events, comments and issues speak for countersign.
	Bot string
	// Wait bounds the wait for a verdict (default DefaultWait); Poll is how
	// often GitHub is read meanwhile (default 500ms).
	Wait, Poll time.Duration
	Log        *slog.Logger
	Version    string
	// AllowedHosts are the Host headers, besides loopback names, an HTTP
	// server answers for: the public name of a proxy in front of it that
	// keeps the Host header. Without any, the SDK's DNS-rebinding check
	// refuses a non-loopback Host on a loopback listener.
	AllowedHosts []string
	// AllowedOrigins are the browser origins (scheme://host[:port]) whose
	// pages may call an HTTP server, besides pages of loopback hosts. A
	// request without Origin (no browser) is always served.
	AllowedOrigins []string
	// Clock is the time of the token memory (default the system clock).
	Clock clock.Clock
}

// ErrNoToken is the answer to a call that carries no GitHub token.
var ErrNoToken = errors.New("no GitHub token: the server acts only with the caller's own token")

// StaticToken is the token of the one person a stdio server acts for.
func StaticToken(tok string) func(context.Context, *sdk.CallToolRequest) (string, error) {
	return func(context.Context, *sdk.CallToolRequest) (string, error) {
		if tok == "" {
			return "", ErrNoToken
		}
		return tok, nil
	}
}

// BearerToken is the bearer token of the HTTP request that carried the call.
func BearerToken(_ context.Context, req *sdk.CallToolRequest) (string, error) {
	if req == nil || req.Extra == nil {
		return "", ErrNoToken
	}
	if tok, ok := bearer(req.Extra.Header.Get("Authorization")); ok {
		return tok, nil
	}
	return "", ErrNoToken
}

func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	tok = strings.TrimSpace(tok)
	if !ok || !strings.EqualFold(scheme, "bearer") || tok == "" {
		return "", false
	}
	return tok, true
}

// HTTPHandler serves srv over streamable HTTP, statelessly: every request
// carries its caller's token as "Authorization: Bearer <token>" and nothing
// of one request is kept for the next. Before a request is served its token
// is checked with GitHub (who it is, GET /user), and who it is remembered by
// the token's hash for TokenTTL: a request without a bearer token, or with
// one GitHub does not accept, gets 401. A token GitHub refused is refused
// again for RefusedTTL without asking; a client address with
// RefusalsPerAddress refused tokens in that window gets 429 for a token not
// known. A request with a Host not allowed (Options.AllowedHosts) or an
// Origin not allowed (Options.AllowedOrigins) gets 403. A tool call ends
// when its HTTP client goes away. Tokens are never stored or logged.
func HTTPHandler(srv *Server) http.Handler {
	opts := srv.s.opts
	// With hosts allowed, guard checks Host in the SDK's place: the SDK's
	// check refuses every non-loopback Host on a loopback listener, and
	// can only be turned off.
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv.Server },
		&sdk.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true,
			DisableLocalhostProtection: len(opts.AllowedHosts) > 0})
	checked := auth.RequireBearerToken(srv.s.verifyToken, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	return guard(opts.AllowedHosts, opts.AllowedOrigins, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := bearer(r.Header.Get("Authorization"))
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="countersign", error="invalid_request", error_description="a GitHub token is required"`)
			http.Error(w, "a GitHub token is required: Authorization: Bearer <token>", http.StatusUnauthorized)
			return
		}
		th := hashToken(tok)
		if srv.s.tokens.isRefused(th) {
			challenge{w}.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintln(w, "GitHub does not accept the bearer token")
			return
		}
		if _, known := srv.s.tokens.person(th); !known {
			if limited, wait := srv.s.tokens.limited(clientAddr(r)); limited {
				w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
				http.Error(w, "too many refused tokens from this address: try again later", http.StatusTooManyRequests)
				return
			}
		}
		checked.ServeHTTP(challenge{w}, r)
	}))
}

// challenge adds the bearer challenge to a 401 (a token GitHub refused).
type challenge struct{ http.ResponseWriter }

func (c challenge) WriteHeader(code int) {
	if code == http.StatusUnauthorized {
		c.Header().Set("WWW-Authenticate", `Bearer realm="countersign", error="invalid_token", error_description="GitHub does not accept the token"`)
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c challenge) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (c challenge) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// verifyToken asks GitHub who tok is. The person rides with the request (as
// its TokenInfo) to the tool call, which then needs not ask again; the token
// itself is in no TokenInfo, error or log.
func (s *server) verifyToken(ctx context.Context, tok string, r *http.Request) (*auth.TokenInfo, error) {
	me, err := s.whoIs(ctx, tok, clientAddr(r))
	if errors.Is(err, ghread.ErrUnauthorized) {
		return nil, fmt.Errorf("%w: GitHub does not accept the bearer token", auth.ErrInvalidToken)
	}
	if err != nil {
		return nil, fmt.Errorf("could not check the token with GitHub: %w", err)
	}
	return &auth.TokenInfo{UserID: strconv.FormatInt(me.ID, 10), Extra: map[string]any{personKey: me, goneKey: r.Context().Done()}}, nil
}

// whoIs is who GitHub says tok is, remembered by the token's hash for
// TokenTTL; a token GitHub refuses (ghread.ErrUnauthorized) is remembered as
// refused, from addr.
func (s *server) whoIs(ctx context.Context, tok, addr string) (ghread.Person, error) {
	th := hashToken(tok)
	if me, ok := s.tokens.person(th); ok {
		return me, nil
	}
	gh, err := s.opts.Dial(tok)
	if err != nil {
		return ghread.Person{}, err
	}
	me, err := gh.Me(ctx)
	if errors.Is(err, ghread.ErrUnauthorized) {
		s.tokens.refuse(th, addr)
	}
	if err != nil {
		return ghread.Person{}, err
	}
	s.tokens.remember(th, me)
	return me, nil
}

// personKey is where a TokenInfo carries the person GitHub said the token is;
// goneKey the HTTP request's end (its client went away, or it was answered).
const (
	personKey = "countersign.person"
	goneKey   = "countersign.gone"
)

// requestScoped ends ctx when the HTTP request that carried the call ends.
// The SDK ties a call to its request itself only for clients of protocol
// 2026-07-28 and later (PropagateRequestCancellation); this covers the older.
func requestScoped(ctx context.Context, req *sdk.CallToolRequest) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if req == nil || req.Extra == nil || req.Extra.TokenInfo == nil {
		return ctx, cancel
	}
	gone, ok := req.Extra.TokenInfo.Extra[goneKey].(<-chan struct{})
	if !ok {
		return ctx, cancel
	}
	go func() {
		select {
		case <-gone:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// server is the tools' shared state: nothing of any caller.
type server struct {
	opts   Options
	log    *slog.Logger
	tokens *tokens // who tokens are, by hash: never a token
}

// Server is countersign's MCP server: serve it over stdio (Run) or an
// in-memory transport (Connect), or over HTTP with HTTPHandler.
type Server struct {
	*sdk.Server
	s *server
}

// ErrBotLogin is the answer to a bot login that is no App's bot account.
var ErrBotLogin = errors.New(`countersign's bot login is the App's slug and "[bot]" (e.g. countersign[bot])`)

// CheckBot checks that login can be an App's bot account: only those end in
// "[bot]", so no person can own it.
func CheckBot(login string) error {
	slug, ok := strings.CutSuffix(login, "[bot]")
	if !ok || strings.TrimSpace(slug) == "" || strings.ContainsAny(slug, " /[]@") {
		return fmt.Errorf("%q: %w", login, ErrBotLogin)
	}
	return nil
}

// NewServer is the MCP server with every tool of countersign. opts.Bot must
// pass CheckBot (it panics otherwise: the caller checks the setting).
func NewServer(opts Options) *Server {
	if opts.Bot == "" {
		opts.Bot = DefaultBot
	}
	if err := CheckBot(opts.Bot); err != nil {
		panic("mcp.NewServer: " + err.Error())
	}
	if opts.Wait <= 0 {
		opts.Wait = DefaultWait
	}
	if opts.Poll <= 0 {
		opts.Poll = 500 * time.Millisecond
	}
	if opts.Token == nil {
		opts.Token = BearerToken
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	s := &server{opts: opts, log: log, tokens: newTokens(opts.Clock)}
	srv := sdk.NewServer(&sdk.Implementation{Name: "countersign", Title: "countersign", Version: opts.Version},
		&sdk.ServerOptions{Instructions: instructions})
	s.register(srv)
	return &Server{Server: srv, s: s}
}

const instructions = `countersign makes "done" mean "independently verified" on GitHub: issues are tasks, milestones are goals, and a task is verified only by someone who neither built nor approved it.
These tools act as the GitHub account of your token, through the same actions a person takes; countersign's bot judges them exactly as it judges a person, and each action returns its verdict: {accepted, state, reason?}.
Tasks are "owner/repo#N"; a goal is a repository and a milestone's number or title. States are spelled as countersign's labels: pending, assigned, in-progress, review, completed, verified.`

// caller is one tool call's person: their GitHub and who they are.
type caller struct {
	gh ghread.GitHub
	me ghread.Person
}

// caller authenticates one call. The token lives only in this call's client.
func (s *server) caller(ctx context.Context, req *sdk.CallToolRequest) (*caller, error) {
	tok, err := s.opts.Token(ctx, req)
	if err != nil {
		return nil, err
	}
	gh, err := s.opts.Dial(tok)
	if err != nil {
		return nil, err
	}
	if req != nil && req.Extra != nil && req.Extra.TokenInfo != nil {
		// HTTPHandler asked GitHub who this request's token is already.
		if me, ok := req.Extra.TokenInfo.Extra[personKey].(ghread.Person); ok {
			return &caller{gh: gh, me: me}, nil
		}
	}
	me, err := s.whoIs(ctx, tok, "")
	if err != nil {
		return nil, fmt.Errorf("GitHub did not accept the token: %w", err)
	}
	return &caller{gh: gh, me: me}, nil
}

// bot is countersign's bot, as ghread judges who wrote what.
func (s *server) bot() ghread.Bot { return ghread.Bot(s.opts.Bot) }

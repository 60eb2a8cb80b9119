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
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultBot is the login of countersign's bot account: the App's slug and "[bot]".
const DefaultBot = "countersign[bot]"

// DefaultWait bounds how long an action waits for countersign's verdict.
const DefaultWait = 30 * time.Second

// Options configures the server.
type Options struct {
	// Dial makes a GitHub client acting with a caller's token.
	Dial Dial
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
// of one request is kept for the next. A request without a bearer token gets
// 401. Tokens are never logged.
func HTTPHandler(srv *sdk.Server) http.Handler {
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := bearer(r.Header.Get("Authorization")); !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="countersign", error="invalid_request", error_description="a GitHub token is required"`)
			http.Error(w, "a GitHub token is required: Authorization: Bearer <token>", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// server is the tools' shared state: nothing of any caller.
type server struct {
	opts Options
	log  *slog.Logger
}

// NewServer is the MCP server with every tool of countersign.
func NewServer(opts Options) *sdk.Server {
	if opts.Bot == "" {
		opts.Bot = DefaultBot
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
	s := &server{opts: opts, log: log}
	srv := sdk.NewServer(&sdk.Implementation{Name: "countersign", Title: "countersign", Version: opts.Version},
		&sdk.ServerOptions{Instructions: instructions})
	s.register(srv)
	return srv
}

const instructions = `countersign makes "done" mean "independently verified" on GitHub: issues are tasks, milestones are goals, and a task is verified only by someone who neither built nor approved it.
These tools act as the GitHub account of your token, through the same actions a person takes; countersign's bot judges them exactly as it judges a person, and each action returns its verdict: {accepted, state, reason?}.
Tasks are "owner/repo#N"; a goal is a repository and a milestone's number or title. States are spelled as countersign's labels: pending, assigned, in-progress, review, completed, verified.`

// caller is one tool call's person: their GitHub and who they are.
type caller struct {
	gh GitHub
	me Person
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
	me, err := gh.Me(ctx)
	if err != nil {
		return nil, fmt.Errorf("GitHub did not accept the token: %w", err)
	}
	return &caller{gh: gh, me: me}, nil
}

// botSlug is the App's slug, as GitHub's GraphQL API names its bot.
func (s *server) botSlug() string { return strings.TrimSuffix(s.opts.Bot, "[bot]") }

// isBot reports whether a comment or issue author is countersign's bot.
func (s *server) isBot(login string) bool { return strings.EqualFold(login, s.opts.Bot) }

// Package mcpdemo plays seed 000's three-agent workflow through countersign's
// MCP server only: a fake GitHub, the real bot, and one MCP client per agent,
// each acting with its own person's token.
package mcpdemo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/app/mcp"
	"github.com/countersign/countersign/app/mcp/ghread"
	"github.com/countersign/countersign/internal/githubtest"
	"github.com/countersign/countersign/internal/scenario"
)

// World is a fake GitHub with one repository, countersign's bot serving it,
// and MCP servers for its people.
type World struct {
	rig  *scenario.Rig
	wait time.Duration
}

// NewWorld starts the fake GitHub and the bot. The team: carol (admin, so a
// lead), alice and bob (write), dave (read only). logw receives the bot's logs.
func NewWorld(ctx context.Context, logw io.Writer) (*World, error) {
	rig, err := scenario.NewRig(ctx, scenario.RigOptions{LogWriter: logw})
	if err != nil {
		return nil, err
	}
	gh := rig.GH()
	for login, perm := range map[string]string{"carol": "admin", "alice": "write", "bob": "write", "dave": "read"} {
		gh.SetPermission(rig.Repo(), login, perm)
	}
	return &World{rig: rig, wait: 20 * time.Second}, nil
}

// Close stops everything.
func (w *World) Close() { w.rig.Close() }

// GH is the fake GitHub.
func (w *World) GH() *githubtest.Server { return w.rig.GH() }

// Repo is the repository ("owner/name").
func (w *World) Repo() string { return w.rig.Repo() }

// Settle waits until the bot has answered everything.
func (w *World) Settle(ctx context.Context) error { return w.rig.Settle(ctx) }

// Options is how the world's MCP servers are configured: acting with tokens on
// the fake GitHub, waiting at most w's wait for a verdict.
func (w *World) Options(token func(context.Context, *sdk.CallToolRequest) (string, error)) mcp.Options {
	return mcp.Options{Dial: ghread.RESTDialer(w.GH().URL(), nil), Token: token, Bot: w.GH().BotLogin(),
		Wait: w.wait, Poll: 50 * time.Millisecond}
}

// Agent connects an MCP client, over in-memory transports, to an MCP server
// (as `countersign mcp` runs over stdio) acting with a new personal access
// token of login.
func (w *World) Agent(ctx context.Context, login string) (*sdk.ClientSession, error) {
	srv := mcp.NewServer(w.Options(mcp.StaticToken(w.GH().AddToken(login))))
	st, ct := sdk.NewInMemoryTransports()
	if _, err := srv.Connect(ctx, st, nil); err != nil {
		return nil, fmt.Errorf("connect %s's server: %w", login, err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: login + "-agent", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		return nil, fmt.Errorf("connect %s's client: %w", login, err)
	}
	return cs, nil
}

// HTTPAgent connects an MCP client over streamable HTTP at endpoint, sending
// tok as its bearer token.
func HTTPAgent(ctx context.Context, endpoint, name, tok string) (*sdk.ClientSession, error) {
	hc := &http.Client{Transport: ghread.WithToken(tok, http.DefaultTransport)}
	return sdk.NewClient(&sdk.Implementation{Name: name, Version: "1"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, MaxRetries: -1}, nil)
}

// Result is one tool call's answer.
type Result struct {
	// Error: the call was a tool error (Text says why).
	Error bool
	// Text is the result's text content.
	Text string
	// Out is its structured content.
	Out map[string]any
}

// Call calls tool with args as session cs.
func Call(ctx context.Context, cs *sdk.ClientSession, tool string, args map[string]any) (Result, error) {
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", tool, err)
	}
	out := Result{Error: res.IsError}
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			out.Text += t.Text
		}
	}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return out, fmt.Errorf("%s: %w", tool, err)
		}
		if err := json.Unmarshal(b, &out.Out); err != nil {
			return out, fmt.Errorf("%s: structured content: %w", tool, err)
		}
	}
	return out, nil
}

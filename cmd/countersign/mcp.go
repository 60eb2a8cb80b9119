package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/countersign/countersign/app/buildinfo"
	"github.com/countersign/countersign/app/mcp"
	"github.com/countersign/countersign/app/mcp/ghread"
)

func init() { addCommand(newMCP) }

const mcpLong = `Serves countersign's tools to AI agents over the Model Context Protocol:
create_goal, create_task, link_task_to_goal, assign_task, start_task,
submit_for_review, approve_task, verify_task, reject_verification, verify_goal,
reject_goal, task_status, goal_status and my_work.

Every tool acts as the GitHub account of the caller's own token, through the
actions a person takes (a comment with a command, a review, an issue or
milestone write): countersign's bot judges an agent exactly as a person. An
action waits (--wait) for countersign's verdict and returns it.

Over stdio (the default) the token is GITHUB_TOKEN (or GH_TOKEN); without one
the server does not start. With --listen the server speaks streamable HTTP at
/mcp, and each request's "Authorization: Bearer <token>" is its caller, checked
with GitHub before the request is served (401 if GitHub does not accept it);
tokens are never stored or logged.

GITHUB_API_URL is GitHub's API, as for serve (default https://api.github.com/).
COUNTERSIGN_BOT (--bot) is the login of countersign's bot account, the App's
slug and "[bot]" (default countersign[bot]); it must end in "[bot]". Only
that account, of type Bot, speaks for countersign: its labels, comments and
issues.`

func newMCP(c *cli) *cobra.Command {
	var listen, bot, apiURL string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "mcp [--listen ADDR] [--wait 30s] [--bot LOGIN]",
		Short: "serve the goal and verification tools to AI agents (Model Context Protocol)",
		Long:  mcpLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("github-api-url") {
				apiURL = c.envOr("GITHUB_API_URL", apiURL)
			}
			if !cmd.Flags().Changed("bot") {
				bot = c.envOr("COUNTERSIGN_BOT", bot)
			}
			if wait <= 0 {
				return usageErrorf("--wait must be positive")
			}
			if err := mcp.CheckBot(bot); err != nil {
				return usageErrorf("--bot (COUNTERSIGN_BOT) %v", err)
			}
			log := slog.New(slog.NewJSONHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
			opts := mcp.Options{Dial: ghread.RESTDialer(apiURL, nil), Bot: bot, Wait: wait, Log: log, Version: buildinfo.Read().Version}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			if listen == "" {
				tok := c.envOr("GITHUB_TOKEN", c.getenv("GH_TOKEN"))
				if tok == "" {
					return usageErrorf("countersign mcp over stdio acts with the caller's own GitHub token: set GITHUB_TOKEN or GH_TOKEN (or serve HTTP with --listen, where each request carries its bearer token)")
				}
				opts.Token = mcp.StaticToken(tok)
				if err := mcp.NewServer(opts).Run(ctx, mcp.StdioTransport(os.Stdin, nopWriteCloser{c})); err != nil && ctx.Err() == nil {
					return failed(err)
				}
				return nil
			}
			opts.Token = mcp.BearerToken
			return serveMCP(ctx, listen, mcp.HTTPHandler(mcp.NewServer(opts)), wait, log)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "serve streamable HTTP on this address (e.g. :8090) instead of stdio")
	cmd.Flags().DurationVar(&wait, "wait", mcp.DefaultWait, "how long an action waits for countersign's verdict")
	cmd.Flags().StringVar(&bot, "bot", mcp.DefaultBot, "countersign's bot login [COUNTERSIGN_BOT]")
	cmd.Flags().StringVar(&apiURL, "github-api-url", "https://api.github.com/", "GitHub REST API base URL [GITHUB_API_URL]")
	return cmd
}

// nopWriteCloser is the command's stdout as the MCP transport's writer.
type nopWriteCloser struct{ c *cli }

func (w nopWriteCloser) Write(b []byte) (int, error) { return w.c.stdout.Write(b) }
func (nopWriteCloser) Close() error                  { return nil }

// serveMCP serves h at addr/mcp until ctx ends. A request has 30 s to
// arrive; its answer may take the bounded wait and the reads around it.
func serveMCP(ctx context.Context, addr string, h http.Handler, wait time.Duration, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return failed(fmt.Errorf("listen on %s: %w", addr, err))
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: wait + 90*time.Second, IdleTimeout: 2 * time.Minute}
	log.Info("MCP server listening", "addr", ln.Addr().String(), "path", "/mcp")
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return failed(err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return failed(err)
	}
	return nil
}

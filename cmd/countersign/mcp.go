package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
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
the server does not start. A malformed line is answered with a JSON-RPC error
and the server goes on.

With --listen the server speaks streamable HTTP at /mcp, and each request's
"Authorization: Bearer <token>" is its caller, checked with GitHub before the
request is served (401 if GitHub does not accept it; who a token is is
remembered by its hash for 5 minutes, a refused token is refused for a minute
without asking again); tokens are never stored or logged. "--listen :8090"
listens on loopback only (127.0.0.1:8090); name an address (0.0.0.0:8090) to
listen on others. --tls-cert and --tls-key (both) serve HTTPS.

Behind a proxy on the same host that keeps the public Host header, name that
host in --allowed-hosts (COUNTERSIGN_MCP_ALLOWED_HOSTS), or every request gets
403. A request from a browser page (with an Origin header) is served only when
its origin is in --allowed-origins (COUNTERSIGN_MCP_ALLOWED_ORIGINS) or is a
page of this machine (a loopback host).

GITHUB_API_URL is GitHub's API, as for serve (default https://api.github.com/).
COUNTERSIGN_BOT (--bot) is the login of countersign's bot account, the App's
slug and "[bot]" (default countersign[bot]); it must end in "[bot]". Only
that account, of type Bot, speaks for countersign: its labels, comments and
issues.`

func newMCP(c *cli) *cobra.Command {
	var listen, bot, apiURL, tlsCert, tlsKey string
	var allowedHosts, allowedOrigins []string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "mcp [--listen ADDR [--tls-cert FILE --tls-key FILE] [--allowed-hosts HOSTS] [--allowed-origins ORIGINS]] [--wait 30s] [--bot LOGIN]",
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
				for _, f := range []string{"tls-cert", "tls-key", "allowed-hosts", "allowed-origins"} {
					if cmd.Flags().Changed(f) {
						return usageErrorf("--%s is a setting of the HTTP server: give --listen too (over stdio there is no HTTP)", f)
					}
				}
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
			if !cmd.Flags().Changed("allowed-hosts") {
				allowedHosts = splitList(c.getenv("COUNTERSIGN_MCP_ALLOWED_HOSTS"))
			}
			if !cmd.Flags().Changed("allowed-origins") {
				allowedOrigins = splitList(c.getenv("COUNTERSIGN_MCP_ALLOWED_ORIGINS"))
			}
			for _, o := range allowedOrigins {
				if err := mcp.CheckOrigin(o); err != nil {
					return usageErrorf("--allowed-origins (COUNTERSIGN_MCP_ALLOWED_ORIGINS): %v", err)
				}
			}
			if !cmd.Flags().Changed("tls-cert") {
				tlsCert = c.envOr("COUNTERSIGN_MCP_TLS_CERT", "")
			}
			if !cmd.Flags().Changed("tls-key") {
				tlsKey = c.envOr("COUNTERSIGN_MCP_TLS_KEY", "")
			}
			tlsConf, err := mcpTLS(tlsCert, tlsKey)
			if err != nil {
				return err
			}
			opts.Token = mcp.BearerToken
			opts.AllowedHosts, opts.AllowedOrigins = allowedHosts, allowedOrigins
			return serveMCP(ctx, loopbackByDefault(listen), tlsConf, mcp.HTTPHandler(mcp.NewServer(opts)), wait, log)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "serve streamable HTTP on this address instead of stdio (:8090 is loopback only, 127.0.0.1:8090)")
	cmd.Flags().StringSliceVar(&allowedHosts, "allowed-hosts", nil, "Host headers served besides loopback, comma-separated: a proxy's public name [COUNTERSIGN_MCP_ALLOWED_HOSTS]")
	cmd.Flags().StringSliceVar(&allowedOrigins, "allowed-origins", nil, "browser origins served besides loopback pages, comma-separated, e.g. https://mcp.example.com [COUNTERSIGN_MCP_ALLOWED_ORIGINS]")
	cmd.Flags().StringVar(&tlsCert, "tls-cert", "", "serve HTTPS with this certificate (PEM; with --tls-key) [COUNTERSIGN_MCP_TLS_CERT]")
	cmd.Flags().StringVar(&tlsKey, "tls-key", "", "the certificate's private key (PEM; with --tls-cert) [COUNTERSIGN_MCP_TLS_KEY]")
	cmd.Flags().DurationVar(&wait, "wait", mcp.DefaultWait, "how long an action waits for countersign's verdict")
	cmd.Flags().StringVar(&bot, "bot", mcp.DefaultBot, "countersign's bot login [COUNTERSIGN_BOT]")
	cmd.Flags().StringVar(&apiURL, "github-api-url", "https://api.github.com/", "GitHub REST API base URL [GITHUB_API_URL]")
	return cmd
}

// nopWriteCloser is the command's stdout as the MCP transport's writer.
type nopWriteCloser struct{ c *cli }

func (w nopWriteCloser) Write(b []byte) (int, error) { return w.c.stdout.Write(b) }
func (nopWriteCloser) Close() error                  { return nil }

// splitList is a comma-separated list without blanks.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// loopbackByDefault is addr with a loopback host when it names only a port
// (":8090"): listening on every interface must be asked for by name.
func loopbackByDefault(addr string) string {
	if host, port, err := net.SplitHostPort(addr); err == nil && host == "" {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

// mcpTLS is the TLS configuration of --tls-cert and --tls-key: both, or
// neither (nil).
func mcpTLS(cert, key string) (*tls.Config, error) {
	if cert == "" && key == "" {
		return nil, nil
	}
	if cert == "" || key == "" {
		return nil, usageErrorf("--tls-cert and --tls-key go together: give both a certificate and its private key (PEM files), or neither")
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, usageErrorf("--tls-cert %s, --tls-key %s: %v", cert, key, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

// serveMCP serves h at addr/mcp until ctx ends, over TLS when tlsConf is
// set. A request has 30 s to arrive; its answer may take the bounded wait
// and the reads around it.
func serveMCP(ctx context.Context, addr string, tlsConf *tls.Config, h http.Handler, wait time.Duration, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return failed(fmt.Errorf("listen on %s: %w", addr, err))
	}
	scheme := "http"
	if tlsConf != nil {
		ln, scheme = tls.NewListener(ln, tlsConf), "https"
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() && tlsConf == nil {
		log.Warn("MCP server serves plain HTTP beyond this host: bearer tokens cross the network unencrypted; use --tls-cert/--tls-key or a TLS proxy", "addr", ln.Addr().String())
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: wait + 90*time.Second, IdleTimeout: 2 * time.Minute}
	log.Info("MCP server listening", "addr", ln.Addr().String(), "scheme", scheme, "path", "/mcp")
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

package mcp_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/app/mcp"
	"github.com/countersign/countersign/app/mcp/ghread"
)

// publicHost is the name clients use for the MCP server: a TLS proxy on the
// same host answers for it (httptest's certificate names example.com).
const publicHost = "example.com"

// behindProxy serves h on loopback behind a TLS reverse proxy that keeps the
// public Host header (as Caddy and Envoy do, and nginx with
// `proxy_set_header Host $host`), and returns a client that reaches the proxy
// as https://example.com.
func behindProxy(t *testing.T, h http.Handler) *http.Client {
	t.Helper()
	backend := httptest.NewServer(h) // 127.0.0.1: the SDK's DNS-rebinding check applies
	t.Cleanup(backend.Close)
	target, err := url.Parse(backend.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httptest.NewTLSServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		pr.Out.Host = pr.In.Host // keep the public Host
		pr.SetXForwarded()
	}})
	t.Cleanup(proxy.Close)
	tr := proxy.Client().Transport.(*http.Transport).Clone()
	addr := proxy.Listener.Addr().String()
	tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	return &http.Client{Transport: tr}
}

// initialize posts an MCP initialize request with origin (none if "").
func initialize(t *testing.T, hc *http.Client, endpoint, tok, origin string) int {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	req, err := http.NewRequest("POST", endpoint, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Behind a TLS proxy that keeps the public Host, a server told that host
// (--allowed-hosts) serves a real MCP client session; an Origin that is not
// allowed is refused (403), and the allowed one is served.
func TestHTTPBehindATLSProxyKeepingThePublicHost(t *testing.T) {
	w, ctx := world(t)
	opts := w.Options(mcp.BearerToken)
	opts.AllowedHosts = []string{publicHost}
	opts.AllowedOrigins = []string{"https://" + publicHost}
	hc := behindProxy(t, mcp.HTTPHandler(mcp.NewServer(opts)))
	endpoint := "https://" + publicHost + "/mcp"
	tok := w.GH().AddToken("alice")

	cs, err := sdk.NewClient(&sdk.Implementation{Name: "alice-agent", Version: "1"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: ghread.WithToken(tok, hc.Transport)}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("an MCP client through the proxy: %v", err)
	}
	defer cs.Close()
	if r := call(t, ctx, cs, "my_work", map[string]any{"repo": w.Repo()}); r.Error || r.Out["me"] != "alice" {
		t.Fatalf("my_work through the proxy: %s", r.Text)
	}
	if code := initialize(t, hc, endpoint, tok, "https://evil.example.net"); code != http.StatusForbidden {
		t.Fatalf("a foreign Origin through the proxy: %d, want 403", code)
	}
	if code := initialize(t, hc, endpoint, tok, "https://"+publicHost); code != http.StatusOK {
		t.Fatalf("the allowed Origin through the proxy: %d, want 200", code)
	}
	if code := initialize(t, hc, endpoint, tok, ""); code != http.StatusOK {
		t.Fatalf("no Origin (a non-browser client) through the proxy: %d, want 200", code)
	}
}

// A public Host nobody allowed is still refused behind the proxy: allowing
// one host does not allow every host.
func TestHTTPBehindAProxyRefusesAHostNotAllowed(t *testing.T) {
	w, _ := world(t)
	opts := w.Options(mcp.BearerToken)
	opts.AllowedHosts = []string{"mcp.example.org"}
	hc := behindProxy(t, mcp.HTTPHandler(mcp.NewServer(opts)))
	if code := initialize(t, hc, "https://"+publicHost+"/mcp", w.GH().AddToken("alice"), ""); code != http.StatusForbidden {
		t.Fatalf("Host %s not allowed: %d, want 403", publicHost, code)
	}
}

// The MCP transport specification: servers must validate Origin on every
// connection. A browser page of another origin is refused (403) even on
// loopback with no setting; a request without Origin is a non-browser client
// and is served.
func TestHTTPRefusesAForeignOrigin(t *testing.T) {
	w, _ := world(t)
	srv := httptest.NewServer(mcp.HTTPHandler(mcp.NewServer(w.Options(mcp.BearerToken))))
	t.Cleanup(srv.Close)
	tok := w.GH().AddToken("alice")
	if code := initialize(t, srv.Client(), srv.URL, tok, "http://evil.example.net"); code != http.StatusForbidden {
		t.Fatalf("a foreign Origin: %d, want 403", code)
	}
	if code := initialize(t, srv.Client(), srv.URL, tok, "null"); code != http.StatusForbidden {
		t.Fatalf("Origin null: %d, want 403", code)
	}
	if code := initialize(t, srv.Client(), srv.URL, tok, ""); code != http.StatusOK {
		t.Fatalf("no Origin: %d, want 200", code)
	}
}

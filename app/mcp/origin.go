package mcp

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// hostAllowed tells whether a request's Host header names this server: a
// loopback name or address, or one of allowed (a host, or a host:port that
// must match with its port).
func hostAllowed(host string, allowed []string) bool {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.TrimSuffix(strings.Trim(strings.ToLower(name), "[]"), ".")
	if isLoopback(name) {
		return true
	}
	for _, a := range allowed {
		a = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(a)), ".")
		if a != "" && (a == name || a == strings.ToLower(host)) {
			return true
		}
	}
	return false
}

func isLoopback(name string) bool {
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}

// CheckOrigin checks that o is an origin as browsers send it:
// scheme://host[:port], nothing more.
func CheckOrigin(o string) error {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("%q is no origin: write scheme://host[:port], e.g. https://mcp.example.com", o)
	}
	return nil
}

// normalOrigin is o as compared: lower case, without a trailing slash; ""
// when o is no origin ("null", an opaque origin, among them).
func normalOrigin(o string) string {
	if CheckOrigin(o) != nil {
		return ""
	}
	return strings.TrimSuffix(strings.ToLower(o), "/")
}

// originAllowed tells whether a request that carries the Origin header o may
// be served: o is one of allowed, or a page of this machine (a loopback
// host, which DNS rebinding cannot forge: the browser names the page's own
// origin).
func originAllowed(o string, allowed []string) bool {
	n := normalOrigin(o)
	if n == "" {
		return false
	}
	for _, a := range allowed {
		if normalOrigin(a) == n {
			return true
		}
	}
	u, _ := url.Parse(n)
	return isLoopback(strings.Trim(u.Hostname(), "[]"))
}

// guard refuses (403) a request whose Host this server does not answer for
// (when hosts are allowed: the SDK's own check answers otherwise), or which
// carries an Origin not allowed (the MCP transport specification: servers
// must validate Origin on all incoming connections; a request without one is
// not from a browser page, and is served).
func guard(hosts, origins []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(hosts) > 0 && !hostAllowed(r.Host, hosts) {
			http.Error(w, fmt.Sprintf("Forbidden: Host %q is not one this server answers for (--allowed-hosts)", r.Host), http.StatusForbidden)
			return
		}
		if o := r.Header.Values("Origin"); len(o) > 0 && (len(o) > 1 || !originAllowed(o[0], origins)) {
			http.Error(w, fmt.Sprintf("Forbidden: Origin %q is not allowed (--allowed-origins)", o[0]), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

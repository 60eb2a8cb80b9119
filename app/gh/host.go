package gh

import (
	"net"
	"net/url"
	"strings"
)

// WebHost is the host whose web pages the API countersign talks to serves:
// github.com for api.github.com, a GitHub Enterprise Server's own host
// otherwise; "" for a server on a loopback address (a local test server,
// which answers for any host).
func (g *GitHub) WebHost() string {
	if g.apiURL == publicAPI {
		return "github.com"
	}
	u, err := url.Parse(g.apiURL)
	if err != nil {
		return ""
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); (ip != nil && ip.IsLoopback()) || strings.EqualFold(host, "localhost") {
		return ""
	}
	return strings.ToLower(u.Host)
}

package register

import (
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/goccy/go-yaml"
)

// WebhookPath is the route countersign serves GitHub's deliveries on.
const WebhookPath = "/webhook"

// sharedAddressSpace is 100.64.0.0/10 (RFC 6598, carrier-grade NAT): not
// routed on the internet, and not covered by netip's IsPrivate.
var sharedAddressSpace = netip.MustParsePrefix("100.64.0.0/10")

// internalSuffixes are name suffixes that resolve only inside a network (mDNS,
// private zones, home routers), never from GitHub's servers.
var internalSuffixes = []string{".local", ".internal", ".localhost", ".localdomain", ".lan", ".home.arpa", ".intranet", ".corp"}

// WebhookWarnings says why GitHub may never reach countersign at webhookURL, or
// reach it and be answered 404: a loopback host (GitHub would call itself), a
// private, shared or link-local address or a name that resolves only inside a
// network (github.com sends from the internet: only a GitHub Enterprise Server
// inside that network could reach it, so those are warned about only when
// githubDotCom), plain http (deliveries travel unencrypted), and a path other
// than /webhook (countersign serves nothing else; a proxy in front may rewrite
// it). None of these is fatal: the URL may be right for a set-up countersign
// cannot see. An unparseable URL gives no warnings (Start refuses it).
func WebhookWarnings(webhookURL string, githubDotCom bool) []string {
	u, err := url.Parse(webhookURL)
	if err != nil || u.Host == "" {
		return nil
	}
	var out []string
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	where := "GitHub"
	if githubDotCom {
		where = "github.com"
	}
	addr, err := netip.ParseAddr(host)
	ip := err == nil
	addr = addr.Unmap()
	switch {
	case host == "localhost" || strings.HasSuffix(host, ".localhost") || ip && addr.IsLoopback():
		out = append(out, fmt.Sprintf("%s is this machine (loopback): GitHub would send the deliveries to itself, never here; use the public https address that reaches countersign", host))
	case ip && addr.IsUnspecified():
		out = append(out, fmt.Sprintf("%s is no address at all: GitHub cannot send deliveries to it", host))
	case !githubDotCom:
	case ip && (addr.IsPrivate() || sharedAddressSpace.Contains(addr)):
		out = append(out, fmt.Sprintf("%s is a private address: %s sends deliveries from the internet and cannot reach it; use a public https address (an ingress or a load balancer)", host, where))
	case ip && (addr.IsLinkLocalUnicast() || addr.IsLinkLocalMulticast()):
		out = append(out, fmt.Sprintf("%s is a link-local address: only machines on the same network link reach it, never %s", host, where))
	case !ip && internalSuffix(host) != "":
		out = append(out, fmt.Sprintf("%s ends in %s, a name that resolves only inside a network: %s cannot reach it; use a public DNS name", host, internalSuffix(host), where))
	case !ip && !strings.Contains(host, "."):
		out = append(out, fmt.Sprintf("%s is a single-label name, which resolves only inside a network: %s cannot reach it; use a public DNS name", host, where))
	}
	if u.Scheme != "https" {
		out = append(out, fmt.Sprintf("the webhook URL is %s, not https: deliveries (issues, comments, pull requests) would travel unencrypted; put TLS in front of countersign and register the https address", u.Scheme))
	}
	if p := u.EscapedPath(); p != WebhookPath {
		if p == "" {
			p = "/"
		}
		out = append(out, fmt.Sprintf("the webhook URL's path is %s: countersign serves deliveries on POST %s and answers 404 elsewhere (fine only if a proxy in front rewrites the path)", p, WebhookPath))
	}
	return out
}

func internalSuffix(host string) string {
	for _, s := range internalSuffixes {
		if strings.HasSuffix(host, s) {
			return s
		}
	}
	return ""
}

// DefaultDir is where register writes the App's files unless told otherwise:
// under the user's configuration directory ($XDG_CONFIG_HOME or ~/.config on
// Linux, ~/Library/Application Support on macOS, %AppData% on Windows), in
// countersign/NAME, NAME being the App's name as a slug (the name given, else
// app.yml's). Outside any checkout, so the private key is never committed by
// accident.
func DefaultDir(appYML []byte, name string) (string, error) {
	if name == "" {
		var m struct {
			Name string `yaml:"name"`
		}
		if err := yaml.Unmarshal(appYML, &m); err != nil {
			return "", fmt.Errorf("app.yml: %w", err)
		}
		name = m.Name
	}
	slug := slugOf(name)
	if slug == "" {
		slug = "countersign"
	}
	base, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no configuration directory for the App's files (%v): choose one with --dir", err)
	}
	return filepath.Join(base, "countersign", slug), nil
}

// slugOf is name as GitHub makes an App's slug of it: lower case, each run of
// other characters than letters and digits one hyphen.
func slugOf(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		} else {
			dash = true
		}
	}
	return b.String()
}

// GitCheckout is the root of the git work tree dir is inside, or "" when it
// is inside none: the App's private key there is one `git add` from being
// committed.
func GitCheckout(dir string) string {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

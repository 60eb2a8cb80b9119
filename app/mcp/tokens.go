package mcp

import (
	"crypto/sha256"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/countersign/countersign/app/clock"
	"github.com/countersign/countersign/app/mcp/ghread"
)

// TokenTTL is how long the server remembers who a token GitHub accepted is,
// so that a session's messages do not each ask GitHub (GET /user).
const TokenTTL = 5 * time.Minute

// RefusedTTL is how long a token GitHub refused is refused again without
// asking GitHub, and the window in which one client address may have
// RefusalsPerAddress tokens refused before its new tokens get 429.
const RefusedTTL = time.Minute

// RefusalsPerAddress bounds the tokens refused for one client address within
// RefusedTTL: past it, a token the server does not know is answered 429
// without asking GitHub.
const RefusalsPerAddress = 20

// maxTokens bounds each of the server's memories of tokens and addresses.
const maxTokens = 4096

// tokenHash is what the server remembers of a token: its SHA-256, never the
// token itself.
type tokenHash [sha256.Size]byte

func hashToken(tok string) tokenHash { return sha256.Sum256([]byte(tok)) }

// tokens remembers, briefly and by hash, who the tokens GitHub accepted are
// and which tokens it refused, and counts each client address's refusals.
type tokens struct {
	clk     clock.Clock
	mu      sync.Mutex
	known   map[tokenHash]knownToken
	refused map[tokenHash]time.Time // until
	addrs   map[string]*addrRefusals
}

type knownToken struct {
	me    ghread.Person
	until time.Time
}

// addrRefusals counts an address's refused tokens in the window from start.
type addrRefusals struct {
	start time.Time
	n     int
}

func newTokens(clk clock.Clock) *tokens {
	return &tokens{clk: clk, known: map[tokenHash]knownToken{}, refused: map[tokenHash]time.Time{}, addrs: map[string]*addrRefusals{}}
}

// person is who h is, while remembered.
func (t *tokens) person(h tokenHash) (ghread.Person, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k, ok := t.known[h]
	if !ok || !t.clk.Now().Before(k.until) {
		delete(t.known, h)
		return ghread.Person{}, false
	}
	return k.me, true
}

// remember records that GitHub says h is me.
func (t *tokens) remember(h tokenHash, me ghread.Person) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clk.Now()
	if len(t.known) >= maxTokens {
		for k, v := range t.known {
			if !now.Before(v.until) {
				delete(t.known, k)
			}
		}
		if len(t.known) >= maxTokens {
			clear(t.known)
		}
	}
	t.known[h] = knownToken{me: me, until: now.Add(TokenTTL)}
	delete(t.refused, h)
}

// isRefused tells whether GitHub refused h within RefusedTTL.
func (t *tokens) isRefused(h tokenHash) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	until, ok := t.refused[h]
	if ok && !t.clk.Now().Before(until) {
		delete(t.refused, h)
		return false
	}
	return ok
}

// refuse records that GitHub refused h, sent from addr.
func (t *tokens) refuse(h tokenHash, addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clk.Now()
	if len(t.refused) >= maxTokens {
		for k, until := range t.refused {
			if !now.Before(until) {
				delete(t.refused, k)
			}
		}
		if len(t.refused) >= maxTokens {
			clear(t.refused)
		}
	}
	t.refused[h] = now.Add(RefusedTTL)
	if addr == "" {
		return
	}
	r := t.window(addr, now)
	r.n++
}

// window is addr's current window of refusals; t.mu is held.
func (t *tokens) window(addr string, now time.Time) *addrRefusals {
	r, ok := t.addrs[addr]
	if ok && now.Sub(r.start) < RefusedTTL {
		return r
	}
	if len(t.addrs) >= maxTokens {
		for a, w := range t.addrs {
			if now.Sub(w.start) >= RefusedTTL {
				delete(t.addrs, a)
			}
		}
		if len(t.addrs) >= maxTokens {
			clear(t.addrs)
		}
	}
	r = &addrRefusals{start: now}
	t.addrs[addr] = r
	return r
}

// limited tells whether addr had RefusalsPerAddress tokens refused in its
// current window, and when that window ends.
func (t *tokens) limited(addr string) (bool, time.Duration) {
	if addr == "" {
		return false, 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clk.Now()
	r := t.window(addr, now)
	if r.n < RefusalsPerAddress {
		return false, 0
	}
	return true, r.start.Add(RefusedTTL).Sub(now)
}

// clientAddr is the address of the client that sent r: the peer's IP, or,
// when the peer is a proxy on this host (loopback), the last address in
// X-Forwarded-For (the one that proxy saw).
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 {
			hops := strings.Split(xff[len(xff)-1], ",")
			if last := strings.TrimSpace(hops[len(hops)-1]); last != "" {
				return last
			}
		}
	}
	return host
}

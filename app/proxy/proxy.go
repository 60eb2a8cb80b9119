// Package proxy receives webhooks through a webhook proxy (a smee.io channel)
// instead of a public URL, for trying countersign from a laptop.
//
// It subscribes to the channel's event stream (server-sent events) and hands
// each delivery to the server's own HTTP handler as a POST /webhook request,
// so a delivery through the proxy meets exactly the checks of one GitHub
// posts: the signature, the size limit, the de-duplication and the durable
// queue. Nothing here decides whether a delivery is genuine.
//
// smee.io sends, for each webhook it received, an unnamed event (a `message`
// to a browser's EventSource) whose data
// is a JSON object: the webhook's request headers as lowercase keys
// ("x-github-event", "x-github-delivery", "x-hub-signature-256", ...), the
// parsed payload under "body", the query under "query" and the time under
// "timestamp"; and `ready` and `ping` events that carry nothing. The stream
// has no event ids, so a connection lost is resumed from now: what GitHub
// sent meanwhile is fetched again from the App's delivery log (Config.OnResume).
package proxy

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sse "github.com/tmaxmax/go-sse"
)

// maxEvent is the largest event read from the stream: a 25 MiB payload, its
// headers, and room for the escaping of its re-serialisation.
const maxEvent = 32 << 20

// Config configures a Proxy.
type Config struct {
	// URL is the channel's URL (https://smee.io/CHANNEL).
	URL string
	// Handler is the server's HTTP handler: each delivery is served to it as
	// POST /webhook.
	Handler http.Handler
	// Secret is the webhook secret. It only chooses which form of the body to
	// hand on when the stream's re-serialised body differs from what GitHub
	// signed (see body); the handler still checks the signature.
	Secret []byte
	Log    *slog.Logger
	// OnConnected is told each change of the connection (true: connected).
	OnConnected func(bool)
	// OnResume is called, in its own goroutine, when the stream is back after
	// being lost, with when it was last known up and when it came back: what
	// GitHub sent between them never came through.
	OnResume func(ctx context.Context, from, to time.Time)
	// HTTPClient connects to the channel (nil: a client without a timeout, as
	// the stream stays open).
	HTTPClient *http.Client
	// Backoff is the first wait before connecting again (0: one second); it
	// doubles up to MaxBackoff (0: one minute).
	Backoff, MaxBackoff time.Duration
}

// Proxy is one subscription to a webhook proxy channel.
type Proxy struct {
	cfg       Config
	connected atomic.Bool
	mu        sync.Mutex
	lostAt    time.Time // when the stream was lost (zero: connected, or never connected)
	logged    bool      // the current outage was logged
	resumes   sync.WaitGroup
}

// New returns a Proxy; Run subscribes.
func New(cfg Config) *Proxy {
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = time.Minute
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Proxy{cfg: cfg}
}

// Connected reports whether the stream is connected now.
func (p *Proxy) Connected() bool { return p.connected.Load() }

// Ready is nil while the stream is connected, else why deliveries cannot
// arrive (for /readyz).
func (p *Proxy) Ready() error {
	if p.Connected() {
		return nil
	}
	return errors.New("webhook proxy not connected")
}

// Run subscribes to the channel until ctx ends, connecting again with backoff
// whenever the stream is lost or refused. It logs once when the stream is
// lost (or cannot be reached at start) and once when it is back, never once
// per attempt.
func (p *Proxy) Run(ctx context.Context) {
	defer p.resumes.Wait()
	defer p.setConnected(ctx, false, nil)
	client := &sse.Client{
		HTTPClient: p.cfg.HTTPClient,
		ResponseValidator: func(r *http.Response) error {
			if err := sse.DefaultValidator(r); err != nil {
				return err
			}
			p.setConnected(ctx, true, nil)
			return nil
		},
		OnRetry: func(err error, _ time.Duration) { p.setConnected(ctx, false, err) },
		Backoff: sse.Backoff{InitialInterval: p.cfg.Backoff, Multiplier: 2, MaxInterval: p.cfg.MaxBackoff},
	}
	wait := p.cfg.Backoff
	for ctx.Err() == nil {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.cfg.URL, nil)
		if err != nil {
			p.cfg.Log.Error("webhook proxy: bad URL; not subscribing", "error", err)
			return
		}
		conn := client.NewConnection(req)
		conn.Buffer(nil, maxEvent)
		// smee sends deliveries as unnamed events (type "message" to a
		// browser); one named "message" is taken as well.
		conn.SubscribeMessages(func(ev sse.Event) { p.deliver(ctx, ev) })
		conn.SubscribeEvent("message", func(ev sse.Event) { p.deliver(ctx, ev) })
		start := time.Now()
		err = conn.Connect() // returns on ctx's end, or on a refusal the library does not retry (a 4xx or 5xx answer)
		if ctx.Err() != nil {
			return
		}
		p.setConnected(ctx, false, err)
		if time.Since(start) > p.cfg.MaxBackoff {
			wait = p.cfg.Backoff
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, p.cfg.MaxBackoff)
	}
}

// setConnected records the connection's state and logs its changes: one
// line when it is lost (or cannot be reached at start), one when it is back,
// never one per attempt.
func (p *Proxy) setConnected(ctx context.Context, up bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	was := p.connected.Swap(up)
	now := time.Now()
	switch {
	case up && !was:
		from := p.lostAt
		p.lostAt, p.logged = time.Time{}, false
		if from.IsZero() {
			p.cfg.Log.Info("webhook proxy connected", "url", redact(p.cfg.URL))
			break
		}
		p.cfg.Log.Info("webhook proxy connected again", "url", redact(p.cfg.URL), "down_for", now.Sub(from).Round(time.Millisecond).String())
		if p.cfg.OnResume != nil && ctx.Err() == nil {
			p.resumes.Add(1)
			go func() {
				defer p.resumes.Done()
				p.cfg.OnResume(ctx, from, now)
			}()
		}
	case !up:
		if was {
			p.lostAt = now
		}
		if !p.logged && ctx.Err() == nil {
			p.logged = true
			msg := "webhook proxy connection lost; connecting again with backoff"
			if p.lostAt.IsZero() {
				msg = "webhook proxy not reachable; connecting again with backoff"
			}
			p.cfg.Log.Warn(msg, "url", redact(p.cfg.URL), "error", errText(err))
		}
	}
	if up != was && p.cfg.OnConnected != nil {
		p.cfg.OnConnected(up)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// redact is u without its query (a channel URL has no credentials, but a
// self-hosted proxy's might carry a token there).
func redact(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		return u[:i]
	}
	return u
}

// deliver hands one stream event to the handler as POST /webhook. Events
// that are no delivery (smee's `ready` and `ping` are named events and never
// reach here; an empty object neither) are skipped.
func (p *Proxy) deliver(ctx context.Context, ev sse.Event) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(ev.Data), &fields); err != nil {
		p.cfg.Log.Warn("webhook proxy: event is not a JSON object; skipped", "error", err)
		return
	}
	raw, ok := fields["body"]
	if !ok {
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "/webhook", nil)
	if err != nil {
		return
	}
	for k, v := range fields {
		if !forwarded(k) {
			continue
		}
		var s string
		if json.Unmarshal(v, &s) == nil {
			req.Header.Set(k, s)
		}
	}
	body := p.body(raw, req.Header.Get("X-Hub-Signature-256"))
	req.Body = http.NoBody
	if len(body) > 0 {
		req.Body = readCloser{bytes.NewReader(body)}
	}
	req.ContentLength = int64(len(body))
	// GitHub Apps always deliver JSON; the proxy re-serialises the payload as
	// JSON whatever it was.
	req.Header.Set("Content-Type", "application/json")
	req.RemoteAddr = "webhook-proxy"
	w := &reply{header: http.Header{}}
	p.cfg.Handler.ServeHTTP(w, req)
	p.cfg.Log.Debug("webhook proxy: delivery handed on", "delivery", req.Header.Get("X-GitHub-Delivery"),
		"event", req.Header.Get("X-GitHub-Event"), "status", w.code)
}

// forwarded reports whether a key of smee's event is a request header to
// hand on: GitHub's own (X-GitHub-*, X-Hub-*) and the User-Agent. Hop-by-hop
// and length headers are the proxy's, not GitHub's.
func forwarded(k string) bool {
	k = strings.ToLower(k)
	return strings.HasPrefix(k, "x-github-") || strings.HasPrefix(k, "x-hub-") || k == "user-agent"
}

// body is the payload to hand on. smee parses the JSON GitHub posted and
// sends it again re-serialised (JSON.stringify), which is what its own client
// posts: the stream's bytes of "body" are those bytes exactly. GitHub sends
// compact JSON, so they are usually the bytes GitHub signed. When they are
// not and a compact form of them is, that form is handed on; otherwise the
// stream's bytes, and the handler refuses the signature.
func (p *Proxy) body(raw json.RawMessage, sig string) []byte {
	if len(p.cfg.Secret) == 0 || signed(raw, sig, p.cfg.Secret) {
		return raw
	}
	var c bytes.Buffer
	if json.Compact(&c, raw) == nil && !bytes.Equal(c.Bytes(), raw) && signed(c.Bytes(), sig, p.cfg.Secret) {
		return c.Bytes()
	}
	return raw
}

func signed(body []byte, sig string, secret []byte) bool {
	want, ok := strings.CutPrefix(sig, "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(want)
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return hmac.Equal(m.Sum(nil), got)
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

// reply is the answer of the handler to a delivery through the proxy: only
// its status is kept (the intake logs and counts the rest).
type reply struct {
	header http.Header
	code   int
}

func (r *reply) Header() http.Header { return r.header }

func (r *reply) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return len(b), nil
}

func (r *reply) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

// String describes the proxy for logs.
func (p *Proxy) String() string { return fmt.Sprintf("webhook proxy %s", redact(p.cfg.URL)) }

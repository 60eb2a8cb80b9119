package scenario

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/app/store/bolt"
	"github.com/countersign/countersign/internal/githubtest"
)

// DefaultRepo is the repository a Rig creates when RigOptions.Repo is empty.
const DefaultRepo = "acme/widgets"

// rigInstallation is the installation id of the rig's repository.
const rigInstallation = 7

// DefaultSettleTimeout bounds Settle when its context has no deadline.
const DefaultSettleTimeout = 30 * time.Second

// RigOptions configures a Rig.
type RigOptions struct {
	// LogWriter receives the bot's logs (JSON lines, debug level); nil
	// discards them.
	LogWriter io.Writer
	// Repo is the repository ("owner/name") the scenario plays in; default
	// DefaultRepo.
	Repo string
	// RecordBodies makes the fake GitHub keep every call's request and
	// response bodies (githubtest.Options.RecordBodies).
	RecordBodies bool
}

// Rig is a fake GitHub and a real countersign bot (embedded bbolt store in a
// temporary directory) wired to each other over HTTP on 127.0.0.1: the fake
// sends signed webhooks to the bot, the bot calls the fake's REST API.
type Rig struct {
	gh    *githubtest.Server
	srv   *app.Server
	store store.Store
	repo  string
	dir   string
	url   string

	stop     context.CancelFunc
	done     chan error
	settings app.Settings
	log      *slog.Logger
	restarts int // stores lost so far

	checkedDeliveries int // deliveries already checked for a 2xx answer
	deadLetters       int // dead letters already reported
}

// rigKey is the App's private key for every rig of the process (each still
// a fake GitHub of its own): the fake's default, a fresh RSA key each, is
// CPU spent on nothing a scenario checks.
var rigKey = sync.OnceValues(func() (*rsa.PrivateKey, error) { return rsa.GenerateKey(rand.Reader, 2048) })

// NewRig starts a fake GitHub with one repository and a bot serving it. Close
// it when done.
func NewRig(ctx context.Context, o RigOptions) (_ *Rig, err error) {
	repo := o.Repo
	if repo == "" {
		repo = DefaultRepo
	}
	if owner, name, ok := strings.Cut(repo, "/"); !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("scenario: bad repository %q (want owner/name)", repo)
	}
	logw := o.LogWriter
	if logw == nil {
		logw = io.Discard
	}

	r := &Rig{repo: repo}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	key, err := rigKey()
	if err != nil {
		return nil, fmt.Errorf("scenario: the App's key: %w", err)
	}
	r.gh = githubtest.New(githubtest.Options{RecordBodies: o.RecordBodies, PrivateKey: key})
	r.gh.AddRepo(repo, rigInstallation)
	if e := r.gh.Err(); e != nil {
		return nil, fmt.Errorf("scenario: %w", e)
	}

	r.dir, err = os.MkdirTemp("", "countersign-scenario-")
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	secret = []byte(hex.EncodeToString(secret))
	r.settings = app.Settings{
		AppID: r.gh.AppID(), PrivateKey: r.gh.PrivateKeyPEM(), WebhookSecret: secret,
		APIURL: r.gh.URL(), Listen: "127.0.0.1:0", Workers: 4, MaxAttempts: 3, LogLevel: slog.LevelDebug,
	}
	r.log = slog.New(slog.NewJSONHandler(logw, &slog.HandlerOptions{Level: r.settings.LogLevel}))
	if err := r.start(ctx, "countersign.db"); err != nil {
		return nil, err
	}
	return r, nil
}

// start runs a bot on a store in file (in the rig's directory).
func (r *Rig) start(ctx context.Context, file string) error {
	var err error
	r.store, err = bolt.Open(filepath.Join(r.dir, file))
	if err != nil {
		return fmt.Errorf("scenario: open store: %w", err)
	}
	r.srv, err = app.New(r.settings, r.store, r.log)
	if err != nil {
		r.store.Close()
		r.store = nil
		return fmt.Errorf("scenario: start the bot: %w", err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		r.store.Close()
		r.store = nil
		return fmt.Errorf("scenario: listen: %w", err)
	}
	r.url = "http://" + ln.Addr().String()
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.stop, r.done = cancel, make(chan error, 1)
	go func(done chan error) { done <- r.srv.Run(runCtx, ln) }(r.done)
	r.gh.SetWebhook(r.url+"/webhook", r.settings.WebhookSecret)
	return nil
}

// LoseStore stops the bot and starts it again on an empty store, with the
// same settings (and so the same key for its signed records): what the bot
// knows now is only what GitHub shows.
func (r *Rig) LoseStore(ctx context.Context) error {
	if err := r.Settle(ctx); err != nil {
		return err
	}
	r.halt()
	r.restarts++
	r.checkedDeliveries, r.deadLetters = len(r.gh.Deliveries()), 0
	return r.start(ctx, fmt.Sprintf("countersign-%d.db", r.restarts))
}

// halt stops the bot (Run closes its store).
func (r *Rig) halt() {
	if r.stop == nil {
		return
	}
	r.stop()
	r.stop = nil
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
	}
	r.store = nil
}

// GH is the rig's fake GitHub.
func (r *Rig) GH() *githubtest.Server { return r.gh }

// Repo is the repository ("owner/name") the rig serves.
func (r *Rig) Repo() string { return r.repo }

// BotURL is the bot's base URL (http://127.0.0.1:PORT).
func (r *Rig) BotURL() string { return r.url }

// Settle waits until every webhook the fake GitHub queued has been answered by
// the bot, and the bot has nothing queued, nothing in its outbox and nothing
// under way, twice in a row. Without a deadline on ctx it gives up after
// DefaultSettleTimeout. It also reports, once each, webhooks the bot did not
// answer with 2xx and deliveries it dead-lettered since the last Settle.
func (r *Rig) Settle(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultSettleTimeout)
		defer cancel()
	}
	quiet := 0
	var st store.Stats
	for quiet < 2 {
		if err := r.gh.WaitWebhooks(ctx); err != nil {
			return fmt.Errorf("webhooks not delivered to the bot: %w", err)
		}
		var err error
		st, err = r.store.Stats(ctx)
		if err != nil {
			return fmt.Errorf("bot store: %w", err)
		}
		if st.Queued == 0 && st.Keys == 0 && r.srv.Worker().Busy() == 0 {
			quiet++
		} else {
			quiet = 0
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the bot did not settle (queued %d, keys with work %d, busy workers %d): %w",
				st.Queued, st.Keys, r.srv.Worker().Busy(), ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return r.problems(ctx, st)
}

// problems reports webhooks answered with an error and new dead letters.
func (r *Rig) problems(ctx context.Context, st store.Stats) error {
	var errs []error
	ds := r.gh.Deliveries()
	for _, d := range ds[min(r.checkedDeliveries, len(ds)):] {
		if d.Pending || d.Dropped {
			continue
		}
		if d.Status < 200 || d.Status > 299 {
			what := d.Error
			if what == "" {
				what = fmt.Sprintf("HTTP %d", d.Status)
			}
			errs = append(errs, fmt.Errorf("the bot refused webhook %s (%s): %s", d.ID, eventName(d.Event, d.Action), what))
		}
	}
	r.checkedDeliveries = len(ds)
	if st.DeadLetters > r.deadLetters {
		dead, err := r.store.DeadLetters(ctx)
		if err != nil {
			return fmt.Errorf("bot store: %w", err)
		}
		for _, d := range dead[min(r.deadLetters, len(dead)):] {
			errs = append(errs, fmt.Errorf("the bot gave up on delivery %s (%s, %s): %s", d.ID, d.Event, d.Key, d.LastError))
		}
		r.deadLetters = len(dead)
	}
	return errors.Join(errs...)
}

// Close stops the bot, then the fake GitHub, and removes the bot's store.
func (r *Rig) Close() {
	r.halt() // Run closes the store
	if r.store != nil {
		r.store.Close()
		r.store = nil
	}
	if r.gh != nil {
		r.gh.Close()
	}
	if r.dir != "" {
		os.RemoveAll(r.dir)
		r.dir = ""
	}
}

func eventName(event, action string) string {
	if action == "" {
		return event
	}
	return event + "." + action
}

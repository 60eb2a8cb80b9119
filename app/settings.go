package app

import (
	"cmp"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
)

// Settings are the server's settings (DESIGN §7): each comes from an
// environment variable, and a flag of the same meaning overrides it.
type Settings struct {
	AppID         int64
	PrivateKey    []byte // PEM
	WebhookSecret []byte
	// RecordKey signs the records countersign keeps on GitHub (task cards, goal
	// issues); empty: derived from WebhookSecret. RecordKeyPrevious is also
	// accepted (not used to sign), during a rotation.
	RecordKey         []byte
	RecordKeyPrevious []byte
	APIURL            string
	Listen            string
	DataPath          string // bbolt file, when RedisURL is empty
	RedisURL          string
	Workers           int
	MaxAttempts       int // failed attempts at a delivery before it is dead-lettered
	// Instance is this process's identity, stable across its restarts and
	// unique among the live replicas ("": the host name): it owns the
	// leases the process takes, and a process starting under it takes over
	// what its dead predecessor held (docs/recovery.md).
	Instance string
	LogLevel slog.Level
	// BodyTimeout bounds how long a delivery's body may take to arrive (0:
	// intake.DefaultBodyTimeout); a body that stalls is answered 408. Not an
	// environment setting: tests shorten it.
	BodyTimeout time.Duration
	// HealInterval: how often the App's delivery log is read for missed
	// deliveries (0: never); HealHorizon: how far back.
	HealInterval time.Duration
	HealHorizon  time.Duration
	// ReconcileInterval: how often tracked tasks' labels are compared with
	// their records (0: only at start-up, on installation and on demand).
	ReconcileInterval time.Duration
	// GitHubWaitMax caps the backoff of a key waiting for GitHub.
	GitHubWaitMax time.Duration
	// GoalCoalesce: a goal's dashboard edits within this window are written
	// as one (0: each at once; DESIGN §9).
	GoalCoalesce time.Duration
	// WritesPerMinute and WritesPerHour pace each installation's writes
	// under GitHub's secondary limits (WritesPerMinute 0: not paced;
	// WritesPerHour 0: no hourly cap). PaceMinute is how long the pacing's
	// minute is (0: a minute); not an environment setting: tests shorten it.
	WritesPerMinute int
	WritesPerHour   int
	PaceMinute      time.Duration
	// WriteMargin is the share of WritesPerMinute and WritesPerHour the
	// pacing uses (0: all of it); WriteHeadroom the share of every paced
	// minute and hour that background writes leave free for writes that
	// answer a person (DESIGN §9).
	WriteMargin   float64
	WriteHeadroom float64
	// WebhookProxyURL is a webhook proxy channel (a smee.io URL) whose event
	// stream brings the deliveries, for a server with no public URL ("":
	// none). ProxyBackoff is the first wait before connecting to it again
	// (0: a second); not an environment setting: tests shorten it.
	WebhookProxyURL string
	ProxyBackoff    time.Duration
}

// minRecordKey is the shortest record key accepted.
const minRecordKey = 16

// setting describes one setting: its variable, its flag, its default and help.
type setting struct {
	env, flag, def, help string
}

var settingsTable = []setting{
	{"GITHUB_APP_ID", "app-id", "", "the GitHub App's numeric id"},
	{"GITHUB_PRIVATE_KEY_PATH", "private-key-path", "", "path of the App's private key (PEM)"},
	{"GITHUB_PRIVATE_KEY", "private-key", "", "the App's private key itself (PEM), instead of a path"},
	{"GITHUB_WEBHOOK_SECRET", "webhook-secret", "", "the App's webhook secret"},
	{"COUNTERSIGN_RECORD_KEY", "record-key", "", "key that signs the records kept on GitHub (task cards, goal issues); default: derived from the webhook secret"},
	{"COUNTERSIGN_RECORD_KEY_PREVIOUS", "record-key-previous", "", "the record key (or webhook secret) in use before a rotation: its signatures are still accepted"},
	{"GITHUB_API_URL", "github-api-url", "https://api.github.com/", "GitHub REST API base URL (GitHub Enterprise Server: https://HOST/api/v3/)"},
	{"COUNTERSIGN_LISTEN", "listen", ":8080", "address to serve HTTP on"},
	{"COUNTERSIGN_WEBHOOK_PROXY_URL", "webhook-proxy", "", "a webhook proxy channel (https://smee.io/...) to receive webhooks from, for a server with no public URL (a laptop); the App's webhook URL must be that channel"},
	{"COUNTERSIGN_DATA", "data", "countersign.db", "embedded store file (used when REDIS_URL is empty)"},
	{"REDIS_URL", "redis-url", "", "Redis URL (redis://...); when set, Redis is the store and several replicas can run"},
	{"COUNTERSIGN_WORKERS", "workers", "8", "how many tasks are processed in parallel"},
	{"COUNTERSIGN_MAX_ATTEMPTS", "max-attempts", "8", "failed attempts at a delivery before it is dead-lettered"},
	{"COUNTERSIGN_INSTANCE", "instance", "", "this process's identity, the same across its restarts and unique among live replicas (a pod name); a restart takes over what its predecessor held at once; default: the host name"},
	{"COUNTERSIGN_LOG_LEVEL", "log-level", "info", "debug, info, warn or error"},
	{"COUNTERSIGN_HEAL_INTERVAL", "heal-interval", "1m", "how often to read the App's delivery log and ask GitHub to redeliver what failed (0: never)"},
	{"COUNTERSIGN_HEAL_HORIZON", "heal-horizon", "72h", "how far back healing looks (GitHub keeps 72h)"},
	{"COUNTERSIGN_RECONCILE_INTERVAL", "reconcile-interval", "15m", "how often to compare tracked tasks' labels with their records and repair drift (0: only at start-up, on installation and by the resync command)"},
	{"COUNTERSIGN_GITHUB_WAIT_MAX", "github-wait-max", "5m", "the longest a task waiting for GitHub sleeps before it tries again by itself; normally the installation's probe wakes it within seconds of GitHub's return (waiting uses no attempt)"},
	{"COUNTERSIGN_GOAL_COALESCE", "goal-coalesce", "5s", "a goal's dashboard edits within this window are written as one edit (0: each at once)"},
	{"COUNTERSIGN_WRITES_PER_MINUTE", "writes-per-minute", "80", "writes (POST, PATCH, PUT, DELETE) per installation in any minute: more wait their turn (GitHub's secondary limit is 80; 0: not paced)"},
	{"COUNTERSIGN_WRITES_PER_HOUR", "writes-per-hour", "500", "writes per installation in any hour (GitHub's secondary limit is 500; 0: no hourly cap)"},
	{"COUNTERSIGN_WRITE_MARGIN", "write-margin", "0.9", "share of the writes per minute and per hour actually used, a margin under GitHub's count (from 0.1 to 1)"},
	{"COUNTERSIGN_WRITE_HEADROOM", "write-headroom", "0.2", "share of every hour's writes that background work leaves free for writes answering a person (from 0 to 0.9)"},
}

// SettingsHelp lists every setting, for usage text and the README.
func SettingsHelp() string {
	var b strings.Builder
	envW, flagW := 0, 0
	for _, s := range settingsTable {
		envW, flagW = max(envW, len(s.env)), max(flagW, len(s.flag))
	}
	for _, s := range settingsTable {
		def := ""
		if s.def != "" {
			def = fmt.Sprintf(" (default %q)", s.def)
		}
		fmt.Fprintf(&b, "  %-*s  --%-*s  %s%s\n", envW, s.env, flagW, s.flag, s.help, def)
	}
	return b.String()
}

// Setting describes one setting: its environment variable, its flag, its
// default and its help, for the command line to offer as flags.
type Setting struct {
	Env, Flag, Default, Help string
	// Type is what its value is: "string", "int", "float" or "duration".
	Type string
}

// settingTypes are the settings whose values are not text.
var settingTypes = map[string]string{
	"GITHUB_APP_ID": "int", "COUNTERSIGN_WORKERS": "int", "COUNTERSIGN_MAX_ATTEMPTS": "int",
	"COUNTERSIGN_WRITES_PER_MINUTE": "int", "COUNTERSIGN_WRITES_PER_HOUR": "int",
	"COUNTERSIGN_HEAL_INTERVAL": "duration", "COUNTERSIGN_HEAL_HORIZON": "duration", "COUNTERSIGN_RECONCILE_INTERVAL": "duration",
	"COUNTERSIGN_GITHUB_WAIT_MAX": "duration", "COUNTERSIGN_GOAL_COALESCE": "duration",
	"COUNTERSIGN_WRITE_MARGIN": "float", "COUNTERSIGN_WRITE_HEADROOM": "float",
}

// SettingsTable lists every setting of serve.
func SettingsTable() []Setting {
	out := make([]Setting, len(settingsTable))
	for i, s := range settingsTable {
		out[i] = Setting{Env: s.env, Flag: s.flag, Default: s.def, Help: s.help, Type: cmp.Or(settingTypes[s.env], "string")}
	}
	return out
}

// LoadSettings reads the settings from getenv and args (flags win). A missing or
// invalid setting is an error naming it; nothing is half-configured.
func LoadSettings(args []string, getenv func(string) string, stderr io.Writer) (Settings, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: countersign serve [flags]\n\nEvery flag mirrors an environment variable:\n%s", SettingsHelp())
	}
	vals := make(map[string]*string, len(settingsTable))
	for _, s := range settingsTable {
		v := getenv(s.env)
		if v == "" {
			v = s.def
		}
		vals[s.env] = fs.String(s.flag, v, s.help)
	}
	if err := fs.Parse(args); err != nil {
		return Settings{}, err
	}
	if fs.NArg() > 0 {
		return Settings{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	values := make(map[string]string, len(vals))
	for env, v := range vals {
		values[env] = *v
	}
	return ResolveSettings(values)
}

// ResolveSettings checks and converts the settings' values, keyed by their
// environment variable (each already the flag's value, else the variable's,
// else the default). A missing or invalid setting is an error naming it, and
// the error never holds a secret.
func ResolveSettings(values map[string]string) (Settings, error) {
	get := func(env string) string { return strings.TrimSpace(values[env]) }
	name := func(env string) string {
		for _, s := range settingsTable {
			if s.env == env {
				return fmt.Sprintf("%s (--%s)", s.env, s.flag)
			}
		}
		return env
	}

	var st Settings
	var err error
	var errs []error
	bad := func(err error) { errs = append(errs, err) }
	if v := get("GITHUB_APP_ID"); v == "" {
		bad(fmt.Errorf("%s is not set", name("GITHUB_APP_ID")))
	} else if st.AppID, err = strconv.ParseInt(v, 10, 64); err != nil || st.AppID <= 0 {
		bad(fmt.Errorf("%s: %q is not a positive number", name("GITHUB_APP_ID"), v))
	}

	keyPath, keyPEM := get("GITHUB_PRIVATE_KEY_PATH"), values["GITHUB_PRIVATE_KEY"]
	switch {
	case keyPath != "" && strings.TrimSpace(keyPEM) != "":
		bad(fmt.Errorf("%s and %s are both set: set one", name("GITHUB_PRIVATE_KEY_PATH"), name("GITHUB_PRIVATE_KEY")))
	case keyPath != "":
		b, err := os.ReadFile(keyPath)
		if err != nil {
			bad(fmt.Errorf("%s: cannot read the key: %w", name("GITHUB_PRIVATE_KEY_PATH"), err))
			break
		}
		if err := checkRSAKey(b); err != nil {
			bad(fmt.Errorf("%s: %s: %w", name("GITHUB_PRIVATE_KEY_PATH"), keyPath, err))
		}
		st.PrivateKey = b
	case strings.TrimSpace(keyPEM) != "":
		b := []byte(strings.ReplaceAll(keyPEM, `\n`, "\n")) // allow a one-line PEM with escaped newlines
		if err := checkRSAKey(b); err != nil {
			bad(fmt.Errorf("%s: %w", name("GITHUB_PRIVATE_KEY"), err))
		}
		st.PrivateKey = b
	default:
		bad(fmt.Errorf("no private key: set %s or %s", name("GITHUB_PRIVATE_KEY_PATH"), name("GITHUB_PRIVATE_KEY")))
	}

	switch v := values["GITHUB_WEBHOOK_SECRET"]; {
	case v == "":
		bad(fmt.Errorf("%s is not set", name("GITHUB_WEBHOOK_SECRET")))
	case strings.TrimSpace(v) == "":
		bad(fmt.Errorf("%s is only whitespace: use a long random string (openssl rand -hex 32)", name("GITHUB_WEBHOOK_SECRET")))
	case len(v) < minRecordKey:
		// It authenticates every delivery, and the key that signs
		// countersign's records is derived from it when none is set: a short
		// one could be guessed, and deliveries and records forged.
		bad(fmt.Errorf("%s: shorter than %d characters: it authenticates deliveries and the key that signs countersign's records is derived from it; use a long random string (openssl rand -hex 32)", name("GITHUB_WEBHOOK_SECRET"), minRecordKey))
	default:
		st.WebhookSecret = []byte(v)
	}

	for _, k := range []struct {
		env string
		dst *[]byte
	}{{"COUNTERSIGN_RECORD_KEY", &st.RecordKey}, {"COUNTERSIGN_RECORD_KEY_PREVIOUS", &st.RecordKeyPrevious}} {
		if v := values[k.env]; v != "" {
			if len(v) < minRecordKey {
				bad(fmt.Errorf("%s: shorter than %d characters", name(k.env), minRecordKey))
			}
			*k.dst = []byte(v)
		}
	}

	st.APIURL = get("GITHUB_API_URL")
	if u, err := url.Parse(st.APIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad(fmt.Errorf("%s: %q is not an http(s) URL", name("GITHUB_API_URL"), RedactURL(st.APIURL)))
	}
	if !strings.HasSuffix(st.APIURL, "/") {
		st.APIURL += "/"
	}

	if st.WebhookProxyURL = get("COUNTERSIGN_WEBHOOK_PROXY_URL"); st.WebhookProxyURL != "" {
		if u, err := url.Parse(st.WebhookProxyURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad(fmt.Errorf("%s: %q is not an http(s) URL (a smee.io channel: https://smee.io/...)", name("COUNTERSIGN_WEBHOOK_PROXY_URL"), RedactURL(st.WebhookProxyURL)))
		}
	}
	if st.Listen = get("COUNTERSIGN_LISTEN"); st.Listen == "" {
		bad(fmt.Errorf("%s is empty", name("COUNTERSIGN_LISTEN")))
	}
	st.RedisURL = get("REDIS_URL")
	if st.RedisURL != "" {
		if _, err := redis.ParseURL(st.RedisURL); err != nil {
			bad(fmt.Errorf("%s: not a valid redis:// or rediss:// URL", name("REDIS_URL"))) // the URL may hold a password
		}
	} else if st.DataPath = get("COUNTERSIGN_DATA"); st.DataPath == "" {
		bad(fmt.Errorf("%s is empty and REDIS_URL is not set: the store needs one", name("COUNTERSIGN_DATA")))
	} else if err := checkDataDir(st.DataPath); err != nil {
		bad(fmt.Errorf("%s: %w", name("COUNTERSIGN_DATA"), err))
	}
	workers := get("COUNTERSIGN_WORKERS")
	if st.Workers, err = strconv.Atoi(workers); err != nil || st.Workers < 1 || st.Workers > 1024 {
		bad(fmt.Errorf("%s: %q is not a number from 1 to 1024", name("COUNTERSIGN_WORKERS"), workers))
	}
	if st.Instance = get("COUNTERSIGN_INSTANCE"); len(st.Instance) > 200 || !utf8.ValidString(st.Instance) {
		bad(fmt.Errorf("%s: longer than 200 bytes or not UTF-8", name("COUNTERSIGN_INSTANCE")))
	}
	attempts := get("COUNTERSIGN_MAX_ATTEMPTS")
	if st.MaxAttempts, err = strconv.Atoi(attempts); err != nil || st.MaxAttempts < 1 || st.MaxAttempts > 100 {
		bad(fmt.Errorf("%s: %q is not a number from 1 to 100", name("COUNTERSIGN_MAX_ATTEMPTS"), attempts))
	}
	for _, n := range []struct {
		env string
		to  *int
		max int
	}{
		{"COUNTERSIGN_WRITES_PER_MINUTE", &st.WritesPerMinute, 10000},
		{"COUNTERSIGN_WRITES_PER_HOUR", &st.WritesPerHour, 600000},
	} {
		v := get(n.env)
		if *n.to, err = strconv.Atoi(v); err != nil || *n.to < 0 || *n.to > n.max {
			bad(fmt.Errorf("%s: %q is not a number from 0 (off) to %d", name(n.env), v, n.max))
		}
	}
	for _, f := range []struct {
		env      string
		to       *float64
		min, max float64
	}{
		{"COUNTERSIGN_WRITE_MARGIN", &st.WriteMargin, 0.1, 1},
		{"COUNTERSIGN_WRITE_HEADROOM", &st.WriteHeadroom, 0, 0.9},
	} {
		v := get(f.env)
		if *f.to, err = strconv.ParseFloat(v, 64); err != nil || !(*f.to >= f.min && *f.to <= f.max) {
			bad(fmt.Errorf("%s: %q is not a number from %v to %v", name(f.env), v, f.min, f.max))
		}
	}
	if err := st.LogLevel.UnmarshalText([]byte(get("COUNTERSIGN_LOG_LEVEL"))); err != nil {
		bad(fmt.Errorf("%s: %q is not debug, info, warn or error", name("COUNTERSIGN_LOG_LEVEL"), get("COUNTERSIGN_LOG_LEVEL")))
	}
	for _, d := range []struct {
		env      string
		to       *time.Duration
		zero     bool // 0 allowed (off)
		min, max time.Duration
	}{
		{"COUNTERSIGN_HEAL_INTERVAL", &st.HealInterval, true, time.Second, 24 * time.Hour},
		{"COUNTERSIGN_HEAL_HORIZON", &st.HealHorizon, false, time.Minute, 72 * time.Hour},
		{"COUNTERSIGN_RECONCILE_INTERVAL", &st.ReconcileInterval, true, time.Second, 7 * 24 * time.Hour},
		{"COUNTERSIGN_GITHUB_WAIT_MAX", &st.GitHubWaitMax, false, 10 * time.Millisecond, time.Hour},
		{"COUNTERSIGN_GOAL_COALESCE", &st.GoalCoalesce, true, 10 * time.Millisecond, 10 * time.Minute},
	} {
		v := get(d.env)
		dur, err := time.ParseDuration(v)
		if v == "0" {
			dur, err = 0, nil
		}
		if err != nil || (dur == 0 && !d.zero) || (dur != 0 && (dur < d.min || dur > d.max)) {
			off := ""
			if d.zero {
				off = ", or 0 (off)"
			}
			bad(fmt.Errorf("%s: %q is not a duration from %v to %v%s", name(d.env), v, d.min, d.max, off))
		}
		*d.to = dur
	}
	if len(errs) > 0 {
		return st, errors.Join(errs...)
	}
	return st, nil
}

// checkDataDir reports whether the embedded store's file can be created where
// path says: its directory must exist (a typo must not grow a new tree), and
// path must not be a directory.
func checkDataDir(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a directory, not a file", path)
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("directory %s does not exist (create it, or fix the path)", dir)
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	return nil
}

// RedactURL is u without its user and password (for logs and errors), or a
// placeholder when u does not parse.
func RedactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	p.User = nil
	return p.String()
}

// checkRSAKey reports whether b holds an RSA private key in PEM, as GitHub issues them.
func checkRSAKey(b []byte) error {
	block, _ := pem.Decode(b)
	if block == nil {
		return errors.New("not a PEM private key")
	}
	if _, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return errors.New("not an RSA private key")
	}
	if _, ok := k.(*rsa.PrivateKey); !ok {
		return errors.New("not an RSA private key")
	}
	return nil
}

// LoadStoreSettings reads only the settings that name the store (COUNTERSIGN_DATA,
// REDIS_URL), for the subcommands that work on the store alone.
func LoadStoreSettings(name string, args []string, getenv func(string) string, stderr io.Writer) (Settings, []string, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	vals := map[string]*string{}
	for _, s := range settingsTable {
		if s.env != "COUNTERSIGN_DATA" && s.env != "REDIS_URL" {
			continue
		}
		v := getenv(s.env)
		if v == "" {
			v = s.def
		}
		vals[s.env] = fs.String(s.flag, v, s.help)
	}
	if err := fs.Parse(args); err != nil {
		return Settings{}, nil, err
	}
	st, err := StoreSettings(*vals["COUNTERSIGN_DATA"], *vals["REDIS_URL"])
	if err != nil {
		return st, nil, err
	}
	return st, fs.Args(), nil
}

// StoreSettings checks the two settings that name the store, for the
// subcommands that work on the store alone: Redis when redisURL is set, else
// the embedded file at dataPath.
func StoreSettings(dataPath, redisURL string) (Settings, error) {
	st := Settings{DataPath: strings.TrimSpace(dataPath), RedisURL: strings.TrimSpace(redisURL)}
	if st.RedisURL != "" {
		st.DataPath = ""
		if _, err := redis.ParseURL(st.RedisURL); err != nil {
			return st, fmt.Errorf("REDIS_URL (--redis-url): not a valid redis:// or rediss:// URL")
		}
	} else if st.DataPath == "" {
		return st, fmt.Errorf("COUNTERSIGN_DATA (--data) is empty and REDIS_URL is not set")
	}
	return st, nil
}

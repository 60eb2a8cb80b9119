package main

import (
	"bufio"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/githubtest"
	"github.com/goccy/go-yaml"
)

// scrape reads the bot's /metrics: each sample's value by its line's name
// and labels (as written, e.g. `x{code="401",method="GET"}`).
func scrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// families are the metric names of a scrape (histograms by their own name).
func families(samples map[string]float64) map[string]bool {
	out := map[string]bool{}
	for s := range samples {
		name, _, _ := strings.Cut(s, "{")
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if strings.HasSuffix(name, "_seconds"+suf) {
				name = strings.TrimSuffix(name, suf)
			}
		}
		out[name] = true
	}
	return out
}

// documentedMetrics are the countersign_ metric names of the metrics table
// in docs/deploying.md, but for those labelled by installation: they have a
// series per installation GitHub was heard from (none before).
func documentedMetrics(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "deploying.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(b), "### Metrics")
	table, _, _ = strings.Cut(table, "\n### ")
	var out []string
	for line := range strings.SplitSeq(table, "\n") {
		if !strings.HasPrefix(line, "| `countersign_") {
			continue
		}
		cells := strings.Split(line, "|")
		if strings.HasPrefix(strings.TrimSpace(cells[2]), "only with") {
			continue // a family of an optional part (the webhook proxy)
		}
		first := cells[1]
		for _, m := range regexp.MustCompile("`(countersign_[a-z_]+)(\\{[a-z,]*)?").FindAllStringSubmatch(first, -1) {
			if !strings.Contains(m[2], "installation") {
				out = append(out, m[1])
			}
		}
	}
	sort.Strings(out)
	return out
}

// Every metric family the docs list is on /metrics from the start, before
// any event: an alert on a family that appears only with its first event
// never sees that event's increase.
func TestDocumentedMetricsPresentFromStart(t *testing.T) {
	t.Parallel()
	gh := newGitHub(githubtest.Options{})
	defer gh.Close()
	dir := t.TempDir()
	b := startBot(t, gh, filepath.Join(dir, "db"), freeAddr(t), filepath.Join(dir, "log"), "COUNTERSIGN_HEAL_INTERVAL=0")
	defer b.kill()
	have := families(scrape(t, b.addr))
	var missing []string
	for _, m := range documentedMetrics(t) {
		if !have[m] {
			missing = append(missing, m)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d documented families absent at start: %v", len(missing), missing)
	}
}

// alertRule is one documented alerting rule.
type alertRule struct {
	Alert string `yaml:"alert"`
	Expr  string `yaml:"expr"`
}

// documentedAlerts are the alerting rules of docs/deploying.md.
func documentedAlerts(t *testing.T) []alertRule {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "deploying.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, _ := strings.Cut(string(b), "### Alerts")
	_, block, _ := strings.Cut(sec, "```yaml\n")
	block, _, _ = strings.Cut(block, "```")
	var doc struct {
		Groups []struct {
			Rules []alertRule `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal([]byte(block), &doc); err != nil {
		t.Fatal(err)
	}
	var out []alertRule
	for _, g := range doc.Groups {
		out = append(out, g.Rules...)
	}
	if len(out) < 5 {
		t.Fatalf("only %d alerting rules in docs/deploying.md", len(out))
	}
	return out
}

// exprRE is the form of the documented rules: a selector with label
// equalities, optionally in increase(...[range]), compared with a number.
var exprRE = regexp.MustCompile(`^(increase\()?([a-z_]+)(?:\{([^}]*)\})?(?:\[\w+\]\))?\s*(>|<|==|!=)\s*(-?[0-9.]+)$`)

// selected are the samples of a scrape that a selector picks, by series.
func selected(samples map[string]float64, name, matchers string) map[string]float64 {
	out := map[string]float64{}
	for series, v := range samples {
		n, labels, _ := strings.Cut(series, "{")
		if n != name {
			continue
		}
		ok := true
		for m := range strings.SplitSeq(matchers, ",") {
			if m = strings.TrimSpace(m); m != "" && !strings.Contains(labels, m) {
				ok = false
			}
		}
		if ok {
			out[series] = v
		}
	}
	return out
}

func compare(v float64, op string, x float64) bool {
	switch op {
	case ">":
		return v > x
	case "<":
		return v < x
	case "==":
		return v == x
	case "!=":
		return v != x
	}
	return false
}

// fires evaluates a rule between two scrapes, before and after, taken
// elapsed apart: increase() is the growth of a series present in both (as
// Prometheus sees it: a series that appears with its first event shows no
// increase); a gauge must hold in the later scrape. A threshold on an age
// (…_age_seconds > T) that has not been reached yet fires if the age grows
// with the time: it will pass T.
func fires(t *testing.T, r alertRule, before, after map[string]float64, elapsed time.Duration) (bool, string) {
	m := exprRE.FindStringSubmatch(strings.TrimSpace(r.Expr))
	if m == nil {
		t.Fatalf("%s: expression %q is not of the form this test evaluates", r.Alert, r.Expr)
	}
	inc, name, matchers, op := m[1] != "", m[2], m[3], m[4]
	x, _ := strconv.ParseFloat(m[5], 64)
	now := selected(after, name, matchers)
	if len(now) == 0 {
		return false, "no series " + name + "{" + matchers + "}"
	}
	for series, v := range now {
		if inc {
			was, ok := before[series]
			if ok && compare(v-was, op, x) {
				return true, ""
			}
			continue
		}
		if compare(v, op, x) {
			return true, ""
		}
		if strings.HasSuffix(name, "_age_seconds") && op == ">" {
			if was, ok := before[series]; ok && v > was && v-was >= elapsed.Seconds()/2 {
				return true, "" // the age grows with the time: it passes the threshold
			}
		}
	}
	return false, fmt.Sprintf("%s{%s} %s %v does not hold: %v", name, matchers, op, x, now)
}

// brokenBot is a `countersign serve` started broken.
type brokenBot struct {
	addr  string
	start time.Time
	logs  string
}

// startBroken starts serve with env over a base that works but for what env
// overrides, and waits for /healthz (not /readyz: some are never ready).
func startBroken(t *testing.T, gh *githubtest.Server, env ...string) *brokenBot {
	t.Helper()
	dir := t.TempDir()
	addr := freeAddr(t)
	logs, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"GITHUB_APP_ID=1", "GITHUB_PRIVATE_KEY=" + string(gh.PrivateKeyPEM()), "GITHUB_WEBHOOK_SECRET=" + crashSecret,
		"GITHUB_API_URL=" + gh.URL(), "COUNTERSIGN_DATA=" + filepath.Join(dir, "db"), "COUNTERSIGN_LISTEN=" + addr,
		"COUNTERSIGN_HEAL_INTERVAL=1s", "COUNTERSIGN_GITHUB_WAIT_MAX=1s"}
	cmd := command(t.Context(), append(base, env...), "serve")
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		logs.Close()
	})
	b := &brokenBot{addr: addr, logs: logs.Name()}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			b.start = time.Now()
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start; logs in %s", logs.Name())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// brokenDelivery is an issue opened on an installation's repository.
const brokenDelivery = `{"action":"opened","issue":{"number":1,"title":"Validate the email field","body":"","user":{"login":"carol","id":3,"type":"User"},"labels":[],"assignees":[],"state":"open"},"repository":{"full_name":"acme/widgets","name":"widgets","owner":{"login":"acme"},"id":1},"installation":{"id":7},"sender":{"login":"carol","id":3,"type":"User"}}`

// Every documented alert fires on a server broken from its start. Each
// broken start is one of what goes wrong on a first deployment; each alert
// must be met by one of them.
func TestDocumentedAlertsFireOnABrokenServer(t *testing.T) {
	t.Parallel()
	gh := newGitHub(githubtest.Options{})
	t.Cleanup(gh.Close) // after the parallel subtests
	gh.AddRepo("acme/widgets", 7)
	closed := freeAddr(t) // nothing listens there
	otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	wrongPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(otherKey)})
	post := func(secret string) func(t *testing.T, b *brokenBot) {
		return func(t *testing.T, b *brokenBot) {
			req, err := http.NewRequest(http.MethodPost, "http://"+b.addr+"/webhook", strings.NewReader(brokenDelivery))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-GitHub-Event", "issues")
			req.Header.Set("X-GitHub-Delivery", "broken-1")
			req.Header.Set("X-Hub-Signature-256", sign([]byte(brokenDelivery), secret))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode >= 500 {
				t.Fatalf("delivery answered %d", resp.StatusCode)
			}
		}
	}
	type scenario struct {
		env    []string
		act    func(t *testing.T, b *brokenBot)
		alerts []string
	}
	scenarios := map[string]scenario{
		"GitHub unreachable": {[]string{"GITHUB_API_URL=http://" + closed + "/"}, post(crashSecret),
			[]string{"CountersignWorkPending", "CountersignHealStale", "CountersignHealFailing", "CountersignGitHubUnreachable"}},
		"a wrong App key": {[]string{"GITHUB_PRIVATE_KEY=" + string(wrongPEM), "COUNTERSIGN_MAX_ATTEMPTS=1"}, post(crashSecret),
			[]string{"CountersignGitHubUnauthorized", "CountersignDeadLetters"}},
		"a wrong webhook secret": {nil, post("not-the-secret-github-has"), []string{"CountersignBadSignatures"}},
		"a webhook proxy out of reach": {[]string{"COUNTERSIGN_WEBHOOK_PROXY_URL=http://" + closed + "/chan"}, nil,
			[]string{"CountersignWebhookProxyDown"}},
	}
	rules := map[string]alertRule{}
	for _, r := range documentedAlerts(t) {
		rules[r.Alert] = r
	}
	covered := map[string]bool{}
	for _, sc := range scenarios {
		for _, a := range sc.alerts {
			if _, ok := rules[a]; !ok {
				t.Errorf("alert %s is not documented", a)
			}
			covered[a] = true
		}
	}
	for a := range rules {
		if !covered[a] {
			t.Errorf("documented alert %s is met by no broken start in this test", a)
		}
	}
	for name, sc := range scenarios {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := startBroken(t, gh, sc.env...)
			before := scrape(t, b.addr)
			if sc.act != nil {
				sc.act(t, b)
			}
			deadline := time.Now().Add(45 * time.Second)
			for {
				after := scrape(t, b.addr)
				var silent []string
				for _, a := range sc.alerts {
					if ok, why := fires(t, rules[a], before, after, time.Since(b.start)); !ok {
						silent = append(silent, a+": "+why)
					}
				}
				if len(silent) == 0 {
					return
				}
				if time.Now().After(deadline) {
					logs, _ := os.ReadFile(b.logs)
					t.Fatalf("alerts that do not fire:\n%s\nlogs:\n%s", strings.Join(silent, "\n"), logs)
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
}

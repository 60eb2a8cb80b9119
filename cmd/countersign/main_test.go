package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/githubtest"
)

// The test binary doubles as the countersign command when this is set, so the
// tests run the real binary's main as a separate process.
const asCommand = "COUNTERSIGN_TEST_AS_COMMAND"

// serveHeapProfileEnv names a file to write the heap profile of a command
// run by the tests to, each time it is sent SIGUSR1.
const serveHeapProfileEnv = "COUNTERSIGN_TEST_HEAP_PROFILE"

func TestMain(m *testing.M) {
	if os.Getenv(asCommand) == "1" {
		os.Exit(runProfiled(os.Args[1:]))
	}
	flag.Parse()
	widenParallel(4) // on a quiet 2-core machine: 43 s at 2 per CPU, 31 s at 4
	os.Exit(m.Run())
}

// widenParallel lets up to n*GOMAXPROCS parallel tests run at once, unless
// -parallel was given. The package's tests (t.Parallel but for those using
// t.Setenv or a package variable) mostly wait: on the bots they start as
// processes, on their heal and reconcile intervals and on Redis, so
// GOMAXPROCS of them at a time (go test's default) leaves the CPU idle.
func widenParallel(n int) {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(n*runtime.GOMAXPROCS(0)))
	}
}

func command(ctx context.Context, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append([]string{asCommand + "=1", "PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	return cmd
}

// serveProfileEnv names a file to write the CPU profile of a command run by
// the tests to (BenchmarkServeCPU passes it on from the benchmark's
// environment); the profile is written when the command returns, so a
// serve process must be stopped with SIGTERM for it.
const serveProfileEnv = "COUNTERSIGN_TEST_SERVE_CPUPROFILE"

func runProfiled(args []string) int {
	if heap := os.Getenv(serveHeapProfileEnv); heap != "" {
		// The heap's profile, each time the command is sent SIGUSR1.
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGUSR1)
		go func() {
			for range sig {
				if f, err := os.Create(heap); err == nil {
					_ = pprof.Lookup("heap").WriteTo(f, 0)
					f.Close()
				}
			}
		}()
	}
	path := os.Getenv(serveProfileEnv)
	if path == "" {
		return run(args, os.Stdout, os.Stderr)
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cpu profile:", err)
		return 1
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "cpu profile:", err)
		return 1
	}
	defer pprof.StopCPUProfile()
	return run(args, os.Stdout, os.Stderr)
}

// appKey is the App's private key for every fake GitHub of the package: the
// fake's default, a fresh RSA key each, is CPU spent on nothing the tests
// check (the crash trials alone start 77 fakes). Each test still has its own
// fake GitHub.
var appKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic("app key: " + err.Error())
	}
	return k
})

// newGitHub is githubtest.New with the package's App key, unless o has one.
func newGitHub(o githubtest.Options) *githubtest.Server {
	if o.PrivateKey == nil {
		o.PrivateKey = appKey()
	}
	return githubtest.New(o)
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// A missing or invalid setting stops serve at start with one line naming it.
func TestServeRefusesBadSettings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := filepath.Join(dir, "key.pem")
	gh := newGitHub(githubtest.Options{})
	defer gh.Close()
	os.WriteFile(key, gh.PrivateKeyPEM(), 0o600)
	base := []string{"GITHUB_APP_ID=1", "GITHUB_PRIVATE_KEY_PATH=" + key, "GITHUB_WEBHOOK_SECRET=x-webhook-secret-for-tests",
		"COUNTERSIGN_DATA=" + filepath.Join(dir, "db"), "COUNTERSIGN_LISTEN=" + freeAddr(t)}
	tests := []struct {
		name string
		env  []string
		want string
	}{
		{"no app id", []string{"GITHUB_APP_ID="}, "GITHUB_APP_ID (--app-id) is not set"},
		{"bad app id", []string{"GITHUB_APP_ID=twelve"}, "GITHUB_APP_ID (--app-id): \"twelve\" is not a positive number"},
		{"no key", []string{"GITHUB_PRIVATE_KEY_PATH="}, "no private key"},
		{"unreadable key", []string{"GITHUB_PRIVATE_KEY_PATH=" + filepath.Join(dir, "nope.pem")}, "GITHUB_PRIVATE_KEY_PATH (--private-key-path): cannot read the key"},
		{"bad url", []string{"GITHUB_API_URL=not a url"}, "GITHUB_API_URL (--github-api-url)"},
		{"no secret", []string{"GITHUB_WEBHOOK_SECRET="}, "GITHUB_WEBHOOK_SECRET (--webhook-secret) is not set"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := command(ctx, append(append([]string{}, base...), tc.env...), "serve")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			if err == nil {
				t.Fatal("serve started with a bad setting")
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
				t.Fatalf("stderr = %q, want one line containing %q", stderr.String(), tc.want)
			}
		})
	}
}

// countersign serve, pointed at a GitHub-like server, answers /healthz, refuses
// unsigned deliveries without an API call, turns an opened issue into a pending
// task with one card, and stops cleanly on SIGTERM.
func TestServeEndToEnd(t *testing.T) {
	t.Parallel()
	gh := newGitHub(githubtest.Options{})
	defer gh.Close()
	gh.AddRepo("acme/widgets", 3)
	dir := t.TempDir()
	addr := freeAddr(t)
	secret := "s3cret-webhook-for-tests"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := command(ctx, []string{
		"GITHUB_APP_ID=1", "GITHUB_PRIVATE_KEY=" + string(gh.PrivateKeyPEM()), "GITHUB_WEBHOOK_SECRET=" + secret,
		"GITHUB_API_URL=" + gh.URL(), "COUNTERSIGN_DATA=" + filepath.Join(dir, "countersign.db"),
	}, "serve", "--listen", addr)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("serve stderr:\n%s", stderr.String())
		}
	}()
	base := "http://" + addr
	waitFor(t, func() bool {
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})

	gh.ResetRequests()
	payload := []byte(`{"action":"opened","issue":{"number":1},"repository":{"full_name":"acme/widgets"},"installation":{"id":3}}`)
	for _, sig := range []string{"", "sha256=" + strings.Repeat("0", 64)} {
		req, _ := http.NewRequest("POST", base+"/webhook", bytes.NewReader(payload))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "issues")
		req.Header.Set("X-GitHub-Delivery", "x")
		if sig != "" {
			req.Header.Set("X-Hub-Signature-256", sig)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("signature %q: status %d, want 401", sig, resp.StatusCode)
		}
	}
	// The start-up heal and resync read the App's delivery log and
	// installations (App-JWT calls, installation 0) whenever they get to it;
	// a refused delivery must make no call at all in an installation's name.
	var reqs []githubtest.Request
	for _, r := range gh.Requests() {
		if r.Installation != 0 || strings.HasPrefix(r.Path, "/repos/") {
			reqs = append(reqs, r)
		}
	}
	if len(reqs) != 0 {
		t.Fatalf("refused deliveries made %d API calls: %+v", len(reqs), reqs)
	}

	gh.SetWebhook(base+"/webhook", []byte(secret))
	n := gh.OpenIssue("acme/widgets", "alice", "Add login form", "")
	cards := func() int {
		c := 0
		for _, cm := range gh.Comments("acme/widgets", n) {
			if cm.User == gh.BotLogin() {
				c++
			}
		}
		return c
	}
	waitFor(t, func() bool {
		return reflect.DeepEqual(gh.Labels("acme/widgets", n), []string{"state:pending"}) && cards() == 1
	})
	// Redeliver everything (the opened issue and the bot's own writes) twice.
	for i := 0; i < 2; i++ {
		for _, d := range gh.Deliveries() {
			gh.Redeliver(d.ID)
		}
	}
	if err := gh.WaitWebhooks(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if got := cards(); got != 1 {
		t.Fatalf("%d cards after redeliveries, want 1", got)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve did not exit cleanly on SIGTERM: %v", err)
	}
	if !strings.Contains(stderr.String(), `"msg":"shutting down"`) {
		t.Fatalf("no graceful shutdown logged")
	}
	if strings.Contains(stderr.String(), secret) || strings.Contains(stderr.String(), "PRIVATE KEY") {
		t.Fatal("a secret reached the logs")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 15s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sign is a webhook signature, as GitHub computes it.
func sign(payload []byte, secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(payload)
	return fmt.Sprintf("sha256=%s", hex.EncodeToString(m.Sum(nil)))
}

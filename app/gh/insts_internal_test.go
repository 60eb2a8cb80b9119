package gh

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/app/clock/clocktest"
	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/metrics"
	"github.com/countersign/countersign/app/pace"
)

// instsGitHub is a GitHub answering installation tokens and any other
// request with 200, counting the tokens minted and the writes.
func instsGitHub(t *testing.T) (*GitHub, *clocktest.Fake, *atomic.Int64, *atomic.Int64) {
	t.Helper()
	var tokens, writes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/access_tokens") {
			tokens.Add(1)
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, `{"token":"ghs_x","expires_at":%q}`, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
			return
		}
		if r.Method != http.MethodGet {
			writes.Add(1)
		}
		fmt.Fprint(w, `[]`)
	}))
	t.Cleanup(srv.Close)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	g, err := New(srv.URL+"/", 1, pemKey, metrics.New(func() (int, int) { return 0, 0 }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	clk := clocktest.New()
	g.clock = clk
	return g, clk, &tokens, &writes
}

// A process serving thousands of installations keeps the clients and token
// sources of at most instsMax of them; an installation's write pacing is
// kept while it counts writes (dropping it would let the installation
// exceed GitHub's limits, even through a client handed out before), and
// dropped once idle.
func TestInstallationCachesAreBounded(t *testing.T) {
	g, clk, tokens, writes := instsGitHub(t)
	if err := g.PaceWrites(pace.Limits{PerMinute: 1, PerHour: 1}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c1, err := g.Client(1)
	if err != nil {
		t.Fatal(err)
	}
	label := func(c *Client) error {
		_, _, err := c.AddLabelsToIssue(ctx, "o", "r", 1, []string{"x"})
		return err
	}
	if err := label(c1); err != nil { // the hour's one write
		t.Fatal(err)
	}
	b1 := g.Bucket(1)

	const touched = 5000
	for id := int64(2); id < 2+touched; id++ {
		if _, err := g.Installation(id); err != nil {
			t.Fatal(err)
		}
		g.GraphQL(id)
		if id%50 == 0 {
			clk.Advance(5 * time.Second) // 500 s over the 5,000
		}
	}
	clients, buckets := g.Cached()
	t.Logf("after touching %d installations in %s: %d clients, %d buckets kept", touched+1, 500*time.Second, clients, buckets)
	if clients > instsMax {
		t.Errorf("%d installations' clients kept, want at most %d", clients, instsMax)
	}
	if _, ok := g.insts[1]; ok {
		t.Errorf("installation 1's clients, the least recently used, were kept")
	}
	// Buckets idle for bucketGrace are dropped: those of the last minute
	// and a half (swept once a minute), and installation 1's.
	if max := 2 + int((bucketGrace+sweepEvery)/(5*time.Second))*50; buckets > max {
		t.Errorf("%d buckets kept, want at most %d", buckets, max)
	}
	if g.Bucket(1) != b1 {
		t.Fatal("installation 1's bucket, with its hour's write, was dropped")
	}

	// The hour's write is still counted: through the client handed out
	// before and through a new one.
	c1again, err := g.Client(1)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []*Client{c1, c1again} {
		var w fault.WaitError
		if err := label(c); !errors.As(err, &w) {
			t.Fatalf("client %d: a second write in the hour: %v, want it deferred", i, err)
		}
	}
	if n := writes.Load(); n != 1 {
		t.Fatalf("%d writes sent, want 1", n)
	}

	// An hour later every window is empty: the bucket is dropped, and made
	// again for the next write.
	clk.Advance(time.Hour + 2*time.Minute)
	if _, err := g.Installation(touched + 100); err != nil {
		t.Fatal(err)
	}
	clients, buckets = g.Cached()
	if clients != 1 || buckets != 1 {
		t.Errorf("an hour later: %d clients, %d buckets kept, want the new installation's only", clients, buckets)
	}
	if err := label(c1); err != nil {
		t.Fatalf("a write an hour later: %v", err)
	}
	t.Logf("tokens minted: %d", tokens.Load())
}

// The figure of docs/cost.md: what one installation's clients and bucket
// weigh (go test -run InstallationWeight -v ./app/gh/).
func TestInstallationWeight(t *testing.T) {
	g, _, _, _ := instsGitHub(t)
	if err := g.PaceWrites(pace.Default); err != nil {
		t.Fatal(err)
	}
	const n = 1000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for id := int64(1); id <= n; id++ {
		if _, err := g.Installation(id); err != nil {
			t.Fatal(err)
		}
		g.GraphQL(id)
		g.GraphQLWrites(id)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	clients, buckets := g.Cached()
	if clients != n || buckets != n {
		t.Fatalf("%d clients, %d buckets, want %d of each", clients, buckets, n)
	}
	t.Logf("one installation's clients, token source and bucket: %.1f KiB of heap", float64(after.HeapAlloc-before.HeapAlloc)/n/1024)
}

// The label writes expected back as webhooks are forgotten once expired,
// not only when 65,536 of them fill the map.
func TestExpectedLabelWritesExpire(t *testing.T) {
	g := &GitHub{}
	g.ExpectLabel("acme/web", 1, "state:pending", true)
	old := time.Now().Add(-2 * expectTTL)
	for n := range 1000 {
		g.expected[labelWrite{"acme/web", n + 2, "state:pending", true}] = old
	}
	g.expectSwept = old
	g.ExpectLabel("acme/web", 5000, "state:pending", true)
	if n := len(g.expected); n != 2 {
		t.Fatalf("%d label writes remembered, want the 2 not expired", n)
	}
	if !g.LabelExpected("acme/web", 5000, "state:pending", true) || !g.LabelExpected("acme/web", 1, "state:pending", true) {
		t.Fatal("a label write just made is not expected")
	}
}

// An installation's token source keeps the token, not the repositories
// GitHub lists with it.
func TestTokenKeepsNoRepositories(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/access_tokens") {
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, `{"token":"ghs_x","expires_at":%q,"permissions":{"issues":"write"},"repository_selection":"selected","repositories":[{"id":1,"name":"web","full_name":"acme/web"},{"id":2,"name":"api","full_name":"acme/api"}]}`,
				time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
			return
		}
		if r.Header.Get("Authorization") != "token ghs_x" {
			w.WriteHeader(http.StatusUnauthorized)
		}
		fmt.Fprint(w, `{}`)
	}))
	t.Cleanup(srv.Close)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(srv.URL+"/", 1, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), metrics.New(func() (int, int) { return 0, 0 }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	c, err := g.Client(7)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.GetIssue(context.Background(), "acme", "web", 1); err != nil {
		t.Fatalf("a read with the installation's token: %v", err)
	}
	itr := g.inst(7).itr
	repos, err := itr.Repositories()
	if err != nil || len(repos) != 0 {
		t.Fatalf("the token source keeps %d repositories (%v), want none", len(repos), err)
	}
	if p, err := itr.Permissions(); err != nil || p.GetIssues() != "write" {
		t.Fatalf("the token's permissions: %+v, %v", p, err)
	}
}

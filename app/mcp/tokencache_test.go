package mcp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/countersign/countersign/app/clock/clocktest"
	"github.com/countersign/countersign/app/mcp"
	"github.com/countersign/countersign/internal/mcpdemo"
)

// userChecks counts the token checks (GET /user) the fake GitHub answered.
func userChecks(w *mcpdemo.World) int {
	n := 0
	for _, r := range w.GH().Requests() {
		if r.Method == "GET" && r.Path == "/user" {
			n++
		}
	}
	return n
}

// A good token is asked about once for many messages while its identity is
// remembered (by its hash), and again once that has expired.
func TestHTTPTokenIdentityIsCachedBriefly(t *testing.T) {
	w, ctx := world(t)
	clk := clocktest.New()
	opts := w.Options(mcp.BearerToken)
	opts.Clock = clk
	srv := httptest.NewServer(mcp.HTTPHandler(mcp.NewServer(opts)))
	t.Cleanup(srv.Close)
	w.GH().ResetRequests()
	cs, err := mcpdemo.HTTPAgent(ctx, srv.URL, "alice", w.GH().AddToken("alice"))
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for i := 0; i < 5; i++ {
		if r := call(t, ctx, cs, "my_work", map[string]any{"repo": w.Repo()}); r.Error || r.Out["me"] != "alice" {
			t.Fatalf("my_work: %s", r.Text)
		}
	}
	if n := userChecks(w); n != 1 {
		t.Fatalf("GET /user %d times for one token's session of 7 messages, want 1", n)
	}
	clk.Advance(mcp.TokenTTL + time.Second)
	call(t, ctx, cs, "my_work", map[string]any{"repo": w.Repo()})
	if n := userChecks(w); n != 2 {
		t.Fatalf("GET /user %d times after the identity expired, want 2", n)
	}
}

// A token GitHub refused is refused again for a while without asking GitHub;
// and one address that keeps sending refused tokens is slowed (429) without
// asking GitHub either.
func TestHTTPRefusedTokensAreRateLimited(t *testing.T) {
	w, _ := world(t)
	clk := clocktest.New()
	opts := w.Options(mcp.BearerToken)
	opts.Clock = clk
	srv := httptest.NewServer(mcp.HTTPHandler(mcp.NewServer(opts)))
	t.Cleanup(srv.Close)
	w.GH().ResetRequests()
	for i := 0; i < 5; i++ {
		if code := initialize(t, srv.Client(), srv.URL, "ghp_bogus", ""); code != http.StatusUnauthorized {
			t.Fatalf("a bogus token, try %d: %d, want 401", i, code)
		}
	}
	if n := userChecks(w); n != 1 {
		t.Fatalf("GET /user %d times for one bogus token sent 5 times, want 1", n)
	}
	clk.Advance(mcp.RefusedTTL + time.Second)
	if code := initialize(t, srv.Client(), srv.URL, "ghp_bogus", ""); code != http.StatusUnauthorized {
		t.Fatalf("the bogus token later: %d, want 401", code)
	}
	if n := userChecks(w); n != 2 {
		t.Fatalf("GET /user %d times once the refusal was forgotten, want 2", n)
	}

	// Many different bogus tokens from one address.
	clk.Advance(mcp.RefusedTTL + time.Second)
	w.GH().ResetRequests()
	limited := 0
	for i := 0; i < mcp.RefusalsPerAddress+10; i++ {
		switch code := initialize(t, srv.Client(), srv.URL, fmt.Sprintf("ghp_bogus%d", i), ""); code {
		case http.StatusUnauthorized:
		case http.StatusTooManyRequests:
			limited++
		default:
			t.Fatalf("bogus token %d: %d", i, code)
		}
	}
	if n := userChecks(w); n != mcp.RefusalsPerAddress || limited != 10 {
		t.Fatalf("%d different bogus tokens from one address: %d GitHub checks and %d answered 429, want %d and 10",
			mcp.RefusalsPerAddress+10, n, limited, mcp.RefusalsPerAddress)
	}
	// A good token whose identity is known still works; the address recovers.
	clk.Advance(mcp.RefusedTTL + time.Second)
	if code := initialize(t, srv.Client(), srv.URL, w.GH().AddToken("alice"), ""); code != http.StatusOK {
		t.Fatalf("a good token once the window passed: %d, want 200", code)
	}
}

package app_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/app/reconcile"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store/bolt"
	"github.com/countersign/countersign/internal/githubtest"
)

// A start-up pass over repositories tracked before their first resync (no
// record says through which installation to read them) finds their
// installations in the App's list of installations, a request per 100 of
// them, not with a look-up of each repository: what start-up sends grows
// with the repositories only by the one read of each that the pass makes.
// A repository on an account the App is not installed on is skipped.
func TestResyncAtStartupFindsInstallationsInOneList(t *testing.T) {
	const installations, perInst = 120, 2
	gh := githubtest.New(githubtest.Options{})
	t.Cleanup(gh.Close)
	s, err := bolt.Open(filepath.Join(t.TempDir(), "countersign.db"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var repos []string
	for i := range installations {
		for r := range perInst {
			repo := fmt.Sprintf("org%03d/repo%d", i, r)
			gh.AddRepo(repo, int64(100+i))
			repos = append(repos, repo)
		}
	}
	// Tracked tasks, and one on an account without the App.
	for _, repo := range append(repos, "gone/repo") {
		if err := s.Put(ctx, records.TaskKey(repo, 1), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	h := startHarness(t, gh, s, func(st *app.Settings) { st.ReconcileInterval = time.Hour })
	h.settle()
	deadline := time.Now().Add(60 * time.Second)
	for {
		done := 0
		for _, repo := range repos {
			if rec, err := reconcile.LoadRepo(ctx, s, repo); err == nil && !rec.ReconciledAt.IsZero() {
				done++
			}
		}
		if done == len(repos) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d repositories resynced in 60 s", done, len(repos))
		}
		time.Sleep(50 * time.Millisecond)
	}
	h.settle()

	counts := map[string]int{}
	for _, r := range gh.Requests() {
		switch {
		case strings.HasSuffix(r.Path, "/installation"):
			counts["repository look-ups"]++
		case r.Path == "/app/installations":
			counts["installation lists"]++
		case strings.HasSuffix(r.Path, "/access_tokens"):
			counts["tokens"]++
		case strings.HasSuffix(r.Path, "/issues") && r.Method == "GET":
			counts["issue lists"]++
		default:
			counts["other "+r.Method+" "+r.Path]++
		}
	}
	t.Logf("start-up pass over %d repositories of %d installations: %v", len(repos), installations, counts)
	if n := counts["repository look-ups"]; n != 0 {
		t.Errorf("%d repository look-ups, want none", n)
	}
	// 120 installations: 2 pages, and 2 again when gone/repo's account was
	// not found (read again once the list was a minute old: at most once).
	if n := counts["installation lists"]; n < 2 || n > 4 {
		t.Errorf("%d pages of the App's installations read, want 2 to 4", n)
	}
	if n := counts["issue lists"]; n != len(repos) {
		t.Errorf("%d issue lists, want one a repository (%d)", n, len(repos))
	}
	if n := counts["tokens"]; n > installations {
		t.Errorf("%d tokens, want at most one an installation (%d)", n, installations)
	}
	if rec, err := reconcile.LoadRepo(ctx, s, repos[len(repos)-1]); err != nil || rec.Installation != 100+installations-1 {
		t.Errorf("the installation recorded for %s: %+v, %v; want %d", repos[len(repos)-1], rec, err, 100+installations-1)
	}
	if !strings.Contains(h.logs.String(), "resync skipped: the App is not installed on the repository") {
		t.Error("the repository without the App was not skipped")
	}
}

package app_test

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/app/store/bolt"
	"github.com/countersign/countersign/internal/githubtest"
)

// Found by review: a store restored from a backup disagrees with GitHub. The
// start-up resync puts the labels back to what the restored record says, and
// the card and the verification check follow it: what countersign recorded
// writing is not trusted once drift is found.

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

func openAt(t *testing.T, gh *githubtest.Server, path string) *harness {
	t.Helper()
	s, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return startHarness(t, gh, s)
}

// Store restored from a backup: the start-up resync puts the labels back to
// what the restored record says (review), and re-decides the pull request's
// check; but the check-run record restored with it says the check already
// shows "in_progress", so the green check (written after the backup) stays.
func TestRestoredStoreCheckFollowsRecord(t *testing.T) {
	gh := newGitHub(githubtest.Options{})
	t.Cleanup(gh.Close)
	gh.AddRepo(testRepo, testInstallation)
	dir := t.TempDir()
	db, backup := filepath.Join(dir, "c.db"), filepath.Join(dir, "backup.db")
	h := openAt(t, gh, db)
	team(h)
	n, pr, sha := taskWithPR(h, "Task", githubtest.PROptions{Title: "Work"})
	ciPasses(h, sha)
	h.settle()
	wantState(t, h, n, "review")
	wantCheck(t, h, sha, "in_progress")
	h.shutdown()
	h.store.Close()
	copyFile(t, db, backup)

	h = openAt(t, gh, db)
	h.settle()
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.settle()
	h.gh.Comment(testRepo, n, "bob", "/verify checked")
	h.settle()
	wantState(t, h, n, "verified")
	wantCheck(t, h, sha, "success")
	h.shutdown()
	h.store.Close()

	copyFile(t, backup, db) // restore
	h = openAt(t, gh, db)
	h.settle()
	t.Logf("labels after restore+resync: %v", h.gh.Labels(testRepo, n))
	wantState(t, h, n, "review")
	wantCheck(t, h, sha, "in_progress")
}

// The same restore: the card (the record a lost store is rebuilt from) keeps
// saying "verified" while the labels and the store say review.
func TestRestoredStoreCardFollowsRecord(t *testing.T) {
	gh := newGitHub(githubtest.Options{})
	t.Cleanup(gh.Close)
	gh.AddRepo(testRepo, testInstallation)
	dir := t.TempDir()
	db, backup := filepath.Join(dir, "c.db"), filepath.Join(dir, "backup.db")
	h := openAt(t, gh, db)
	team(h)
	n, pr, sha := taskWithPR(h, "Task", githubtest.PROptions{Title: "Work"})
	ciPasses(h, sha)
	h.settle()
	h.shutdown()
	h.store.Close()
	copyFile(t, db, backup)
	h = openAt(t, gh, db)
	h.gh.Review(testRepo, pr, "carol", "APPROVED", "")
	h.settle()
	h.gh.Comment(testRepo, n, "bob", "/verify checked")
	h.settle()
	h.shutdown()
	h.store.Close()
	copyFile(t, backup, db)
	h = openAt(t, gh, db)
	h.settle()
	_, body := cardID(t, h, n)
	if !strings.Contains(body, `"state":"review"`) {
		t.Fatalf("labels %v, card after restore+resync:\n%s", h.gh.Labels(testRepo, n), body)
	}
}

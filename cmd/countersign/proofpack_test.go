package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/githubtest"
	"github.com/countersign/countersign/rules"
)

// countersign proofpack prints a verified task's evidence, from the store or
// from its card (whose record it believes only when the signature verifies),
// and refuses a card whose record someone edited.
func TestProofpack(t *testing.T) {
	gh := newGitHub(githubtest.Options{})
	defer gh.Close()
	const repo = "acme/widgets"
	gh.AddRepo(repo, 3)
	gh.SetPermission(repo, "carol", "admin")
	gh.SetPermission(repo, "alice", "write")
	gh.SetPermission(repo, "bob", "write")
	dir := t.TempDir()
	data, addr := filepath.Join(dir, "countersign.db"), freeAddr(t)
	b := startBot(t, gh, data, addr, filepath.Join(dir, "bot.log"))
	gh.SetWebhook("http://"+addr+"/webhook", []byte(crashSecret))
	n := gh.OpenIssue(repo, "carol", "Login form", "")
	gh.Assign(repo, n, "carol", "alice")
	gh.Comment(repo, n, "alice", "/start")
	gh.Comment(repo, n, "alice", "/submit done")
	gh.Comment(repo, n, "carol", "/approve")
	gh.Comment(repo, n, "bob", "/verify tried it: works")
	waitFor(t, func() bool { // the labels, then the card: both written
		if !slices.Contains(gh.Labels(repo, n), "state:verified") {
			return false
		}
		for _, c := range gh.Comments(repo, n) {
			if c.User == gh.BotLogin() && strings.Contains(c.Body, "countersign:card") && strings.Contains(c.Body, "**State:** `verified`") {
				return true
			}
		}
		return false
	})
	b.kill()

	for env, v := range map[string]string{"GITHUB_APP_ID": "1", "GITHUB_PRIVATE_KEY": string(gh.PrivateKeyPEM()),
		"GITHUB_WEBHOOK_SECRET": crashSecret, "GITHUB_API_URL": gh.URL(), "COUNTERSIGN_DATA": "", "REDIS_URL": "",
		"GITHUB_PRIVATE_KEY_PATH": "", "COUNTERSIGN_RECORD_KEY": ""} {
		t.Setenv(env, v)
	}
	proofpack := func(args ...string) (rules.Evidence, string, int) {
		var out, errb bytes.Buffer
		code := run(append([]string{"proofpack", "acme/widgets#1"}, args...), &out, &errb)
		var ev rules.Evidence
		if code == 0 {
			if err := json.Unmarshal(out.Bytes(), &ev); err != nil {
				t.Fatalf("proofpack printed no evidence: %v\n%s", err, out.String())
			}
		}
		return ev, errb.String(), code
	}
	for _, tc := range []struct {
		source string
		args   []string
	}{{"store", []string{"--data", data}}, {"card", nil}} {
		ev, stderr, code := proofpack(tc.args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.source, code, stderr)
		}
		if ev.Schema != rules.EvidenceSchema || ev.Source != tc.source || ev.State != rules.Verified ||
			ev.Verification == nil || ev.Verification.By.Login != "bob" || ev.Verification.Notes != "tried it: works" ||
			len(ev.Approvals) != 1 || ev.Approvals[0].By.Login != "carol" {
			t.Fatalf("%s: evidence %+v", tc.source, ev)
		}
		// From the store, offline: no card URL (GitHub is not asked). From the
		// card: its URL. Standard error says which.
		wantCard, wantSaid := "", "the record of acme/widgets#1 comes from the store ("+data+")"
		if tc.source == "card" {
			wantCard, wantSaid = "#issuecomment-", "comes from its task card on GitHub (http"
		}
		if !strings.Contains(ev.Card, wantCard) || (wantCard == "") != (ev.Card == "") || !strings.Contains(stderr, wantSaid) {
			t.Fatalf("%s: card %q, stderr %q; want %q and %q", tc.source, ev.Card, stderr, wantCard, wantSaid)
		}
	}

	// Someone with write access edits the card's hidden record: the card is
	// not believed, and proofpack says so.
	for _, c := range gh.Comments(repo, n) {
		if c.User == gh.BotLogin() && strings.Contains(c.Body, "countersign:card") {
			gh.EditComment(repo, c.ID, "alice", strings.Replace(c.Body, `"verifier":{"id"`, `"verifier":{"id":1,"x"`, 1))
		}
	}
	if _, stderr, code := proofpack(); code != 1 || !strings.Contains(stderr, "not signed") {
		t.Fatalf("a forged card: exit %d, stderr %q", code, stderr)
	}
	if _, stderr, code := proofpack("--data", data); code != 0 {
		t.Fatalf("the store's record is still the evidence: exit %d: %s", code, stderr)
	}
	if _, stderr, code := proofpack("acme/widgets"); code != 2 || !strings.Contains(stderr, "owner/repo#N") && !strings.Contains(stderr, "arg") {
		t.Fatalf("a bad reference: exit %d, %q", code, stderr)
	}

	// Offline: the store alone needs none of the App's settings.
	for _, env := range []string{"GITHUB_APP_ID", "GITHUB_PRIVATE_KEY", "GITHUB_WEBHOOK_SECRET"} {
		t.Setenv(env, "")
	}
	t.Setenv("GITHUB_API_URL", "http://127.0.0.1:1/") // nothing listens there
	if ev, stderr, code := proofpack("--data", data); code != 0 || ev.Source != "store" || !strings.Contains(stderr, "comes from the store") {
		t.Fatalf("offline: exit %d, source %q, stderr %q", code, ev.Source, stderr)
	}
	// Without a store, GitHub is the only source: its settings are asked for.
	if _, stderr, code := proofpack(); code != 2 || !strings.Contains(stderr, "needs the App's settings: GITHUB_APP_ID (--app-id) is not set") {
		t.Fatalf("no store, no settings: exit %d, stderr %q", code, stderr)
	}
}

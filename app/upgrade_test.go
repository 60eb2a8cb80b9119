package app_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/app/store/bolt"
	"github.com/countersign/countersign/app/store/storetest"
	"github.com/countersign/countersign/internal/githubtest"
	bbolt "go.etcd.io/bbolt"
)

// A delivery queued by a version that stored deliveries as JSON (the payload
// base64 inside) is processed after an upgrade: the issue gets its state
// label and its card, once.
func TestDeliveryQueuedByEarlierVersionIsProcessed(t *testing.T) {
	gh := newGitHub(githubtest.Options{})
	t.Cleanup(gh.Close)
	gh.AddRepo(testRepo, testInstallation)
	gh.DropWebhooks(true)
	n := gh.OpenIssue(testRepo, "alice", "Queued before the upgrade", "The form validates email.")
	var payload []byte
	for _, d := range gh.Deliveries() {
		if d.Event == "issues" && d.Action == "opened" {
			payload = d.Payload
		}
	}
	gh.DropWebhooks(false)
	if payload == nil {
		t.Fatal("no issues.opened delivery recorded")
	}

	// Queue it, then rewrite the queued record as earlier versions wrote it.
	path := filepath.Join(t.TempDir(), "countersign.db")
	s, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	d := store.Delivery{ID: "before-upgrade", Event: "issues", Key: fmt.Sprintf("%s#%d", testRepo, n),
		Payload: payload, ReceivedAt: time.Now().UTC()}
	if ok, err := s.Accept(context.Background(), d); err != nil || !ok {
		t.Fatalf("Accept = %v, %v", ok, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	legacy, err := storetest.LegacyJSON(d) // as earlier versions wrote it
	if err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	rewritten := 0
	err = db.Update(func(tx *bbolt.Tx) error {
		q := tx.Bucket([]byte("queue"))
		var keys [][]byte
		if err := q.ForEach(func(k, _ []byte) error { keys = append(keys, append([]byte(nil), k...)); return nil }); err != nil {
			return err
		}
		for _, k := range keys {
			if err := q.Put(k, legacy); err != nil {
				return err
			}
			rewritten++
		}
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil || rewritten != 1 {
		t.Fatalf("rewrote %d queued records: %v", rewritten, err)
	}

	s, err = bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, gh, s)
	tpWaitIssues(t, gh, []*tpIssue{{number: n}}, 20*time.Second)
	h.settle()
	if cards := tpCards(gh, n); cards != 1 {
		t.Errorf("issue #%d has %d cards, want 1", n, cards)
	}
}

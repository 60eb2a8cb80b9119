package reconcile_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/countersign/countersign/app/reconcile"
	"github.com/countersign/countersign/app/store/bolt"
)

func TestScheduleEveryTrackedRepo(t *testing.T) {
	st, err := bolt.Open(filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	now := time.Date(2026, 5, 6, 7, 0, 0, 0, time.UTC)
	last := now.Add(-time.Hour)
	rec, _ := json.Marshal(reconcile.RepoRecord{Installation: 9, ReconciledAt: last})
	for k, v := range map[string][]byte{
		"task/acme/web#1": []byte(`{}`), "task/acme/web#2": []byte(`{}`), "task/acme/api#7": []byte(`{}`),
		"repo/acme/web": rec, "pr/acme/other#3": []byte(`{}`), "config/acme/cfg": []byte(`{}`),
	} {
		if err := st.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	repos, err := reconcile.TrackedRepos(ctx, st)
	if err != nil || !slices.Equal(repos, []string{"acme/api", "acme/web"}) {
		t.Fatalf("TrackedRepos = %v, %v", repos, err)
	}
	n, err := reconcile.Schedule(ctx, st, "start-up", reconcile.StartupWindow, now)
	if err != nil || n != 2 {
		t.Fatalf("Schedule = %d, %v", n, err)
	}
	want := map[string]reconcile.Resync{
		"resync/acme/api": {Repo: "acme/api", Since: now.Add(-reconcile.StartupWindow), Why: "start-up"},
		"resync/acme/web": {Installation: 9, Repo: "acme/web", Since: last.Add(-time.Minute), Why: "start-up"},
	}
	for range want {
		c, err := st.Claim(ctx, "test", time.Minute)
		if err != nil || c == nil || c.Delivery == nil || c.Delivery.Event != reconcile.ResyncEvent {
			t.Fatalf("Claim = %+v, %v", c, err)
		}
		var got reconcile.Resync
		if err := json.Unmarshal(c.Delivery.Payload, &got); err != nil {
			t.Fatal(err)
		}
		w, ok := want[c.Key]
		if !ok || got.Repo != w.Repo || got.Installation != w.Installation || !got.Since.Equal(w.Since) || got.Why != w.Why {
			t.Fatalf("%s: %+v; want %+v", c.Key, got, w)
		}
	}
}

func TestDeliveryKeys(t *testing.T) {
	now := time.Now()
	if d := reconcile.NewResync(reconcile.Resync{All: true, Why: "command"}, now); d.Key != "resync/*" || d.Event != reconcile.ResyncEvent {
		t.Fatalf("resync of all: %+v", d)
	}
	d := reconcile.NewRepair(reconcile.Repair{Installation: 1, Repo: "acme/web", Number: 4}, "resync/x", now)
	if d.Key != "acme/web#4" || d.Event != reconcile.RepairEvent {
		t.Fatalf("repair: %+v; want it under the task's key", d)
	}
}

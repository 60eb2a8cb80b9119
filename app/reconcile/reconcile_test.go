package reconcile_test

import (
	"context"
	"encoding/json"
	"fmt"
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

// A pass is paced: one resync queued every 1/PassRate s (faster when the
// pass must end within its bound), the lease asked for on the way, and the
// pass stops when it is lost.
func TestSchedulePaced(t *testing.T) {
	st, err := bolt.Open(filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	for i := range 50 {
		if err := st.Put(ctx, fmt.Sprintf("task/acme/r%02d#1", i), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	var waits []time.Duration
	queued, keeps := 0, 0
	p := reconcile.Pacing{Rate: reconcile.PassRate, KeepEvery: time.Second,
		Sleep:  func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil },
		Queued: func() { queued++ },
		Keep:   func(context.Context) bool { keeps++; return keeps < 3 },
	}
	n, err := reconcile.SchedulePaced(ctx, st, "start-up", reconcile.StartupWindow, time.Now(), p)
	if err != nil {
		t.Fatal(err)
	}
	// 10 a second, the lease asked for every second: lost at the third ask,
	// after 30 waits, which leaves 30 resyncs queued.
	if n != 30 || queued != 30 || len(waits) != 30 || keeps != 3 {
		t.Fatalf("queued %d (%d notified) after %d waits and %d lease checks; want 30, 30, 30, 3", n, queued, len(waits), keeps)
	}
	for _, w := range waits {
		if w != 100*time.Millisecond {
			t.Fatalf("waited %s between resyncs, want 100ms", w)
		}
	}
	// Bounded to 1 s for 50 repositories: 20 ms apart.
	waits, keeps = nil, 0
	p.Within, p.Keep = time.Second, nil
	if n, err := reconcile.SchedulePaced(ctx, st, "schedule", reconcile.StartupWindow, time.Now(), p); err != nil || n != 50 {
		t.Fatalf("SchedulePaced = %d, %v; want 50", n, err)
	}
	if len(waits) != 49 || waits[0] != 20*time.Millisecond {
		t.Fatalf("%d waits of %v; want 49 of 20ms", len(waits), waits[0])
	}
}

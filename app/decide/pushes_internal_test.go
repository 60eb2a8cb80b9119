package decide

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

// Every push webhook's sender is recorded with its tip and commits, by
// account id: not a deletion, a push by no account, nor web-flow's; a
// redelivery changes nothing.
func TestRecordPush(t *testing.T) {
	ctx := context.Background()
	st := tempStore(t)
	p := &Decider{store: st}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d := &store.Delivery{ID: "d1", Event: "push", ReceivedAt: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	repo := &github.PushEventRepository{FullName: github.String("acme/app")}
	push := func(sender *github.User, after string, deleted bool, commits ...string) *github.PushEvent {
		e := &github.PushEvent{Ref: github.String("refs/heads/wip"), After: github.String(after), Deleted: github.Bool(deleted), Repo: repo, Sender: sender}
		for _, c := range commits {
			e.Commits = append(e.Commits, &github.HeadCommit{ID: github.String(c)})
		}
		return e
	}
	bob := &github.User{ID: github.Int64(2), Login: github.String("bob"), Type: github.String("User")}
	webFlow := &github.User{ID: github.Int64(webFlowID), Login: github.String("web-flow"), Type: github.String("User")}
	for _, c := range []struct {
		name string
		e    *github.PushEvent
	}{
		{"a deletion", push(bob, noCommit, true)},
		{"by no account", push(nil, "b", false, "a")},
		{"by web-flow", push(webFlow, "b", false, "a")},
	} {
		if recs, err := p.recordPush(ctx, d, c.e, log); err != nil || len(recs) != 0 {
			t.Errorf("%s: recorded %v (%v)", c.name, recs, err)
		}
	}
	recs, err := p.recordPush(ctx, d, push(bob, "B", false, "A", "B"), log)
	if err != nil || recs[records.PushesKey("acme/app")] == nil {
		t.Fatalf("bob's push not recorded: %v (%v)", recs, err)
	}
	for k, v := range recs {
		if err := st.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	var kept []rules.Push
	if _, err := records.Load(ctx, st, records.PushesKey("acme/app"), &kept); err != nil || len(kept) != 1 {
		t.Fatalf("kept %v (%v)", kept, err)
	}
	if k := kept[0]; k.By != (rules.User{ID: 2, Login: "bob"}) || k.After != "b" || len(k.Commits) != 1 || k.Commits[0] != "a" || !k.At.Equal(d.ReceivedAt) {
		t.Errorf("kept %+v", k)
	}
	if recs, err := p.recordPush(ctx, d, push(bob, "B", false, "A", "B"), log); err != nil || len(recs) != 0 {
		t.Errorf("a redelivery recorded again: %v (%v)", recs, err)
	}
	// What is kept names bob for a pull request carrying A.
	pr := &rules.PullRequest{Repo: "acme/app"}
	if err := p.recordedPushers(ctx, pr, map[string]bool{"a": true}); err != nil || len(pr.Pushers) != 1 || pr.Pushers[0].ID != 2 {
		t.Errorf("pushers of A: %v (%v)", pr.Pushers, err)
	}
}

package process

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store/bolt"
	"github.com/countersign/countersign/rules"
)

// A label sync reserves the writes it makes, from the label record: turns
// reserved and not used still count in the windows of the turns given out
// after them (a new issue's label reserving two turns for one write halved
// an import's drain).
func TestLabelWritesFollowTheLabelRecord(t *testing.T) {
	ctx := context.Background()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	p := New(st, nil, nil)
	const repo = "acme/widgets"
	for i, tc := range []struct {
		name   string
		record string // the label record of the issue ("": none)
		labels []string
		remove []string
		want   int
	}{
		{"a new issue: one addition", "", []string{"state:pending"}, nil, 1},
		{"a swap: an addition and a removal", `{"labels":["state:pending"]}`, []string{"state:assigned"}, nil, 2},
		{"nothing changes", `{"labels":["state:pending"]}`, []string{"state:pending"}, nil, 0},
		{"a label added, none taken off", `{"labels":["state:verified"]}`, []string{"state:verified", "unverified"}, nil, 1},
		{"two owned labels taken off", `{"labels":["state:in-review","escalated"]}`, []string{"state:in-progress"}, nil, 3},
		{"a person's label kept", `{"labels":["state:pending","bug"]}`, []string{"state:assigned"}, nil, 2},
		{"a stale record: read, add and remove", `{"stale":true}`, []string{"state:assigned"}, nil, 2},
		{"labels not owned to strip", "", []string{"state:pending"}, []string{"old:a", "old:b"}, 3},
	} {
		n := i + 1 // an issue of its own: no record unless the case has one
		if tc.record != "" {
			if err := st.Put(ctx, records.LabelViewKey(repo, n), []byte(tc.record)); err != nil {
				t.Fatal(err)
			}
		}
		got, err := p.labelWrites(ctx, rules.Effect{Kind: rules.EffectSyncLabels, Repo: repo, Number: n, Labels: tc.labels, Remove: tc.remove})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got != tc.want {
			t.Errorf("%s: %d writes reserved, want %d", tc.name, got, tc.want)
		}
	}
}

package app

import (
	"context"

	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
)

// ProofpackFromStore is the evidence of task repo#n from store s alone,
// without GitHub (so without the card's URL); found is false when s holds no
// record of it.
func ProofpackFromStore(ctx context.Context, s store.Store, repo string, n int) (ev rules.Evidence, found bool, err error) {
	t, err := records.LoadTask(ctx, s, repo, n)
	if err != nil || t == nil {
		return rules.Evidence{}, false, err
	}
	ev = rules.EvidenceOf(t)
	ev.Source = "store"
	return ev, true, nil
}

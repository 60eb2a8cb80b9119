package decide

import (
	"github.com/countersign/countersign/app/deliveries"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
)

// decideCard writes a task card that waited while the installation's writes
// were saturated: its card as the task's record now makes it.
func decideCard(cd deliveries.CardPayload, d *store.Delivery) (store.Commit, error) {
	return records.CommitFor(cd.Installation, d, nil, []rules.Effect{{Kind: rules.EffectSyncCard, Repo: cd.Repo, Number: cd.Number}})
}

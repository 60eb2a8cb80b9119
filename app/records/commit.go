package records

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/countersign/countersign/app/deliveries"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
)

// CommitFor is the store commit that records task (nil: unchanged) and effects.
func CommitFor(inst int64, d *store.Delivery, task *rules.Task, effects []rules.Effect) (store.Commit, error) {
	var w store.Commit
	if task != nil {
		b, err := json.Marshal(task)
		if err != nil {
			return w, fmt.Errorf("encode task: %w", err)
		}
		w.Records = map[string][]byte{TaskKey(task.Repo, task.Number): b}
	}
	now := time.Now().UTC()
	bg := deliveries.Background(d)
	for i, e := range effects {
		b, err := json.Marshal(OutboxEffect{Installation: inst, Delivery: d.ID, Key: fmt.Sprintf("%s/%d", d.ID, i), At: now, Effect: e,
			Background: bg, MayWait: bg && e.Kind == rules.EffectSyncCard && task != nil && task.State == rules.Pending &&
				e.Repo == task.Repo && e.Number == task.Number})
		if err != nil {
			return w, fmt.Errorf("encode effect: %w", err)
		}
		w.Effects = append(w.Effects, b)
	}
	return w, nil
}

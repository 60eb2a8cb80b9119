package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/countersign/countersign/app/card"
	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/gh"
	"github.com/countersign/countersign/app/metrics"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/seal"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/countersign/countersign/templates"
)

// recordKeys are the keys that sign and check the records countersign keeps
// on GitHub: COUNTERSIGN_RECORD_KEY, else derived from the webhook secret,
// and COUNTERSIGN_RECORD_KEY_PREVIOUS during a rotation.
func recordKeys(st Settings) (*seal.Keys, error) {
	material := st.RecordKey
	if len(material) == 0 {
		material = st.WebhookSecret
	}
	keys, err := seal.New(material, st.RecordKeyPrevious)
	if err != nil {
		return nil, fmt.Errorf("record key: %w", err)
	}
	return keys, nil
}

// ErrNoEvidence is Proofpack's answer for an issue that is no task
// countersign can vouch for.
var ErrNoEvidence = errors.New("no trusted record of this task")

// Proofpack is the evidence of task n of repo, for an audit (`countersign
// proofpack`): its record from s when s is given and holds it, else from its
// task card on GitHub, believed only when the card's record is signed with
// this server's record key. The evidence names the card's URL and where the
// record came from.
func Proofpack(ctx context.Context, st Settings, s store.Store, repo string, n int) (rules.Evidence, error) {
	owner, name := gh.OwnerOf(repo), gh.NameOf(repo)
	g, err := gh.New(st.APIURL, st.AppID, st.PrivateKey, metrics.New(func() (int, int) { return 0, 0 }))
	if err != nil {
		return rules.Evidence{}, err
	}
	inst, _, err := g.App().Apps.FindRepositoryInstallation(ctx, owner, name)
	if fault.IsStatus(err, http.StatusNotFound) {
		return rules.Evidence{}, fmt.Errorf("the App is not installed on %s", repo)
	}
	if err != nil {
		return rules.Evidence{}, fmt.Errorf("find the installation of %s: %w", repo, err)
	}
	c, err := g.Installation(inst.GetID())
	if err != nil {
		return rules.Evidence{}, err
	}
	bot, err := g.BotLogin(ctx)
	if err != nil {
		return rules.Evidence{}, err
	}
	found, err := card.Find(ctx, c, owner, name, n, bot)
	if err != nil {
		return rules.Evidence{}, err
	}
	var t *rules.Task
	source := "store"
	if s != nil {
		if t, err = records.LoadTask(ctx, s, repo, n); err != nil {
			return rules.Evidence{}, err
		}
	}
	if t == nil {
		if found == nil {
			return rules.Evidence{}, fmt.Errorf("%s#%d: %w: it has no task card", repo, n, ErrNoEvidence)
		}
		keys, err := recordKeys(st)
		if err != nil {
			return rules.Evidence{}, err
		}
		rec, ok := card.Record(found.GetBody())
		sig, _ := templates.RecordSignature(found.GetBody())
		var r rules.Task
		switch {
		case !ok:
			return rules.Evidence{}, fmt.Errorf("%s#%d: %w: its card carries no record", repo, n, ErrNoEvidence)
		case !keys.Verify(records.TaskScope(repo, n), rec, sig):
			return rules.Evidence{}, fmt.Errorf("%s#%d: %w: its card's record is not signed with this server's record key", repo, n, ErrNoEvidence)
		case json.Unmarshal(rec, &r) != nil || r.Repo != repo || r.Number != n:
			return rules.Evidence{}, fmt.Errorf("%s#%d: %w: its card's record is unusable", repo, n, ErrNoEvidence)
		}
		t, source = &r, "card"
	}
	ev := rules.EvidenceOf(t)
	ev.Card, ev.Source = found.GetHTMLURL(), source
	return ev, nil
}

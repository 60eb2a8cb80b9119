package effects

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/gh"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

// syncLabels makes the issue carry exactly e.Labels among the labels
// countersign owns; other labels are left alone.
//
// It does not read the issue's labels first: what to take off is decided from
// GitHub's answer to the addition (every label the issue carries), or, with
// nothing to add, from the labels countersign recorded setting (labelViewKey).
// People's changes to owned labels come as labeled/unlabeled webhooks, which
// make that record stale (onIssue), as do repairs and a resync's drift; then
// the issue's labels are read. Applied twice (a crash before the record was
// updated), it adds what is there already and removes what is gone (a 404):
// nothing changes twice.
// It returns the label record to keep (written with the effect's pop).
func (x *Executor) syncLabels(ctx context.Context, c Client, owner, name string, e rules.Effect) (map[string][]byte, error) {
	return x.recordedLabels(ctx, c, owner, name, e.Repo, e.Number, e.Labels, rules.TaskOwned, e.Remove...)
}

// syncRecordedLabels makes issue n carry exactly labels among those owned
// says countersign owns (and none of also), starting from the labels it
// recorded setting there, and records what it set.
func (x *Executor) syncRecordedLabels(ctx context.Context, c Client, owner, name, repo string, n int, labels []string, owned func(string) bool, also ...string) error {
	recs, err := x.recordedLabels(ctx, c, owner, name, repo, n, labels, owned, also...)
	if err != nil {
		return err
	}
	return x.keep(ctx, recs)
}

// recordedLabels is syncRecordedLabels returning the label record to keep
// (nil when it is unchanged) instead of writing it.
func (x *Executor) recordedLabels(ctx context.Context, c Client, owner, name, repo string, n int, labels []string, owned func(string) bool, also ...string) (map[string][]byte, error) {
	key := records.LabelViewKey(repo, n)
	var view records.LabelView
	known := false
	if len(also) == 0 { // stripping a label countersign does not own: look
		var err error
		if known, err = records.Load(ctx, x.store, key, &view); err != nil {
			return nil, err
		}
	}
	from := labelsUnknown
	switch {
	case known && !view.Stale:
		from = labelsRecorded
	case !known && len(also) == 0:
		from = labelsNew // never synced here: most likely carries none of them
	}
	if err := x.syncOwnedLabelsFrom(ctx, c, owner, name, n, view.Labels, from, labels, owned, also...); err != nil {
		return nil, err
	}
	if from == labelsRecorded && sameFold(view.Labels, labels) {
		return nil, nil
	}
	b, err := json.Marshal(records.LabelView{Labels: labels})
	if err != nil {
		return nil, fmt.Errorf("encode label record: %w", err)
	}
	return map[string][]byte{key: b}, nil
}

// sameFold reports whether a and b hold the same labels, case-insensitively.
func sameFold(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, l := range a {
		if !gh.HasLabel(b, l) {
			return false
		}
	}
	return true
}

// What a label sync starts from.
type labelsFrom int

const (
	labelsUnknown  labelsFrom = iota // read the issue's labels first
	labelsRecorded                   // the labels countersign recorded setting
	labelsNew                        // probably none of the owned ones: add first
)

// syncOwnedLabelsFrom makes issue n carry exactly labels among those owned
// says countersign owns (and none of also), from what from says. What is removed
// is decided from the issue's labels as GitHub answers the addition (it
// returns every label the issue carries), or, with nothing to add, as read
// (labelsUnknown, labelsNew) or recorded.
func (x *Executor) syncOwnedLabelsFrom(ctx context.Context, c Client, owner, name string, n int, recorded []string, from labelsFrom, labels []string, owned func(string) bool, also ...string) error {
	var current []string
	switch from {
	case labelsUnknown:
		var err error
		if current, err = x.issueLabels(ctx, c, owner, name, n); err != nil {
			return err
		}
	case labelsRecorded:
		current = recorded
	}
	var add []string
	for _, l := range labels {
		if !gh.HasLabel(current, l) {
			add = append(add, l)
		}
	}
	if len(add) == 0 && from == labelsNew {
		var err error
		if current, err = x.issueLabels(ctx, c, owner, name, n); err != nil {
			return err
		}
	}
	for _, l := range add {
		if err := x.ensureLabel(ctx, c, owner, name, l); err != nil {
			return err
		}
	}
	if len(add) > 0 {
		x.expectLabels(owner, name, n, add, true)
		got, _, err := c.AddLabelsToIssue(ctx, owner, name, n, add)
		if err != nil {
			return fmt.Errorf("add labels %v: %w", add, err)
		}
		current = gh.LabelNames(got)
		// GitHub's answer is every label the issue carries: a wanted label
		// the record said was there but is not (taken off unheard) is added.
		var missing []string
		for _, l := range labels {
			if !gh.HasLabel(current, l) {
				missing = append(missing, l)
			}
		}
		if len(missing) > 0 {
			for _, l := range missing {
				if err := x.ensureLabel(ctx, c, owner, name, l); err != nil {
					return err
				}
			}
			x.expectLabels(owner, name, n, missing, true)
			got, _, err := c.AddLabelsToIssue(ctx, owner, name, n, missing)
			if err != nil {
				return fmt.Errorf("add labels %v: %w", missing, err)
			}
			current = gh.LabelNames(got)
		}
	}
	var remove []string
	for _, l := range current {
		if (owned(l) || gh.HasLabel(also, l)) && !gh.HasLabel(labels, l) {
			remove = append(remove, l)
		}
	}
	x.expectLabels(owner, name, n, remove, false)
	for _, l := range remove {
		if _, err := c.RemoveLabelForIssue(ctx, owner, name, n, url.PathEscape(l)); err != nil && !fault.IsStatus(err, http.StatusNotFound) {
			return fmt.Errorf("remove label %s: %w", l, err)
		}
	}
	return nil
}

// expectLabels tells intake that the labels' additions (or removals) on
// issue n are countersign's own when they come back as webhooks.
func (x *Executor) expectLabels(owner, name string, n int, labels []string, added bool) {
	for _, l := range labels {
		x.gh.ExpectLabel(owner+"/"+name, n, l, added)
	}
}

func (x *Executor) issueLabels(ctx context.Context, c Client, owner, name string, n int) ([]string, error) {
	var out []string
	opt := &github.ListOptions{PerPage: 100}
	for {
		ls, resp, err := c.ListLabelsByIssue(ctx, owner, name, n, opt)
		if err != nil {
			return nil, fmt.Errorf("list labels: %w", err)
		}
		out = append(out, gh.LabelNames(ls)...)
		if resp.NextPage == 0 {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}

// ensureLabel creates one of countersign's labels in the repository, with its
// colour and description, unless it was made (or found) before: that is
// remembered in the store, so a label is created once per repository and
// never looked up again. Creating is tried at once (422: it exists).
func (x *Executor) ensureLabel(ctx context.Context, c Client, owner, name, label string) error {
	key := records.MadeLabelKey(owner+"/"+name, label)
	if x.labels.has(key) {
		return nil
	}
	if b, err := x.store.Get(ctx, key); err == nil && string(b) == labelMade {
		x.labels.add(key)
		return nil
	} else if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("read %s: %w", key, err)
	}
	spec, _ := rules.Spec(label)
	_, _, err := c.CreateLabel(ctx, owner, name, &github.Label{
		Name: github.String(label), Color: github.String(spec.Color), Description: github.String(spec.Description)})
	if fault.IsStatus(err, http.StatusUnprocessableEntity) { // it exists
		err = nil
	}
	if err != nil {
		return fmt.Errorf("ensure label %s: %w", label, err)
	}
	if err := x.store.Put(ctx, key, []byte(labelMade)); err != nil {
		return fmt.Errorf("remember label %s: %w", label, err)
	}
	x.labels.add(key)
	return nil
}

// The values of a madeLabelKey record (the store has no deletion outside a
// claim's commit).
const (
	labelMade = "made"
	labelGone = "gone"
)

// forgetLabel drops what countersign knows of repo's label: it was renamed
// or deleted, so it must be created again when next needed.
func (x *Executor) forgetLabel(ctx context.Context, repo, label string) error {
	key := records.MadeLabelKey(repo, label)
	x.labels.drop(key)
	if err := x.store.Put(ctx, key, []byte(labelGone)); err != nil {
		return fmt.Errorf("forget label %s: %w", label, err)
	}
	return nil
}

// renameLabel renames repository label e.Label back to e.RenameTo, with the
// colour and description countersign gives it when it owns that name.
func (x *Executor) renameLabel(ctx context.Context, c Client, owner, name string, e rules.Effect) error {
	l := &github.Label{Name: github.String(e.RenameTo)}
	if spec, ok := rules.Spec(e.RenameTo); ok {
		l.Color, l.Description = github.String(spec.Color), github.String(spec.Description)
	}
	_, _, err := c.EditLabel(ctx, owner, name, url.PathEscape(e.Label), l)
	if fault.IsStatus(err, http.StatusNotFound) {
		return nil // renamed again or deleted since: that change has its own event
	}
	if err != nil {
		return fmt.Errorf("rename label %s back to %s: %w", e.Label, e.RenameTo, err)
	}
	return x.forgetLabel(ctx, e.Repo, e.Label)
}

// createLabel creates a deleted owned label again.
// ensureLabels makes the repository have e.Labels, in order, creating those
// not known to exist.
func (x *Executor) ensureLabels(ctx context.Context, c Client, owner, name string, e rules.Effect) error {
	for _, l := range e.Labels {
		if err := x.ensureLabel(ctx, c, owner, name, l); err != nil {
			return err
		}
	}
	return nil
}

func (x *Executor) createLabel(ctx context.Context, c Client, owner, name string, e rules.Effect) error {
	if err := x.forgetLabel(ctx, e.Repo, e.Label); err != nil {
		return err
	}
	return x.ensureLabel(ctx, c, owner, name, e.Label)
}

package records

import (
	"context"

	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
)

// A task's key may read CI results from GitHub before its pull request's key
// has taken them in (a command judged before the deliveries that bring them,
// app/decide/recheck.go). What it read is kept under AheadKey, and the pull
// request's record is read with it merged in, so that the pull request never
// tells its tasks an older picture than the one they already took in: the
// record never goes back.

// AheadKey keys the CI results read for pull request n's head from a task's
// key: a JSON list of rules.CIRun.
func AheadKey(repo string, n int, head string) string {
	return "ci-ahead/" + rules.TaskKey(repo, n) + "@" + head
}

// mergeAhead merges into pr's runs those read ahead for its head.
func mergeAhead(ctx context.Context, st store.Store, pr *rules.PullRequest) error {
	if pr.Head == "" {
		return nil
	}
	var ahead []rules.CIRun
	if _, err := Load(ctx, st, AheadKey(pr.Repo, pr.Number, pr.Head), &ahead); err != nil {
		return err
	}
	for _, r := range ahead {
		pr.Runs, _ = rules.MergeRun(pr.Runs, r)
	}
	return nil
}

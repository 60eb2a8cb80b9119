// Package records is countersign's own state in the store: every record key
// (their spelling is a stored format: records written by an earlier release
// must still be found), the typed loads of the records, and the outbox
// effect as a commit keeps it.
package records

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/app/mergequeue"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
)

// OutboxEffect is an effect as kept in the store's outbox until applied.
type OutboxEffect struct {
	Installation int64        `json:"installation"`
	Delivery     string       `json:"delivery"` // the delivery that caused it, for logs
	Key          string       `json:"key"`      // unique: marks a notice so a retry finds it
	At           time.Time    `json:"at"`       // when it was decided
	Effect       rules.Effect `json:"effect"`
	// Background: no person waits for it (deliveries.Background); its
	// writes go after interactive ones.
	Background bool `json:"background,omitempty"`
	// MayWait: the card of a task still pending, which may wait while the
	// installation's writes are saturated (app/process).
	MayWait bool `json:"may_wait,omitempty"`
}

// TaskKey is the key of task n's record.
func TaskKey(repo string, n int) string { return "task/" + rules.TaskKey(repo, n) }

// PRKey is the key of pull request n's record.
func PRKey(repo string, n int) string { return "pr/" + rules.TaskKey(repo, n) }

// LoadTask reads a task's record; nil when the issue is not tracked.
func LoadTask(ctx context.Context, st store.Store, repo string, n int) (*rules.Task, error) {
	var t rules.Task
	ok, err := Load(ctx, st, TaskKey(repo, n), &t)
	if !ok {
		return nil, err
	}
	return &t, nil
}

// LoadPR reads a pull request's record; nil when there is none.
func LoadPR(ctx context.Context, st store.Store, repo string, n int) (*rules.PullRequest, error) {
	var pr rules.PullRequest
	ok, err := Load(ctx, st, PRKey(repo, n), &pr)
	if !ok {
		return nil, err
	}
	if err := mergeAhead(ctx, st, &pr); err != nil { // ahead.go
		return nil, err
	}
	return &pr, nil
}

// Load decodes the record under key into v; false when there is none.
func Load(ctx context.Context, st store.Store, key string, v any) (bool, error) {
	b, err := st.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", key, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("decode %s: %w", key, err)
	}
	return true, nil
}

// GoalKey is the key of milestone m's goal record.
func GoalKey(repo string, m int) string { return "goal/" + rules.GoalKey(repo, m) }

// GoalIssueKey maps a goal issue's number to its milestone.
func GoalIssueKey(repo string, n int) string { return "goal-issue/" + rules.TaskKey(repo, n) }

// LoadGoal reads a goal's record; nil when there is none.
func LoadGoal(ctx context.Context, st store.Store, repo string, m int) (*rules.Goal, error) {
	var g rules.Goal
	ok, err := Load(ctx, st, GoalKey(repo, m), &g)
	if !ok {
		return nil, err
	}
	return &g, nil
}

// GoalTextKey keeps what was last written to goal issue n (its digest).
func GoalTextKey(repo string, n int) string { return "goal-issue-text/" + rules.TaskKey(repo, n) }

// CIReadKey records what the last read of pull request n's CI results on
// head saw (ciRead).
func CIReadKey(repo string, n int, head string) string {
	return "ci-read/" + rules.TaskKey(repo, n) + "@" + head
}

// HeadKey keys the pull requests whose head is sha.
func HeadKey(repo, sha string) string { return "head/" + repo + "@" + sha }

// PushesKey keeps what countersign knows of repo's pushes to any ref: a
// JSON list of rules.Push, oldest first, within rules' bounds (MaxPushes,
// MaxPushShas, PushTTL). Only push webhooks write it, decided one at a time
// under the repository's key.
func PushesKey(repo string) string { return "pushes/" + repo }

// ConfigKey keeps repo's configuration as last read.
func ConfigKey(repo string) string { return "config/" + repo }

// DashboardTimerKey is the ordering key of a goal's dashboard timers: not the
// goal's, which they must not hold up.
func DashboardTimerKey(repo string, m int) string { return "dashboard/" + rules.GoalKey(repo, m) }

// DashboardDueKey records when a goal's pending dashboard edit is due.
func DashboardDueKey(repo string, m int) string { return "dashboard-due/" + rules.GoalKey(repo, m) }

// CardOwedKey records the card of task n that waits to be written (its
// records.OutboxEffect).
func CardOwedKey(repo string, n int) string { return "card-owed/" + rules.TaskKey(repo, n) }

// CardOwedPrefix is the prefix of every CardOwedKey.
const CardOwedPrefix = "card-owed/"

// LabelViewKey records the owned labels countersign last set on issue n.
func LabelViewKey(repo string, n int) string { return "labels/" + rules.TaskKey(repo, n) }

// MadeLabelKey records that repo has label (case-insensitive, as GitHub
// compares label names).
func MadeLabelKey(repo, label string) string {
	return "label-made/" + repo + "\x00" + strings.ToLower(label)
}

// CardIDKey keeps the comment id of task n's card.
func CardIDKey(repo string, n int) string { return "card/" + rules.TaskKey(repo, n) }

// CardDigestKey keeps the digest of the text countersign last wrote on task
// n's card (with the card's id).
func CardDigestKey(repo string, n int) string { return "card-digest/" + rules.TaskKey(repo, n) }

// CardURLKey keeps the URL of task n's card.
func CardURLKey(repo string, n int) string { return "card-url/" + rules.TaskKey(repo, n) }

// NewHeadKey records that sha came as a pull request's new head
// (pull_request opened or synchronize): no check run of countersign's can be
// on it but those it remembers making.
func NewHeadKey(repo, sha string) string { return "new-head/" + repo + "@" + sha }

// MergeQueueKey is the ordering key under which every merge-queue group of
// repo is decided, one decision at a time: a group's answer carries the
// answer of the group it is built on, so the two are never decided at the
// same moment.
func MergeQueueKey(repo string) string { return "merge-queue/" + repo }

// MergeGroupsKey keeps the merge-queue groups tracked for pull request n:
// a JSON list of mergequeue.Group, oldest first.
func MergeGroupsKey(repo string, n int) string { return "merge-groups/" + rules.TaskKey(repo, n) }

// MergeGroupKey records which pull request the merge-queue group with head
// sha merges (its number, in JSON).
func MergeGroupKey(repo, sha string) string { return "merge-group/" + repo + "@" + sha }

// MergeGroupBehindKey records that the merge-queue group with head behind
// is built on the group with head sha (is behind it in the queue): {"pr":
// n, "head_sha": behind}. One record per group behind, so that groups
// decided at the same moment never overwrite each other's.
func MergeGroupBehindKey(repo, sha, behind string) string {
	return MergeGroupBehindPrefix(repo, sha) + behind
}

// MergeGroupBehindPrefix is the prefix of the MergeGroupBehindKey records of
// the groups built on the group with head sha.
func MergeGroupBehindPrefix(repo, sha string) string { return MergeGroupBehindOldKey(repo, sha) + "/" }

// MergeGroupBehindOldKey is where earlier versions recorded the one group
// built on the group with head sha (as MergeGroupBehindKey's record).
func MergeGroupBehindOldKey(repo, sha string) string { return "merge-group-behind/" + repo + "@" + sha }

// MergeGroupGoneKey records that GitHub destroyed the merge-queue group
// with head sha: {"pr": n, "reason": merged, invalidated or dequeued}.
func MergeGroupGoneKey(repo, sha string) string { return "merge-group-gone/" + repo + "@" + sha }

// ForgedKey records that who posted a result of kind (mergequeue.ForgedStatus
// or ForgedCheckRun) named countersign/verification on sha, once said.
func ForgedKey(repo, sha, kind, who string) string {
	return "forged/" + repo + "@" + sha + "/" + kind + "/" + strings.ToLower(who)
}

// LoadMergeGroups loads the merge-queue groups tracked for pull request n
// (none: nil).
func LoadMergeGroups(ctx context.Context, st store.Store, repo string, n int) ([]mergequeue.Group, error) {
	var groups []mergequeue.Group
	_, err := Load(ctx, st, MergeGroupsKey(repo, n), &groups)
	return groups, err
}

// ScanNumbers are the numbers that end the keys of the records whose key is
// prefix followed by a number.
func ScanNumbers(ctx context.Context, st store.Store, prefix string) ([]int, error) {
	keys, err := st.Scan(ctx, prefix)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, k := range keys {
		if n, err := strconv.Atoi(strings.TrimPrefix(k, prefix)); err == nil {
			out = append(out, n)
		}
	}
	return out, nil
}

// DependentKey records that task dep (a rules.TaskKey) is blocked by issue
// n of repo, with the installation dep is decided in: when the issue changes,
// dep is told (app/decide/links.go). Written only under dep's key.
func DependentKey(repo string, n int, dep string) string { return DependentPrefix(repo, n) + dep }

// DependentPrefix is the prefix of the DependentKey records of issue n of repo.
func DependentPrefix(repo string, n int) string { return "dependent/" + rules.TaskKey(repo, n) + "/" }

// ExcusedKey records that open pull request pr, whose base is branch base,
// has changes excused because base held them (rules.PullRequest.Excused): a
// push to base reads again whether it still does. Written only under the
// pull request's key.
func ExcusedKey(repo, base string, pr int) string {
	return ExcusedPrefix(repo, base) + strconv.Itoa(pr)
}

// ExcusedPrefix is the prefix of the ExcusedKey records of branch base of
// repo.
func ExcusedPrefix(repo, base string) string { return "excused/" + repo + ":" + base + "/" }

// RefusedPrefix is the prefix of the refused-link records of task.
func RefusedPrefix(repo string, task int) string {
	return "refused/" + rules.TaskKey(repo, task) + "/"
}

// RefusedKey records that pull request pr's link to task was refused.
func RefusedKey(repo string, task, pr int) string {
	return RefusedPrefix(repo, task) + strconv.Itoa(pr)
}

// TaskScope and GoalScope name what a signed record is about: a record signed
// for one task is worth nothing on another.
func TaskScope(repo string, n int) string { return "task/" + rules.TaskKey(repo, n) }

func GoalScope(repo string, m int) string { return "goal/" + rules.GoalKey(repo, m) }

// Config is a repository's configuration as last read.
type Config struct {
	Config rules.Config `json:"config"`
	Error  string       `json:"error,omitempty"` // the file's problem: Config is the last good one
	Line   int          `json:"line,omitempty"`
	// Absent: the default branch has no such file (Config is the defaults).
	Absent bool      `json:"absent,omitempty"`
	ReadAt time.Time `json:"read_at"`
}

// LabelView is the record of the owned labels countersign last set on an
// issue. Stale: someone changed them since (or they drifted); the next sync
// reads the issue's labels.
type LabelView struct {
	Labels []string `json:"labels,omitempty"`
	Stale  bool     `json:"stale,omitempty"`
}

// StaleLabelView is the LabelView record that says the record is not to be
// trusted.
var StaleLabelView = []byte(`{"stale":true}`)

// GoalText is the record of what countersign last wrote to a goal
// issue: a digest of its title and body, and its state. Stale: someone
// edited, closed or reopened it since.
type GoalText struct {
	Digest string `json:"digest,omitempty"`
	State  string `json:"state,omitempty"`
	Stale  bool   `json:"stale,omitempty"`
}

// StaleGoalText is the GoalText record that says it is not to be trusted.
var StaleGoalText = []byte(`{"stale":true}`)

// Package deliveries is the one registry of what countersign handles: the
// webhook events and actions it decides on (app.yml subscribes to exactly
// these, deliveries_test.go holds it to them), and countersign's own internal
// deliveries, with their payloads. Intake accepts an event only if it is here;
// decide acts on an event.action pair only if it is here.
//
// The names and payload JSON of internal deliveries are a stored format:
// deliveries queued by an earlier release must still decode.
package deliveries

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/countersign/countersign/app/mergequeue"
	"github.com/countersign/countersign/app/reconcile"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
)

// Internal events: countersign's own deliveries, queued by its decisions (or,
// for a dashboard's timer, by its effects) under the key that must decide them.
const (
	// Task is a pull request's event fanned out to a task it closes.
	Task = "countersign.task"
	// Check is a task's change fanned back to the pull requests whose check
	// depends on it.
	Check = "countersign.check"
	// Goal is the internal event of a goal: milestone events, events on the
	// goal issue and changes of the goal's tasks, under the goal's own key.
	Goal = "countersign.goal"
	// CI carries CI results for one pull request's head.
	CI = "countersign.ci"
	// Head decides the check on a commit that is the head of one or more
	// pull requests, under the commit's own key (HeadKey): the check answers
	// for every open pull request whose head it is.
	Head = "countersign.head"
	// Regate makes a pull request's key decide again which tasks it links
	// (its author was assigned to one it was refused).
	Regate = "countersign.regate"
	// BaseMoved makes a pull request's key read again whether its base
	// still holds the changes its own were excused by (rules.Excuse): its
	// base branch was pushed to, or its base just changed.
	BaseMoved = "countersign.base-moved"
	// Dashboard writes a goal's dashboard once its coalescing window has
	// passed.
	Dashboard = "countersign.dashboard"
	// MergeGroup is a merge-queue group (a merge_group webhook, or
	// countersign's own decision again of a group), decided under the
	// repository's merge-queue key (records.MergeQueueKey), one group at a
	// time.
	MergeGroup = "countersign.merge-group"
	// Card writes a task card that waited while the installation's writes
	// were saturated (see app/process).
	Card = "countersign.card"
	// Board compares a repository's tasks and goals with its board (package
	// board), under the repository's board key.
	Board = "countersign.board"
	// Resync and Repair are reconciliation's (package reconcile).
	Resync = reconcile.ResyncEvent
	Repair = reconcile.RepairEvent
)

// TaskPayload is the payload of a Task delivery.
type TaskPayload struct {
	Installation int64       `json:"installation"`
	Event        rules.Event `json:"event"`
}

// CheckPayload is the payload of a Check delivery.
type CheckPayload struct {
	Installation int64  `json:"installation"`
	Repo         string `json:"repo"`
	Number       int    `json:"number"`
	// Interactive: the refresh follows a person's action (see Background).
	Interactive bool `json:"interactive,omitempty"`
	// Grouped: the check on the pull request's head goes with the task's
	// label, in the task's own group of writes (rules.Effect.Latest): the
	// refresh leaves it out, and answers only for its merge-queue groups.
	Grouped bool `json:"grouped,omitempty"`
}

// HeadPayload is the payload of a Head delivery.
type HeadPayload struct {
	Installation int64  `json:"installation"`
	Repo         string `json:"repo"`
	SHA          string `json:"sha"`
	// Number is the pull request whose change asks (0: none in particular).
	Number int `json:"number,omitempty"`
	// Interactive: a person waits for it (see Background).
	Interactive bool `json:"interactive,omitempty"`
}

// HeadKey is the ordering key of the Head deliveries of commit sha: the
// checks of the pull requests that share it are decided one at a time.
func HeadKey(repo, sha string) string { return repo + "@" + sha }

// CardPayload is the payload of a Card delivery.
type CardPayload struct {
	Installation int64  `json:"installation"`
	Repo         string `json:"repo"`
	Number       int    `json:"number"`
}

// GoalPayload is the payload of a Goal delivery.
type GoalPayload struct {
	Installation int64           `json:"installation"`
	Event        rules.GoalEvent `json:"event"`
}

// CIPayload is the payload of a CI delivery: a run to record, or (Read) a
// request to read every run of the head again.
type CIPayload struct {
	Installation int64        `json:"installation"`
	Repo         string       `json:"repo"`
	Number       int          `json:"number"`
	Head         string       `json:"head"`
	Run          *rules.CIRun `json:"run,omitempty"`
	Read         bool         `json:"read,omitempty"`
	At           time.Time    `json:"at,omitzero"` // when the result came
	// Suite is the check suite whose completion asks for a read: a read that
	// already saw every run of it complete saw what it announces.
	Suite int64 `json:"suite,omitempty"`
}

// RegatePayload is the payload of a Regate delivery.
type RegatePayload struct {
	Installation int64  `json:"installation"`
	Repo         string `json:"repo"`
	Number       int    `json:"number"` // the pull request
}

// BaseMovedPayload is the payload of a BaseMoved delivery.
type BaseMovedPayload struct {
	Installation int64  `json:"installation"`
	Repo         string `json:"repo"`
	Number       int    `json:"number"` // the pull request
	Base         string `json:"base"`   // its base branch, as the asker saw it
	// Actor is who moved the base (the push's sender), zero when none.
	Actor rules.User `json:"actor,omitzero"`
}

// MergeGroupPayload is the payload of a MergeGroup delivery.
type MergeGroupPayload struct {
	Installation int64  `json:"installation"`
	Repo         string `json:"repo"`
	// Action is the merge_group action (mergequeue.ChecksRequested or
	// Destroyed). Its JSON name is not "action": that would name the
	// internal event's action, and Handled would drop the delivery.
	Action  string `json:"group_action"`
	PR      int    `json:"pr"`
	HeadSHA string `json:"head_sha"`
	BaseSHA string `json:"base_sha,omitempty"`
	Ref     string `json:"ref"`
	Base    string `json:"base"`
	// Invalid says why the group's head_ref or head_sha cannot be trusted
	// (its check fails, saying so).
	Invalid string `json:"invalid,omitempty"`
	// Reason is a destroyed group's: merged, invalidated or dequeued.
	Reason string `json:"reason,omitempty"`
	// Rebuilt marks a regroup (mergequeue.Regroup) of a pull request whose
	// record was just rebuilt from GitHub: its groups are found again from
	// GitHub's queue branches, and their checks written again.
	Rebuilt bool `json:"rebuilt,omitempty"`
}

// DashboardPayload is the payload of a Dashboard delivery.
type DashboardPayload struct {
	Installation int64     `json:"installation"`
	Repo         string    `json:"repo"`
	Milestone    int       `json:"milestone"`
	Due          time.Time `json:"due"`
	// Apply: the window has passed; decided under the goal's key, it
	// writes the goal issue. Otherwise it is the timer, under its own key.
	Apply bool `json:"apply,omitempty"`
}

// Derived is an internal delivery, interactive when a person waits for it
// (see Background).
func Derived(id, event, key string, payload any) store.Delivery {
	b, _ := json.Marshal(payload) // plain structs of strings and numbers: cannot fail
	d := store.Delivery{ID: id, Event: event, Key: key, Payload: b, ReceivedAt: time.Now().UTC()}
	d.Interactive = !Background(&d)
	return d
}

// handled is every event countersign decides on, with its actions ("": the
// event has no action: push, status and the internal events).
var handled = []struct {
	event   string
	actions []string
	// always: GitHub sends it to every App, unsubscribed (not in app.yml).
	always bool
}{
	{event: "issues", actions: []string{"opened", "edited", "assigned", "unassigned", "closed", "reopened",
		"labeled", "unlabeled", "milestoned", "demilestoned", "deleted", "transferred"}},
	// edited, deleted: only of the task card, written back (decide/cardrepair.go)
	{event: "issue_comment", actions: []string{"created", "edited", "deleted"}},
	{event: "pull_request", actions: []string{"opened", "reopened", "edited", "ready_for_review",
		"converted_to_draft", "synchronize", "closed"}},
	{event: "pull_request_review", actions: []string{"submitted", "dismissed"}},
	{event: "check_run", actions: []string{"created", "completed"}},
	{event: "check_suite", actions: []string{"completed"}},
	{event: "status", actions: []string{""}},
	{event: "milestone", actions: []string{"created", "edited", "closed", "opened", "deleted"}},
	{event: "push", actions: []string{""}},
	{event: "label", actions: []string{"edited", "deleted"}},
	// tasks blocked by tasks (decide/links.go): blocking_* and parent_issue_*
	// are the other side of a link, decided where the waiting issue is
	{event: "issue_dependencies", actions: []string{"blocked_by_added", "blocked_by_removed", "blocking_added", "blocking_removed"}},
	{event: "sub_issues", actions: []string{"sub_issue_added", "sub_issue_removed", "parent_issue_added", "parent_issue_removed"}},
	// the merge queue (mergequeue/decide)
	{event: "merge_group", actions: []string{mergequeue.ChecksRequested, mergequeue.Destroyed}},
	// new repositories to track (reconciliation: reconcile/decide)
	{event: "installation", actions: []string{"created", "new_permissions_accepted", "unsuspend"}, always: true},
	{event: "installation_repositories", actions: []string{"added"}, always: true},
	// the board (package board): a person's change of countersign's field, a removed item
	{event: "projects_v2_item", actions: []string{"edited", "deleted"}},
}

// internal are the internal events; none has an action.
var internal = []string{Task, Check, Goal, CI, Regate, BaseMoved, Dashboard, MergeGroup, Card, Resync, Repair, Head, Board}

var (
	webhookEvents  = map[string]bool{}
	handledActions = map[string]bool{}
)

func init() {
	for _, h := range handled {
		webhookEvents[h.event] = true
		for _, a := range h.actions {
			handledActions[h.event+"."+a] = true
		}
	}
	for _, e := range internal {
		handledActions[e+"."] = true
	}
}

// Webhook reports whether countersign acts on webhook event at all: intake
// queues it; others are answered 202 and ignored.
func Webhook(event string) bool { return webhookEvents[event] }

// Handled reports whether countersign decides on event with action (the
// payload's "action", "" when it has none); the rest are done with at once.
func Handled(event, action string) bool { return handledActions[event+"."+action] }

// Subscribed are the webhook events the App manifest (app.yml) subscribes to:
// the handled ones less those GitHub sends every App anyway.
func Subscribed() []string {
	var out []string
	for _, h := range handled {
		if !h.always {
			out = append(out, h.event)
		}
	}
	return out
}

// MetricEvents are every value MetricEvent returns: the handled webhook
// events, "ping" and "other".
func MetricEvents() []string {
	out := make([]string, 0, len(handled)+2)
	for _, h := range handled {
		if !slices.Contains(out, h.event) {
			out = append(out, h.event)
		}
	}
	return append(out, "ping", "other")
}

// MetricEvent bounds the event label's values to the events GitHub has.
func MetricEvent(event string) string {
	if Webhook(event) || event == "ping" {
		return event
	}
	return "other"
}

// EventTime is when an event happened: the time its payload gives, else when
// the delivery arrived.
func EventTime(t time.Time, d *store.Delivery) time.Time {
	if t.IsZero() {
		t = d.ReceivedAt
	}
	return t.UTC()
}

package rules

import "time"

// EventKind names what happened, in the domain's terms.
type EventKind string

// The events rules decides on. Issue events come from the task's own issue;
// PR events from a pull request that closes it; Commented from a comment on
// either.
const (
	IssueOpened    EventKind = "issue.opened"
	IssueEdited    EventKind = "issue.edited"
	IssueAssigned  EventKind = "issue.assignees" // assigned or unassigned: Issue.Assignees is the new set
	IssueClosed    EventKind = "issue.closed"
	IssueReopened  EventKind = "issue.reopened"
	IssueLabeled   EventKind = "issue.labeled"
	IssueUnlabeled EventKind = "issue.unlabeled"

	PRLinked   EventKind = "pr.linked"   // opened, reopened, or edited to close the task
	PRUnlinked EventKind = "pr.unlinked" // edited not to close it, or closed unmerged
	PRReady    EventKind = "pr.ready"    // marked ready for review
	PRDraft    EventKind = "pr.draft"    // converted to draft
	PRPushed   EventKind = "pr.pushed"   // new commits
	PRReviewed EventKind = "pr.reviewed" // a review submitted or dismissed
	PRMerged   EventKind = "pr.merged"
	PRChecked  EventKind = "pr.checked" // CI results on its head changed
	// PRRetargeted: its base changed (Event.Retarget says from what to what);
	// PRFacts.Merges says what it merges now.
	PRRetargeted EventKind = "pr.retargeted"

	Commented EventKind = "commented" // a new comment with commands

	// GateNoted: something about the gate of a pull request that closes the
	// task (its merge-queue group's check turned, a forged check or status)
	// that the card's history must say; Text says it.
	GateNoted EventKind = "gate.noted"
	// CardDeleted and CardEdited: someone other than countersign deleted or
	// edited the task card (DESIGN §5): it is written back, and that is
	// recorded.
	CardDeleted EventKind = "card.deleted"
	CardEdited  EventKind = "card.edited"
	// LinksChanged: the task's blockers changed (a dependency or sub-issue
	// added or removed, a blocker's status changed); Links says what they
	// are now (docs/design.md, Dependencies).
	LinksChanged EventKind = "links.changed"
)

// Event is one thing that happened to a task, with the facts about it that
// GitHub's webhook carried.
type Event struct {
	Kind  EventKind `json:"kind"`
	Actor User      `json:"actor"`
	At    time.Time `json:"at"` // when it happened (from the delivery, never the clock)

	Issue  IssueFacts   `json:"issue"`            // the task's issue, as the webhook showed it
	Label  string       `json:"label,omitempty"`  // labeled, unlabeled
	Reason string       `json:"reason,omitempty"` // closed: "completed", "not_planned"
	PR     *PRFacts     `json:"pr,omitempty"`
	Review *ReviewFacts `json:"review,omitempty"`

	// Commented: the comment's id, where it was written (the task or a linked
	// pull request) and the commands found in it, in order.
	CommentID int64     `json:"comment_id,omitempty"`
	Where     int       `json:"where,omitempty"`
	Commands  []Command `json:"commands,omitempty"`
	// Text is the comment's body: a claim of completion (/submit) is checked
	// for contradictions in it.
	Text string `json:"text,omitempty"`
	// Retarget: the pull request's base changed (PRRetargeted).
	Retarget *Retarget `json:"retarget,omitempty"`
	// Links, when set, are the task's blockers and cycle as they are now
	// (on any event: the adapters read them afresh before a /verify).
	Links *Links `json:"links,omitempty"`
	// Link is the change GitHub reported (LinksChanged), which the adapters
	// turn into Links.
	Link *LinkChange `json:"link,omitempty"`
}

// Retarget is a change of a pull request's base branch, From to To, and how
// many of the changes it merges now (files, each with its patch) no one
// approved: 0 when it merges what it merged before. With Undone, the base
// (From and To) moved under it instead.
type Retarget struct {
	From    string `json:"from"`
	To      string `json:"to"`
	Changes int    `json:"changes,omitempty"`
	// Undone: the base did not change, but it no longer holds what pull
	// request Undone merged into it, which the pull request's changes were
	// excused by (PullRequest.Excused): it merges those again.
	Undone int `json:"undone,omitempty"`
}

// Contradiction is a phrase that contradicts a claim of completion, with the
// line that says it.
type Contradiction struct {
	Phrase string `json:"phrase"`
	Line   string `json:"line"`
}

// IssueFacts describe the task's issue as GitHub reported it.
type IssueFacts struct {
	Repo      string   `json:"repo"`
	Number    int      `json:"number"`
	Title     string   `json:"title,omitempty"`
	Body      string   `json:"body,omitempty"`
	Author    User     `json:"author,omitzero"`
	Assignees []User   `json:"assignees,omitempty"`
	Labels    []string `json:"labels,omitempty"`
	Milestone int      `json:"milestone,omitempty"`
	Closed    bool     `json:"closed,omitempty"`
	// Counts are how many issues GitHub says block it and are its
	// sub-issues (nil: the delivery did not say): a count that differs
	// from the task's record makes the adapters read the links again.
	Counts *LinkCounts `json:"counts,omitempty"`
}

// LinkCounts are the totals of an issue's dependency and sub-issue
// summaries.
type LinkCounts struct {
	BlockedBy int `json:"blocked_by"`
	SubIssues int `json:"sub_issues"`
}

// PRFacts describe a pull request that closes the task.
type PRFacts struct {
	Number int    `json:"number"`
	Author User   `json:"author"`
	Head   string `json:"head"`
	Draft  bool   `json:"draft,omitempty"`
	Open   bool   `json:"open"`
	Merged bool   `json:"merged,omitempty"`
	// Committers are the authors and Co-authored-by co-authors of its commits.
	Committers []Member `json:"committers,omitempty"`
	// Pushers are who pushed commits to it (the senders of its opened and
	// synchronize webhooks), over its whole life: builders like its author,
	// whatever git identity their commits carry.
	Pushers []User `json:"pushers,omitempty"`
	// PushersUnread says why not every push to its head branch could be
	// read ("" when all were: GitHub's repository activity is longer than
	// countersign reads): someone not among Pushers may have pushed its
	// commits, so only a lead may verify its attempt.
	PushersUnread string `json:"pushers_unread,omitempty"`
	// Unresolved are the git identities of its commits that GitHub links to
	// no account ("Name <email>" as the commits write them, with the role):
	// no one can be held to them, so the card shows them to the verifier.
	Unresolved []string `json:"unresolved,omitempty"`
	// Files are the files it changes, when they were read for this head (nil:
	// not read; the task keeps what it knew).
	Files []string `json:"files,omitempty"`
	// Runs are the CI results on Head that contracts.checks counts.
	Runs []CIRun `json:"runs,omitempty"`
	// Merges fingerprints what it would merge into its base: its files, each
	// with its patch, as GitHub lists them ("": not known). The same head on
	// another base can merge other changes; an approval counts for the head
	// and the changes it saw.
	Merges string `json:"merges,omitempty"`
	// Suites are the check suites on Head, as last read (CISuite).
	Suites []CISuite `json:"suites,omitempty"`
	// Body is its description: a claim of completion is checked for
	// contradictions in it.
	Body string `json:"body,omitempty"`
	// Outsider: its author may not build here (no write permission, and not
	// an agent whose pilot has it). Such a pull request links only to a task
	// its author (or their agent's pilot) is assigned to; to any other it is
	// nothing: it moves, blocks and voids nothing (docs/design.md, The task lifecycle).
	Outsider bool `json:"outsider,omitempty"`
	// Assignees are its assignees: the people an agent's pull request is
	// assigned to are the humans behind it (its default pilots).
	Assignees []User `json:"assignees,omitempty"`
}

// ReviewFacts describe one pull request review.
type ReviewFacts struct {
	Reviewer User   `json:"reviewer"`
	State    string `json:"state"` // approved, changes_requested, commented, dismissed
	Head     string `json:"head"`  // the commit reviewed
	Body     string `json:"body,omitempty"`
	// OtherBase is the base branch the pull request had when it was
	// reviewed, when that is not the base countersign knows it by now: the
	// review saw other changes than those it merges ("": the same).
	OtherBase string `json:"other_base,omitempty"`
}

// Facts are what a task's decision knows beyond its event: the repository's
// configuration, and Ask, which the decision asks for the rest (who the actor
// is, the team size, the leads, pilots) where it needs the answer.
type Facts struct {
	Config Config
	Ask    Lookup
}

// Person is what the repository says about someone: the event's actor, or a
// review's reviewer.
type Person struct {
	Lead bool `json:"lead,omitempty"`
	// Eligible: may verify and reject (write permission, or listed in
	// verifiers: when it is set, or a lead).
	Eligible bool `json:"eligible,omitempty"`
	// Writer: has write permission on the repository.
	Writer bool `json:"writer,omitempty"`
}

// MayApprove: an approval counts from someone with write permission (as
// GitHub's own required reviews) or who may verify.
func (p Person) MayApprove() bool { return p.Eligible || p.Writer }

// EffectKind names a change to make on GitHub. Every effect is idempotent: it
// states what GitHub must look like, so applying it twice changes nothing more.
type EffectKind string

// The effects.
const (
	// EffectSyncLabels makes the issue carry exactly Labels among the labels
	// countersign owns (TaskOwned), leaving every other label alone.
	EffectSyncLabels EffectKind = "sync-labels"
	// EffectSyncCard makes the task card (one comment, found by its marker) show
	// the task record as it is when the effect is applied.
	EffectSyncCard EffectKind = "sync-card"
	// EffectNotice posts Notice as a new comment on issue or pull request Number
	// (once: a retry finds the comment it posted before).
	EffectNotice EffectKind = "notice"
	// EffectReopen reopens the issue.
	EffectReopen EffectKind = "reopen"
	// EffectAssign adds Users to the issue's assignees.
	EffectAssign EffectKind = "assign"
	// EffectCheck makes the countersign/verification check run on SHA, the
	// head of pull request Number, say Check (or, Latest, what the records
	// say when it is applied).
	EffectCheck EffectKind = "check"
	// EffectConfigCheck reports whether the repository configuration of commit
	// SHA is valid (Problem, at Line, when not) as the countersign/config check run.
	EffectConfigCheck EffectKind = "config-check"
	// EffectRenameLabel renames the repository label Label back to RenameTo
	// (someone renamed it away from, or onto, a label countersign owns).
	EffectRenameLabel EffectKind = "rename-label"
	// EffectCreateLabel creates the repository label Label, one countersign
	// owns, with its colour and description (someone deleted it).
	EffectCreateLabel EffectKind = "create-label"
	// EffectEnsureLabels makes the repository have Labels, labels countersign
	// owns, with their colours, creating those it does not know to exist (a
	// repository countersign starts tracking).
	EffectEnsureLabels EffectKind = "ensure-labels"
)

// Effect is one change to make on GitHub.
type Effect struct {
	Kind   EffectKind `json:"kind"`
	Repo   string     `json:"repo"`
	Number int        `json:"number"`
	Labels []string   `json:"labels,omitempty"`
	Users  []string   `json:"users,omitempty"`
	Notice *Notice    `json:"notice,omitempty"`
	SHA    string     `json:"sha,omitempty"`
	Check  *Check     `json:"check,omitempty"`
	// Problem and Line: the configuration error of a config-check; Note, a
	// remark on a valid one; Removed: the change removes the file (the
	// defaults apply).
	Problem string `json:"problem,omitempty"`
	Line    int    `json:"line,omitempty"`
	Note    string `json:"note,omitempty"`
	Removed bool   `json:"removed,omitempty"`
	// Label and RenameTo: the repository label of a rename-label or
	// create-label.
	Label    string `json:"label,omitempty"`
	RenameTo string `json:"rename_to,omitempty"`
	// Remove are labels a sync-labels also takes off (not countersign's: the
	// name an owned label was renamed to).
	Remove []string `json:"remove,omitempty"`
	// Project, Field and Value: a board effect's project URL, field and
	// option; Goal: Number is a milestone, the item its goal issue.
	Project string `json:"project,omitempty"`
	Field   string `json:"field,omitempty"`
	Value   string `json:"value,omitempty"`
	Goal    bool   `json:"goal,omitempty"`
	// Latest: a check whose content is worked out when it is applied, from
	// the records as they are then (the check on head SHA answering for
	// pull request Number, as its head's own decision would): a task's
	// decision puts it in its own group of writes, next to its label.
	Latest bool `json:"latest,omitempty"`
}

// NoticeKind names a comment that needs someone's attention.
type NoticeKind string

// The notices.
const (
	NoticeRefused    NoticeKind = "refused"    // a command was refused
	NoticeIgnored    NoticeKind = "ignored"    // an approval did not count
	NoticeRejected   NoticeKind = "rejected"   // /reject
	NoticeEscalated  NoticeKind = "escalated"  // repeated rejection or failure
	NoticeReopened   NoticeKind = "reopened"   // a close of an unverified task was undone
	NoticeRegression NoticeKind = "regression" // /reopen of a verified task
	NoticeStatus     NoticeKind = "status"     // /status
	NoticeHelp       NoticeKind = "help"       // /help
	// NoticeFailed: a criterion failed on work in review or completed: a
	// failed attempt, back to in-progress.
	NoticeFailed NoticeKind = "failed"
	// NoticeContradiction: a claim of completion that also says it is not done.
	NoticeContradiction NoticeKind = "contradiction"
	// NoticeUnblocked: the last blocker of a task stopped blocking; it
	// mentions who were refused a /verify while it was blocked.
	NoticeUnblocked NoticeKind = "unblocked"
)

// Notice is the content of a comment; templates/notice-<kind>.md.tmpl
// renders it.
type Notice struct {
	Kind  NoticeKind `json:"kind"`
	Task  int        `json:"task"`
	Actor string     `json:"actor,omitempty"`
	// ActorID is the id of the account Actor is the login of (0: unknown):
	// replies to one person are bounded (docs/design.md, What people see).
	ActorID int64  `json:"actor_id,omitempty"`
	Quote   string `json:"quote,omitempty"`  // the command, as written
	Reason  string `json:"reason,omitempty"` // why (ignored), or the person's reason
	// Refusals are the refused commands of one comment, answered together.
	Refusals   []Refusal   `json:"refusals,omitempty"`
	Mentions   []string    `json:"mentions,omitempty"`
	State      State       `json:"state,omitempty"`
	Rejections []Rejection `json:"rejections,omitempty"`
	// Criteria are the failed criteria (failed), or the contract (status).
	Criteria []Criterion `json:"criteria,omitempty"`
	// Contradiction is the contradicting words (contradiction).
	Contradiction  *Contradiction `json:"contradiction,omitempty"`
	PR             int            `json:"pr,omitempty"`
	Head           string         `json:"head,omitempty"`
	FailedAttempts int            `json:"failed_attempts,omitempty"`
	// Failures are the failed attempts (escalated: what failed, when, where).
	Failures []Failure `json:"failures,omitempty"`
	// ByFailures: an escalation for failed attempts, not rejections.
	ByFailures bool `json:"by_failures,omitempty"`
	// Help is every command, and whether the actor may use it now (help).
	Help []HelpEntry `json:"help,omitempty"`
}

// Refusal is one refused command: as written, and why it changed nothing.
type Refusal struct {
	Quote  string `json:"quote"`
	Reason string `json:"reason"`
}

// Decision is what rules decided for one event: the task record to keep (nil
// when nothing changed), the effects to apply, in order, and the pull requests
// whose verification check must be worked out again.
type Decision struct {
	Task    *Task
	Effects []Effect
	Refresh []int
	// Goals are the goals (milestones) to tell of the task as it is now: the
	// one it is in (In) when it changed or joined it, the one it left (!In).
	Goals []GoalNote
	// Recheck: a command was refused for a picture that deliveries not yet
	// taken in may change (the task still in review, CI pending). The
	// adapters read GitHub once (the linked pull requests' head, reviews
	// and CI), take in what they find, and decide the event again
	// (docs/design.md, Deliveries in any order).
	Recheck bool `json:"-"`
}

// GoalNote says that goal Milestone must hear of the task: In it, or no longer.
type GoalNote struct {
	Milestone int  `json:"milestone"`
	In        bool `json:"in"`
}

// Package scenario plays workflow stories against a real countersign bot and
// a fake GitHub, and checks what the bot did.
//
// A Rig is the stage: a githubtest server with one repository and the real
// bot (app.Server, bbolt store in a temporary directory) wired over HTTP.
// A Scenario is a story read from a small line-based file (internal/scenarios);
// Play performs it step by step, lets the bot settle after every action,
// checks every expectation, and writes a timeline for people to read.
//
// # The format
//
// One statement per line. Blank lines and lines starting with # are comments
// (those before the scenario: line describe the story; those right before a
// step are shown above it in the timeline); so is the rest of a line after a " # " outside quotes, except in comment
// bodies ("comments on #1: ..."), which run to the end of the line. Steps may
// be indented. Strings are "double quoted", with \n, \t, \" and \\ escapes.
// Issue and PR numbers are written #N; "PR #N" where a pull request is meant.
// Anything the grammar does not know is an error, reported as file:line.
// internal/scenarios/README.md has the same reference, the list of stories
// and a complete example.
//
// Setup lines come first:
//
//	scenario: Simple three-person workflow  # required, first, the title
//	people: alice=write bob=write carol=admin          # repository permissions:
//	                                                  # admin|maintain|write|triage|read|none
//	team: acme/leads = carol dave                      # an organization team and its members
//	emails: alice=alice@company.example                # verified emails: GitHub resolves commit authors by them
//	config:                                            # .github/countersign.yml on the default branch:
//	  leads: [carol]                                   # the indented block that follows
//	  agents: {"minion[bot]": alice}                   # (or inline: config: {leads: [carol]})
//
// Then actions, each starting with who acts (a GitHub login; "minion[bot]"
// is one too):
//
//	carol opens issue #1 "Title"                       # #1 asserts the number GitHub gives it
//	carol opens issue #1 "Title" with body "Text"
//	carol edits #1 body "New text"                     # also: title "New title"
//	carol assigns #1 to alice                          # several: to alice and bob
//	carol unassigns alice from #1
//	alice opens PR #2 "Title" closing #1               # body "Fixes #1" (closing #1 #3: one line each)
//	alice opens draft PR #2 "Title" closing #1
//	alice opens PR #2 "Title" with body "Text"         # explicit body (kept before the Fixes lines)
//	alice opens PR #2 "Title" closing #1 co-authored by dave   # Co-authored-by: trailer on the commit
//	alice opens PR #2 "Title" closing #1 co-authored by "Alice <alice@company.example>"  # a trailer as written
//	alice opens PR #2 "Title" closing #1 changing login.js     # files the commit changes
//	copilot[bot] opens PR #2 "Title" closing #1 assigned to dave  # the PR's assignees
//	alice edits PR #2 body "Fixes #3"
//	alice marks PR #2 ready for review
//	alice pushes to PR #2                              # one new commit, authored by alice
//	bob pushes to PR #2 changing a.go co-authored by eve
//	carol approves PR #2                               # optionally with a "review body"
//	carol requests changes on PR #2 "Reason"
//	carol comments on PR #2 review "Text"              # a COMMENTED review
//	bob comments on #1: /verify Form renders correctly # the rest of the line is the body (\n allowed)
//	bob comments on PR #2: /verify                     # a comment on the PR's conversation
//	mallory comments on #1 6 times: /verify            # posted 6 times (2 to 100), one action
//	bob comments on #1 as c1: some text                # names the comment ...
//	bob edits comment c1: /verify                      # ... to edit it later
//	carol closes #1                                    # also: as not planned, as completed
//	carol reopens #1
//	carol closes PR #2
//	mallory labels #1 state:verified                   # several labels: labels #1 a b
//	mallory unlabels #1 state:review
//	mallory renames label state:in-progress to state:verified  # a repository label
//	mallory deletes label state:pending                # (off every issue that carried it)
//	carol merges PR #2
//	alice queues PR #2                          # the merge queue: its group, merge_group checks_requested
//	carol dequeues PR #2                         # merge_group destroyed; the groups behind it rebuilt
//	github merges the queue                     # the first group merged (destroyed, merged)
//	github redelivers the last issue_comment           # the last webhook of that event (optionally
//	                                                   # event.action) sent for a person's action,
//	                                                   # again, with the same delivery id
//	github renames account alice to alice2             # same id; later steps must say alice2
//	github drops webhooks                              # countersign hears nothing of the actions
//	github resumes webhooks                            # between these two
//	ci reports test success on PR #2                   # check runs by github-actions on the PR's
//	ci reports typecheck lint failure on PR #2         # head: success|failure|pending
//	mallory edits the card on #1 replacing "\"state\":\"review\"" with "\"state\":\"verified\""
//	                                                   # edits the bot's task card (its hidden record)
//	countersign loses its store                        # the bot restarts on an empty store (same keys)
//	alice posts status test lint success on PR #2      # commit statuses on the PR's head, created by
//	                                                   # alice: success|failure|error|pending
//	mallory moves #1 on the board to verified          # countersign's field of #1 on the configured
//	mallory removes #1 from the board                  # board (board.project, board.field); its item
//
// Milestones are goals: countersign opens a goal issue for each, which takes
// the next issue number. A milestone is named by its quoted title from the
// step that creates it on; a title used before that is an error.
//
//	carol creates milestone "Login page"
//	carol adds #2 to milestone "Login page"            # also moves it out of another milestone
//	carol removes #2 from its milestone
//	carol closes milestone "Login page"                # also: reopens milestone "Login page"
//	carol comments on goal "Login page": /reject-goal CSS conflicts
//	                                                   # on the goal issue; the rest of the line is
//	                                                   # the body (as c1: names it)
//
// And expectations, checked when they are reached:
//
//	expect #1 state verified                  # exactly one state:* label, this one
//	expect #1 labeled escalated               # has all these labels
//	expect #1 not labeled escalated forced    # has none of them
//	expect #1 open                            # or: expect #1 closed
//	expect #1 assigned to alice               # all of them are among the assignees
//	expect #1 on the board at pending         # on the configured board, at this option
//	expect PR #2 not on the board             # not on it
//	expect check on PR #2 success             # countersign/verification on the PR's current head:
//	                                          # success|failure|in_progress|queued|neutral|none
//	expect check on group of PR #2 success    # ... on the PR's merge-queue group (none: not queued)
//	expect reply on #1 containing "refused"   # a new comment by the bot, other than the task card,
//	                                          # since the previous action began (case-insensitive)
//	expect reply on PR #2                     # any such comment
//	expect no reply on #1                     # no such comment
//	expect no reply on #1 containing "text"   # none that contains the text
//	expect 3 replies on #1                    # exactly 3 such comments ("1 reply")
//	expect at most 3 replies on PR #2         # no more than 3
//	expect card on #1 containing "verified"   # the task card contains the text (case-insensitive)
//	expect no card on #1                      # the bot posted no task card there
//	expect repository label state:verified absent         # or: present [colored 1d76db]
//	expect goal "Login page" state active     # the goal issue is labeled goal and exactly this goal:*
//	                                          # label: open|active|pending-verify|verified
//	expect goal "Login page" containing "3 of 3"   # its body (the dashboard) contains the text
//	expect goal "Login page" closed           # or: open (the goal issue)
//	expect reply on goal "Login page" containing "@dave"   # as expect reply on #N
//	expect no reply on goal "Login page"
//	expect milestone "Login page" closed      # or: open (the milestone itself)
//
// Consecutive "expect reply" lines about the same issue must all be met by
// one comment: write them one after the other to require several pieces of
// text in the same reply; put another line between them to let different
// replies meet them.
//
// # The timeline
//
// Play writes each action as a numbered line, then what changed on GitHub
// by the time the bot settled: labels, assignees, open/closed, the bot's new
// comments (the task card as its state line, replies in full), card updates
// (with their newest history entry), and the countersign/verification check
// on PR heads; for goals, the goal issue ("goal #1") when the bot opens it,
// its labels, its dashboard's state line when it changes and the bot's
// replies on it, milestones closed or reopened other than by the action, and
// milestone changes of issues the action did not make; the repository labels
// a label rename or deletion did not leave; webhooks dropped; then each expectation
// with ✓ or ✗; at the end, every issue's and milestone's final state.
// `countersign demo` prints it.
package scenario

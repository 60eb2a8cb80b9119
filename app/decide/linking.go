package decide

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/countersign/countersign/app/deliveries"
	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/people"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
)

// Who can link work (DESIGN §2): a pull request links to the tasks it closes
// only if its author may build here: write permission, or an agent account
// whose pilot has it, or an assignee of the task. Anyone else's "Fixes #N"
// moves, blocks and voids nothing. And one pull request may close at most
// tasks.max_per_pr tasks: one that names more links none.
//
// The pull request's key decides which tasks it links (gateLinks). A task it
// was refused for is remembered ("refused/owner/repo#task/pr"), so that
// assigning the task to the pull request's author later links it at once
// (a regate delivery to the pull request's key); the task's own key decides
// again with its own record (rules.mayLink), and unlinks an outsider's pull
// request when its author is unassigned.

// linkGate is what gateLinks decided beyond cur's links: the reply the pull
// request gets, if any, and the refused-link records to write or delete.
type linkGate struct {
	reply   *rules.Notice
	records map[string][]byte
}

// gateLinks decides which of the issues cur's description closes it links
// (cur.Links on entry: all it names), before its event is fanned out to them:
// none when it names more than tasks.max_per_pr; for an outsider's pull
// request only the tasks its author (or their agent's pilot) is assigned to.
// The reply is given when the pull request comes to name too many tasks,
// or an outsider's link to a task comes to be refused; it counts against its
// author's share of replies (DESIGN §5), so that editing the description
// back and forth cannot make countersign reply again and again. recheck asks
// GitHub again whether the author may build here.
func (p *Decider) gateLinks(ctx context.Context, c Client, repo string, old, cur *rules.PullRequest, recheck bool, log *slog.Logger) (g linkGate, err error) {
	var oldRefused []int
	if old != nil {
		oldRefused = old.Refused
	}
	defer func() { g.records = refusedRecords(repo, cur.Number, oldRefused, cur.Refused) }()
	cur.Refused, cur.TooMany = nil, 0
	if len(cur.Links) == 0 {
		cur.Named = nil
		return g, nil
	}
	cfg, err := p.look.Config(ctx, c, repo, log)
	if err != nil {
		return g, err
	}
	if max := cfg.Tasks.MaxPerPR; len(cur.Links) > max {
		cur.TooMany, cur.Links, cur.Named = len(cur.Links), nil, nil
		if old != nil && old.TooMany > 0 {
			return g, nil
		}
		log.Warn("pull request names too many tasks: links none", "pr", cur.Number, "named", cur.TooMany, "max", max)
		g.reply = &rules.Notice{Kind: rules.NoticeRefused, Actor: cur.Author.Login, ActorID: cur.Author.ID,
			Refusals: []rules.Refusal{{
				Quote:  fmt.Sprintf("the description of #%d names %d issues to close", cur.Number, cur.TooMany),
				Reason: fmt.Sprintf("a pull request may close at most %d tasks (`tasks.max_per_pr`), so this one links none of them: split the work, or name fewer issues.", max),
			}}}
		return g, nil
	}
	same := old != nil && !recheck && old.Author.Is(cur.Author) && old.Head == cur.Head && slices.Equal(old.Named, cur.Links)
	if same {
		cur.Outsider = old.Outsider // decided for this author, head and links already
	} else if cur.Outsider, err = p.outsider(ctx, people.New(c, repo, cfg), cur); err != nil {
		return g, err
	}
	cur.Named = append([]int(nil), cur.Links...)
	if !cur.Outsider {
		return g, nil
	}
	var links, refused []int
	for _, n := range cur.Links {
		t, err := records.LoadTask(ctx, p.store, repo, n)
		if err != nil {
			return g, err
		}
		if t != nil && assignedTo(t, cfg, cur.Author) {
			links = append(links, n)
		} else {
			refused = append(refused, n)
		}
	}
	cur.Links, cur.Refused = links, refused
	var fresh []int
	for _, n := range refused {
		if !slices.Contains(oldRefused, n) {
			fresh = append(fresh, n)
		}
	}
	if len(fresh) == 0 {
		return g, nil
	}
	log.Info("an outsider's pull request links no task", "pr", cur.Number, "author", cur.Author.Login, "refused", fresh)
	g.reply = &rules.Notice{Kind: rules.NoticeRefused, Actor: cur.Author.Login, ActorID: cur.Author.ID,
		Refusals: []rules.Refusal{{
			Quote: fmt.Sprintf("#%d closes %s", cur.Number, issueList(fresh)),
			Reason: fmt.Sprintf("@%s has no write permission on this repository and is not assigned to %s, so this pull request does not count as work on it. "+
				"Someone with write permission can assign the task to @%s: the pull request then counts.",
				cur.Author.Login, issueList(fresh), cur.Author.Login),
		}}}
	return g, nil
}

// refusedRecords are the record writes that make the refused-link records of
// pull request pr say now (refused) instead of before.
func refusedRecords(repo string, pr int, before, now []int) map[string][]byte {
	out := map[string][]byte{}
	for _, n := range before {
		if !slices.Contains(now, n) {
			out[records.RefusedKey(repo, n, pr)] = nil
		}
	}
	for _, n := range now {
		if !slices.Contains(before, n) {
			out[records.RefusedKey(repo, n, pr)] = []byte("1")
		}
	}
	return out
}

// outsider reports whether the author of pull request pr may not build here:
// no write permission; not an agent account (agents:) whose pilot has it; and
// not an unconfigured bot whose pull request is assigned to someone who has
// it (the human who set it to work, DESIGN §1's default pilot).
func (p *Decider) outsider(ctx context.Context, dir *people.Directory, pr *rules.PullRequest) (bool, error) {
	author := pr.Author
	if author.Login == "" {
		return true, nil
	}
	a, err := dir.Access(ctx, author.Login)
	if err != nil || a.Writer() {
		return false, err
	}
	pilots := []string{}
	if pilot, ok := dir.Config().Pilot(author.Login); ok {
		pilots = append(pilots, pilot)
	} else if rules.IsBot(author.Login) {
		for _, as := range pr.Assignees {
			if !rules.IsBot(as.Login) {
				pilots = append(pilots, as.Login)
			}
		}
	}
	for _, pilot := range pilots {
		pa, err := dir.Access(ctx, pilot)
		if err != nil || pa.Writer() {
			return false, err
		}
	}
	return true, nil
}

// assignedTo reports whether author, or the pilot of author's agent account,
// is assigned to task t.
func assignedTo(t *rules.Task, cfg rules.Config, author rules.User) bool {
	if slices.ContainsFunc(t.Assignees, author.Is) {
		return true
	}
	pilot, ok := cfg.Pilot(author.Login)
	return ok && slices.ContainsFunc(t.Assignees, func(u rules.User) bool { return rules.SameLogin(u.Login, pilot) })
}

// regates are the deliveries that make the pull requests refused for task n
// decide again, now that its assignees changed.
func (p *Decider) regates(ctx context.Context, inst int64, d *store.Delivery, repo string, n int) ([]store.Delivery, error) {
	prs, err := records.ScanNumbers(ctx, p.store, records.RefusedPrefix(repo, n))
	if err != nil {
		return nil, fmt.Errorf("list refused links of #%d: %w", n, err)
	}
	var out []store.Delivery
	for _, pr := range prs {
		out = append(out, deliveries.Derived(fmt.Sprintf("%s/regate/%d", d.ID, pr), deliveries.Regate, rules.TaskKey(repo, pr),
			deliveries.RegatePayload{Installation: inst, Repo: repo, Number: pr}))
	}
	return out, nil
}

// decideRegate decides again, under the pull request's key, which tasks it
// links, and tells the tasks it now links.
func (p *Decider) decideRegate(ctx context.Context, rd deliveries.RegatePayload, d *store.Delivery, log *slog.Logger) (store.Commit, error) {
	old, err := records.LoadPR(ctx, p.store, rd.Repo, rd.Number)
	if err != nil || old == nil || !old.Open || old.TooMany > 0 {
		return store.Commit{}, err
	}
	c, err := p.clients(rd.Installation)
	if err != nil {
		return store.Commit{}, fault.Permanent(err)
	}
	var cur rules.PullRequest
	b, _ := json.Marshal(old) // a deep copy: plain data
	if err := json.Unmarshal(b, &cur); err != nil {
		return store.Commit{}, fmt.Errorf("copy pull request record: %w", err)
	}
	cur.Links = append(append([]int(nil), old.Links...), old.Refused...)
	slices.SortStableFunc(cur.Links, func(a, b int) int { return slices.Index(old.Named, a) - slices.Index(old.Named, b) })
	gate, err := p.gateLinks(ctx, c, rd.Repo, old, &cur, true, log)
	if err != nil {
		return store.Commit{}, err
	}
	gate.reply = nil // the pull request was answered when it was refused
	return p.fanout(ctx, rd.Installation, d, old, &cur, rules.Event{Kind: rules.PRLinked, Actor: cur.Author, At: deliveries.EventTime(d.ReceivedAt, d)}, gate)
}

func issueList(ns []int) string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = fmt.Sprintf("#%d", n)
	}
	return strings.Join(out, ", ")
}

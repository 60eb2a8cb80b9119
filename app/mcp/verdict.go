package mcp

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/app/mcp/ghread"
)

// Verdict is countersign's answer to an action.
type Verdict struct {
	// Accepted: countersign made the change the action asked for.
	Accepted bool `json:"accepted" jsonschema:"countersign made the change the action asked for"`
	// State is the state after the action, as countersign's label spells it.
	State string `json:"state" jsonschema:"the state after the action, as countersign's label spells it (in-progress, pending-verify, ...); unsettled while the label is not one countersign set"`
	// Reason says why not: countersign's reply, in its words, or what the
	// action still waits for.
	Reason string `json:"reason,omitempty" jsonschema:"why it was not accepted: countersign's reply in its own words, or what it still waits for"`
	// Pending: countersign has not answered within the wait.
	Pending bool `json:"pending,omitempty" jsonschema:"countersign had not answered yet when the wait ran out"`
}

// await is one action's wait for its verdict.
type await struct {
	repo string
	n    int
	// cmd is the comment that carried the command (nil for a review or an
	// assignment), line the command as written.
	cmd  *ghread.Comment
	line string
	// kind is which owned label carries the state; done says whether a
	// state is the one the action moves to.
	kind ghread.Kind
	done func(string) bool
	// before is the state, as countersign set it, before the action: a label
	// that already said the action's state says nothing of the action.
	before string
	// waitsFor says what a pending action waits for.
	waitsFor string
}

// wait reads GitHub until countersign's verdict shows, or the wait runs out:
// refused when countersign's reply quotes the command (its words are the
// reason); accepted when countersign's own label changed to the action's
// state after it. When the task already was in that state, only the reply
// can say anything, and without one the verdict stays pending.
func (s *server) wait(ctx context.Context, c *caller, w await) (Verdict, error) {
	if w.cmd == nil && w.done(w.before) {
		return Verdict{Accepted: false, Pending: true, State: w.before, Reason: fmt.Sprintf(
			"it already was %s before this action, so its state cannot show countersign's answer; call task_status or goal_status for its details", w.before)}, nil
	}
	wctx, cancel := context.WithTimeout(ctx, s.opts.Wait)
	defer cancel()
	tick := time.NewTicker(s.opts.Poll)
	defer tick.Stop()
	for wctx.Err() == nil {
		v, ok, err := s.look(wctx, c, w)
		if err != nil {
			if wctx.Err() != nil {
				break
			}
			return Verdict{}, err
		}
		if ok {
			return v, nil
		}
		select {
		case <-wctx.Done():
		case <-tick.C:
		}
	}
	if ctx.Err() != nil {
		return Verdict{}, ctx.Err()
	}
	// A last look: a reply may have come as the wait ran out.
	v, ok, err := s.look(ctx, c, w)
	if err != nil || ok {
		return v, err
	}
	is, err := c.gh.Issue(ctx, w.repo, w.n)
	if err != nil {
		return Verdict{}, err
	}
	st, why, err := ghread.Settled(ctx, c.gh, s.bot(), w.repo, is, w.kind)
	if err != nil {
		return Verdict{}, err
	}
	if why != "" {
		why = " The state is unsettled: " + why + "."
	}
	// The card may say countersign acted on the command without a reply (a
	// reply held because its person had their share).
	if w.cmd != nil && s.actedOn(ctx, c, w) {
		return Verdict{Accepted: false, State: st, Reason: fmt.Sprintf(
			"countersign acted on %q but the state is still %s and it posted no reply (it answers one person at most 3 times an hour on one issue); comment /status or call task_status for why.%s",
			w.line, st, why)}, nil
	}
	return Verdict{Accepted: false, Pending: true, State: st, Reason: fmt.Sprintf(
		"still pending after %s: %s. Call task_status or goal_status later to see the outcome.%s", s.opts.Wait, w.waitsFor, why)}, nil
}

// look reads GitHub once for w's verdict: ok when there is one.
func (s *server) look(ctx context.Context, c *caller, w await) (Verdict, bool, error) {
	is, err := c.gh.Issue(ctx, w.repo, w.n)
	if err != nil {
		return Verdict{}, false, err
	}
	if !w.done(w.before) && w.done(w.kind.Shown(is)) {
		st, _, err := ghread.Settled(ctx, c.gh, s.bot(), w.repo, is, w.kind)
		if err != nil {
			return Verdict{}, false, err
		}
		if w.done(st) {
			return Verdict{Accepted: true, State: st}, true, nil
		}
	}
	if w.cmd == nil {
		return Verdict{}, false, nil
	}
	comments, err := c.gh.CommentsSince(ctx, w.repo, w.n, w.cmd.CreatedAt)
	if err != nil {
		return Verdict{}, false, err
	}
	reason, ok := s.reply(comments, w.cmd, c.me.Login, w.line)
	if !ok {
		return Verdict{}, false, nil
	}
	st, why, err := ghread.Settled(ctx, c.gh, s.bot(), w.repo, is, w.kind)
	if err != nil {
		return Verdict{}, false, err
	}
	if why != "" {
		reason += " (The state is unsettled: " + why + ".)"
	}
	return Verdict{Accepted: false, State: st, Reason: reason}, true, nil
}

// reply finds countersign's answer to the command of comment cmd among
// comments (oldest first): a reply by countersign's bot, after the command,
// that quotes the command's line exactly: a refusal addressed to login, or a
// refused claim of completion. It returns the reason in countersign's words.
func (s *server) reply(comments []*ghread.Comment, cmd *ghread.Comment, login, line string) (string, bool) {
	quoted := noMention(line)
	for _, cm := range comments {
		if cm.ID <= cmd.ID || cm.CreatedAt.Before(cmd.CreatedAt) || !s.bot().Is(cm.Author, cm.Bot) {
			continue
		}
		body := stripMarker(cm.Body)
		if strings.HasPrefix(body, "**Not submitted:**") && quotesLine(body, quoted) {
			return strings.TrimSpace(body), true
		}
		for _, r := range refusals(body, login) {
			if r.quote == quoted {
				return r.reason, true
			}
		}
	}
	return "", false
}

// quotesLine reports whether body block-quotes line, whole or (countersign
// clips long lines, marking the cuts with "…") a clipped part of it.
func quotesLine(body, line string) bool {
	for _, l := range strings.Split(body, "\n") {
		q, ok := strings.CutPrefix(l, "> ")
		if !ok {
			continue
		}
		if q == line {
			return true
		}
		core := strings.TrimSuffix(strings.TrimPrefix(q, "…"), "…")
		if core != q && len(core) > 0 && strings.Contains(line, core) {
			return true
		}
	}
	return false
}

// actedOn reports whether countersign's card records that it acted on the
// command's comment, when the card is trustworthy (countersign's own, edited
// by nobody else).
func (s *server) actedOn(ctx context.Context, c *caller, w await) bool {
	rec, _, _, err := ghread.Card(ctx, c.gh, s.bot(), w.repo, w.n)
	return err == nil && rec != nil && slices.Contains(rec.Comments, w.cmd.ID)
}

type refusal struct{ quote, reason string }

// refusals parses countersign's refusal reply (templates/notice-refused):
// each refused command quoted, then "@login **Refused:** reason".
func refusals(body, login string) []refusal {
	var out []refusal
	marker := "@" + login + " **Refused:** "
	for _, block := range strings.Split(body, "\n\n") {
		if reason, ok := strings.CutPrefix(block, marker); ok && len(out) > 0 && out[len(out)-1].reason == "" {
			out[len(out)-1].reason = strings.TrimSpace(reason)
			continue
		}
		if strings.HasPrefix(block, "> ") {
			var lines []string
			for _, l := range strings.Split(block, "\n") {
				lines = append(lines, strings.TrimPrefix(l, "> "))
			}
			out = append(out, refusal{quote: strings.Join(lines, "\n")})
		}
	}
	var done []refusal
	for _, r := range out {
		if r.reason != "" {
			done = append(done, r)
		}
	}
	return done
}

// stripMarker drops countersign's hidden marker lines.
func stripMarker(body string) string {
	var keep []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "<!-- countersign:") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.TrimSpace(strings.Join(keep, "\n"))
}

// noMention is how countersign quotes text: "@" followed by a zero-width
// space, so a quote notifies no one.
func noMention(s string) string { return strings.ReplaceAll(s, "@", "@\u200b") }

// oneLine makes free text one line: a command's arguments end at the line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

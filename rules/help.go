package rules

import (
	"fmt"
	"slices"
)

// HelpEntry is one command in a /help reply: how to write it, and whether
// the person who asked may use it here now, or why not.
type HelpEntry struct {
	Usage string `json:"usage"`
	May   bool   `json:"may"`
	Why   string `json:"why,omitempty"` // why not, when !May
}

// commandUsage is how each command is written (docs/design.md, Commands).
var commandUsage = map[CommandName]string{
	CmdStart: "/start", CmdSubmit: "/submit [summary]", CmdApprove: "/approve",
	CmdVerify: "/verify [notes]", CmdReject: "/reject <reason>", CmdStatus: "/status", CmdHelp: "/help",
	CmdReopen: "/reopen <reason>", CmdContract: "/contract verifiable|advisory|skip",
	CmdSkipVerify: "/skip-verify <reason>", CmdForceComplete: "/force-complete OVERRIDE <reason>",
	CmdVerifyGoal: "/verify-goal [notes]", CmdRejectGoal: "/reject-goal <reason>",
}

// sampleArgs are the arguments a command is tried with for /help: enough
// for it to be judged on who asks and the task's state, not on its wording.
func sampleArgs(name CommandName, t *Task) string {
	switch name {
	case CmdReject, CmdReopen, CmdSkipVerify, CmdRejectGoal:
		return "reason"
	case CmdForceComplete:
		return "OVERRIDE reason"
	case CmdContract:
		if t != nil && t.Contract != nil && t.Contract.Type == Verifiable {
			return string(Advisory)
		}
		return string(Verifiable)
	}
	return ""
}

// nearMiss answers a near miss (DidYouMean set) as a refusal.
func nearMissWhy(c Command) string {
	return fmt.Sprintf("this is not a command; did you mean `/%s`? `/help` lists the commands you can use here.", c.DidYouMean)
}

// help replies to /help with every command, saying whether the actor may use
// it on this task now, and why not. Each command is tried on a copy of the
// task, so the answer is the one the command itself would give.
func (d *decider) help() {
	if d.hasNotice(NoticeHelp) {
		return
	}
	var entries []HelpEntry
	for _, name := range commandOrder {
		if name == CmdHelp || name == CmdStatus {
			entries = append(entries, HelpEntry{Usage: commandUsage[name], May: true})
			continue
		}
		args := sampleArgs(name, d.t)
		trial := &decider{ev: d.ev, f: d.f, old: d.t, t: d.t.Clone()}
		trial.command(Command{Name: name, Args: args, Line: "/" + string(name)})
		e := HelpEntry{Usage: commandUsage[name], May: true}
		for _, ef := range trial.effects {
			if n := ef.Notice; n != nil && n.Kind == NoticeRefused && len(n.Refusals) > 0 {
				e.May, e.Why = false, n.Refusals[0].Reason
			}
		}
		entries = append(entries, e)
	}
	d.notice(d.where(), Notice{Kind: NoticeHelp, Help: entries, State: d.t.State})
}

func (d *decider) hasNotice(kind NoticeKind) bool {
	for _, e := range d.effects {
		if e.Notice != nil && e.Notice.Kind == kind {
			return true
		}
	}
	return false
}

// help replies to /help on a goal issue, as decider.help does on a task.
func (d *goalDecider) help() {
	for _, e := range d.notices {
		if e.Notice.Kind == NoticeHelp {
			return
		}
	}
	var entries []HelpEntry
	for _, name := range commandOrder {
		e := HelpEntry{Usage: commandUsage[name], May: true}
		if name != CmdHelp && name != CmdStatus {
			trial := &goalDecider{ev: d.ev, f: d.f, old: d.g, g: d.g.Clone()}
			trial.g.Rejections = slices.Clone(d.g.Rejections)
			trial.command(Command{Name: name, Args: sampleArgs(name, nil), Line: "/" + string(name)})
			for _, ef := range trial.notices {
				if n := ef.Notice; n.Kind == NoticeRefused && len(n.Refusals) > 0 {
					e.May, e.Why = false, n.Refusals[0].Reason
				}
			}
		}
		entries = append(entries, e)
	}
	d.notice(Notice{Kind: NoticeHelp, Help: entries})
}

package rules

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Relaxations are the ways config next lowers the gate that config was
// holding, in words for the pull request that makes the change (its
// countersign/config check names them, so that a weakened gate is never a
// silent one): fewer roles kept apart, more people who may verify or lead,
// criteria checked by fewer (or any) checks, default file rules dropped,
// later escalation, fewer tasks tracked, less pinned sources.
func Relaxations(was, next Config) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	strength := map[Separation]int{SeparationMinimum: 0, SeparationAuto: 1, SeparationTriple: 2}
	if strength[next.Separation] < strength[was.Separation] {
		add("separation goes from %s to %s: fewer roles must be different people", was.Separation, next.Separation)
	}
	if len(was.Verifiers) > 0 && len(next.Verifiers) == 0 {
		add("verifiers: is emptied: anyone with write permission may verify")
	} else if extra := added(was.Verifiers, next.Verifiers); len(extra) > 0 {
		add("verifiers: gains %s", strings.Join(extra, ", "))
	}
	if len(was.Leads) > 0 && len(next.Leads) == 0 {
		add("leads: is emptied: everyone with admin or maintain permission is a lead")
	} else if extra := added(was.Leads, next.Leads); len(extra) > 0 {
		add("leads: gains %s (leads may override verification)", strings.Join(extra, ", "))
	}
	switch wasWhole, nextWhole := was.Contracts.WholeCI(), next.Contracts.WholeCI(); {
	case wasWhole && !nextWhole:
		add("contracts.checks is set: only the runs it names count, no longer every CI run on the head (an activity it does not list is left to the verifier)")
	case !wasWhole && nextWhole:
		add("contracts.checks is removed: the named runs are no longer required; any CI on the head counts (at least one run, all passed)")
	}
	for _, a := range slices.Sorted(maps.Keys(was.Contracts.Checks)) {
		if next.Contracts.WholeCI() {
			break // said above
		}
		before, after := was.Contracts.Checks[a], next.Contracts.Checks[a]
		switch {
		case len(before) > 0 && len(after) == 0:
			add("contracts.checks: %s no longer maps to a check: the verifier checks it by hand", a)
		case !slices.Contains(before, "*") && slices.ContainsFunc(after, func(n string) bool { return strings.Contains(n, "*") }):
			add("contracts.checks: %s now counts %s (a wildcard)", a, strings.Join(after, ", "))
		case len(added(before, after)) > 0:
			add("contracts.checks: %s now also counts %s", a, strings.Join(added(before, after), ", "))
		}
	}
	if was.Contracts.DefaultRules && !next.Contracts.DefaultRules {
		add("contracts.default_rules becomes false: the default file rules (unit tests, end-to-end tests, critics) no longer apply")
	}
	for _, name := range slices.Sorted(maps.Keys(was.Contracts.Apps)) {
		if next.Contracts.Apps[name] != was.Contracts.Apps[name] {
			add("contracts.apps: %s is no longer pinned to %s", name, was.Contracts.Apps[name])
		}
	}
	if len(was.Contracts.StatusCreators) > 0 && len(next.Contracts.StatusCreators) == 0 {
		add("contracts.status_creators is emptied: any non-builder's commit status counts")
	} else if extra := added(was.Contracts.StatusCreators, next.Contracts.StatusCreators); len(extra) > 0 {
		add("contracts.status_creators gains %s", strings.Join(extra, ", "))
	}
	for _, c := range slices.Sorted(maps.Keys(was.Contracts.Critics)) {
		if _, ok := next.Contracts.Critics[c]; !ok {
			add("contracts.critics: %s is removed", c)
		}
	}
	if next.Escalation.Rejections > was.Escalation.Rejections || next.Escalation.FailedAttempts > was.Escalation.FailedAttempts {
		add("escalation comes later (rejections %d → %d, failed attempts %d → %d)", was.Escalation.Rejections, next.Escalation.Rejections,
			was.Escalation.FailedAttempts, next.Escalation.FailedAttempts)
	}
	if was.Tasks.Track == "all" && next.Tasks.Track != "all" {
		add("tasks.track goes from all to %s: issues outside it are no tasks", next.Tasks.Track)
	}
	if extra := added(was.Tasks.IgnoreLabels, next.Tasks.IgnoreLabels); len(extra) > 0 {
		add("tasks.ignore_labels gains %s: issues with them are no tasks", strings.Join(extra, ", "))
	}
	for _, a := range slices.Sorted(maps.Keys(was.Agents)) {
		if q, ok := next.Agents[a]; ok && !SameLogin(was.Agents[a], q) {
			add("agents: the pilot of %s changes from %s to %s (%s may then approve and verify its work)", a, was.Agents[a], q, was.Agents[a])
		}
	}
	out = append(out, gateRelaxations(was.Gate, next.Gate)...)
	slices.Sort(out)
	return out
}

// added are the entries of next not in was (case-insensitive).
func added(was, next []string) []string {
	var out []string
	for _, n := range next {
		if !slices.ContainsFunc(was, func(w string) bool { return strings.EqualFold(w, n) }) {
			out = append(out, n)
		}
	}
	return out
}

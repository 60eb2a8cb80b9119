package rules

import (
	"fmt"
	"slices"
	"strings"
)

// A check run belongs to a commit, not to a pull request: every pull request
// whose head is the commit shows it. So countersign's check on a commit
// answers for every open pull request whose head it is (DESIGN §2).

// HeadAnswer is one open pull request whose head is a commit, with the check
// it would get alone: CheckFor when it closes tasks (Tracked), UntrackedCheck
// otherwise.
type HeadAnswer struct {
	Number  int   `json:"number"`
	Tracked bool  `json:"tracked"` // it links at least one task
	Check   Check `json:"check"`
}

// HeadCheck is the check on a commit that is the head of the pull requests
// answers, and the number of the pull request it is written for (0 when
// answers is empty).
//
// A tracked pull request's answer is never overridden by anyone else's: when
// any of them links a task, only those that do count, and the check passes
// only if each of them passes (it fails when one fails, and waits while one
// waits). A pull request that closes no task (an outsider's whose links were
// refused, one that names no task) blocks nothing and voids nothing: when
// none is tracked, the commit passes if one of them passes as gate.untracked
// and gate.exempt say, and otherwise gets the first one's answer.
func HeadCheck(answers []HeadAnswer) (Check, int) {
	if len(answers) == 0 {
		return Check{}, 0
	}
	sorted := slices.Clone(answers)
	slices.SortFunc(sorted, func(a, b HeadAnswer) int { return a.Number - b.Number })
	var tracked []HeadAnswer
	for _, a := range sorted {
		if a.Tracked {
			tracked = append(tracked, a)
		}
	}
	switch len(tracked) {
	case 0:
		for _, a := range sorted {
			if a.Check.Status == "completed" && a.Check.Conclusion == "success" {
				return a.Check, a.Number
			}
		}
		return sorted[0].Check, sorted[0].Number
	case 1:
		return tracked[0].Check, tracked[0].Number
	}
	out := Check{Status: "completed", Conclusion: "success", Tasks: []CheckTask{}}
	var failing, waiting []string
	numbers := make([]string, len(tracked))
	for i, a := range tracked {
		numbers[i] = fmt.Sprintf("#%d", a.Number)
		for _, t := range a.Check.Tasks {
			if !slices.ContainsFunc(out.Tasks, func(o CheckTask) bool { return o.Number == t.Number }) {
				out.Tasks = append(out.Tasks, t)
			}
		}
		switch {
		case a.Check.Status == "completed" && a.Check.Conclusion == "success":
		case a.Check.Status == "completed":
			failing = append(failing, numbers[i])
		default:
			waiting = append(waiting, numbers[i])
		}
	}
	note := fmt.Sprintf("This commit is the head of pull requests %s, each closing tasks: it passes only when each of them does.", strings.Join(numbers, ", "))
	switch {
	case len(failing) > 0:
		out.Conclusion = "failure"
		note += fmt.Sprintf(" %s does not pass.", strings.Join(failing, ", "))
	case len(waiting) > 0:
		out.Status, out.Conclusion = "in_progress", ""
		note += fmt.Sprintf(" %s is still waiting.", strings.Join(waiting, ", "))
	}
	out.Note = note
	return out, tracked[0].Number
}

package templates

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/countersign/countersign/rules"
)

// The goal drawn (docs/design.md, Goals): a Mermaid diagram of the goal's
// tasks, each coloured by its state, with the blocking links between them,
// and a progress bar of the verified tasks. GitHub renders a ```mermaid
// block in an issue body; Mermaid refuses a diagram past its own bounds
// (maxTextSize 50,000 characters, maxEdges 500), and a dashboard must stay
// under GitHub's 65,536 characters: past MaxPictureTasks tasks (or
// MaxPictureText characters of diagram) the dashboard shows the counts only,
// and says so.
const (
	MaxPictureTasks = 50
	MaxPictureEdges = 400
	MaxPictureText  = 20000
	progressCells   = 20
	pictureTitle    = 40
)

// stateClass is the Mermaid class of a state, with its colours: grey while
// nobody works on it, blue while work goes on, amber awaiting verification,
// green verified.
var stateClasses = []struct{ class, style string }{
	{"pending", "fill:#eaeef2,stroke:#8c959f,color:#1f2328"},
	{"assigned", "fill:#ddf4ff,stroke:#54aeff,color:#1f2328"},
	{"inprogress", "fill:#b6e3ff,stroke:#0969da,color:#1f2328"},
	{"review", "fill:#fff8c5,stroke:#d4a72c,color:#1f2328"},
	{"completed", "fill:#ffd8b5,stroke:#e16f24,color:#1f2328"},
	{"verified", "fill:#aceebb,stroke:#1a7f37,color:#1f2328"},
	{"dropped", "fill:#ffffff,stroke:#8c959f,color:#656d76,stroke-dasharray:4 3"},
	{"outside", "fill:#ffffff,stroke:#8c959f,color:#656d76"},
}

func classOf(t rules.GoalTask) string {
	if t.Dropped() {
		return "dropped"
	}
	return strings.ReplaceAll(string(t.State), "-", "")
}

// Progress is a bar of verified of counted tasks: "`███░░…` 3 of 20
// verified (15%)".
func Progress(verified, counted int) string {
	if counted <= 0 {
		return "no task yet"
	}
	full := verified * progressCells / counted
	pct := verified * 100 / counted
	return fmt.Sprintf("`%s%s` **%d of %d** tasks verified (%d%%)", strings.Repeat("█", full), strings.Repeat("░", progressCells-full), verified, counted, pct)
}

// Picture is the Mermaid diagram of goal g's tasks (repo is the goal's
// repository, for the names of blockers elsewhere), or "" and why it is left
// out.
func Picture(g *rules.Goal) (string, string) {
	if len(g.Tasks) == 0 {
		return "", ""
	}
	if len(g.Tasks) > MaxPictureTasks {
		return "", fmt.Sprintf("The picture is left out: the goal has %d tasks, more than the %d a diagram shows legibly; the counts above say where they stand.", len(g.Tasks), MaxPictureTasks)
	}
	var b strings.Builder
	b.WriteString("```mermaid\nflowchart LR\n")
	in := map[string]bool{}
	for _, t := range g.Tasks {
		in["#"+strconv.Itoa(t.Number)] = true
	}
	for _, t := range g.Tasks {
		label := fmt.Sprintf("#%d %s", t.Number, pictureText(t.Title))
		if t.Cycle {
			label += " ⟳"
		}
		fmt.Fprintf(&b, "  t%d[\"%s\"]:::%s\n", t.Number, label, classOf(t))
	}
	var outside []string
	edges := 0
	for _, t := range g.Tasks {
		for _, ref := range t.Blockers {
			node := "t" + strings.TrimPrefix(ref, "#")
			if !in[ref] {
				i := slices.Index(outside, ref)
				if i < 0 {
					outside = append(outside, ref)
					i = len(outside) - 1
					fmt.Fprintf(&b, "  x%d[\"%s\"]:::outside\n", i, pictureText(ref))
				}
				node = "x" + strconv.Itoa(i)
			}
			arrow := "-.->"
			if slices.Contains(t.Waits, ref) {
				arrow = "-->"
			}
			fmt.Fprintf(&b, "  %s %s t%d\n", node, arrow, t.Number)
			edges++
		}
	}
	if edges > MaxPictureEdges || len(g.Tasks)+len(outside) > MaxPictureTasks+MaxPictureTasks/2 {
		return "", fmt.Sprintf("The picture is left out: %d blocking links among %d issues are more than a diagram shows legibly; the counts above say where the tasks stand.", edges, len(g.Tasks)+len(outside))
	}
	for _, c := range stateClasses {
		fmt.Fprintf(&b, "  classDef %s %s\n", c.class, c.style)
	}
	b.WriteString("```")
	if b.Len() > MaxPictureText {
		return "", fmt.Sprintf("The picture is left out: it would take %d characters, more than the %d kept for it; the counts above say where the tasks stand.", b.Len(), MaxPictureText)
	}
	return b.String(), ""
}

// pictureText is people's text as a Mermaid label: one line, at most
// pictureTitle characters, nothing that ends the label or the code block
// (quotes, backticks, brackets, angle brackets) and no HTML.
func pictureText(s string) string {
	s = noMention(clipText(strings.Join(strings.Fields(s), " "), pictureTitle))
	return strings.Map(func(r rune) rune {
		switch r {
		case '"', '`', '<', '>', '[', ']', '{', '}', '(', ')', '|', '\\', ';', '#':
			if r == '#' {
				return r
			}
			return ' '
		}
		return r
	}, s)
}

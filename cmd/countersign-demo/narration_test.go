package main

import (
	"regexp"
	"strings"
	"testing"
)

// The demo's narration speaks to someone who has read nothing else: it refers
// to no numbering the demo never shows ("(step 4)"), and a critic that a
// task's contract gains is explained (named, with why) in the narration before
// the card first shows it.
func TestDemoNarrationExplains(t *testing.T) {
	out, errOut, code := runDemo(t)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	steps := regexp.MustCompile(`^\s*\d+\. `) // a numbered step of the timeline
	detail := regexp.MustCompile(`^\s{3,}\S`) // what a step did, indented below it
	stepRef := regexp.MustCompile(`\(step \d+\)`)
	critic := regexp.MustCompile(`critic:([a-z0-9-]+)`)
	var narration strings.Builder
	explained := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		isNarration := strings.TrimSpace(line) != "" && !steps.MatchString(line) && !detail.MatchString(line)
		if isNarration {
			if m := stepRef.FindString(line); m != "" {
				t.Errorf("the narration refers to a numbering the demo never shows, %q: %q", m, line)
			}
			narration.WriteString(line + "\n")
			continue
		}
		for _, m := range critic.FindAllStringSubmatch(line, -1) {
			name := m[1]
			if explained[name] {
				continue
			}
			if !strings.Contains(narration.String(), name) {
				t.Errorf("%q appears with no word of why before it: %q", m[0], strings.TrimSpace(line))
			}
			explained[name] = true
		}
	}
	if len(explained) == 0 {
		t.Fatal("the demo shows no critic: nothing was checked")
	}
}

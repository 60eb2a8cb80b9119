package rules

import (
	"slices"
	"strings"
	"testing"
)

func TestGateConfig(t *testing.T) {
	c, err := ParseConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Gate.Untracked != UntrackedRequire || len(c.Gate.Exempt) != 0 {
		t.Fatalf("default gate = %+v, want require with no one exempt", c.Gate)
	}
	c, err = ParseConfig([]byte("gate:\n  untracked: allow\n  exempt: [\"dependabot[bot]\", \"@renovate[bot]\", \"Dependabot[bot]\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Gate.Untracked != UntrackedAllow || !slices.Equal(c.Gate.Exempt, []string{"dependabot[bot]", "renovate[bot]"}) {
		t.Fatalf("gate = %+v, want allow, exempt [dependabot[bot] renovate[bot]]", c.Gate)
	}
	if !c.Gate.Exempted("DEPENDABOT[bot]") || c.Gate.Exempted("dependabot") {
		t.Fatal("Exempted: logins match case-insensitively and exactly")
	}
	c, err = ParseConfig([]byte("gate:\n  exempt: [bob]\n"))
	if err != nil || c.Gate.Untracked != UntrackedRequire {
		t.Fatalf("gate.exempt alone keeps untracked's default: %+v %v", c.Gate, err)
	}
	for _, tc := range []struct{ file, want string }{
		{"gate:\n  untracked: maybe\n", "countersign.yml:2:14: gate.untracked must be require or allow"},
		{"gate:\n  exempt: [\"not a login\"]\n", "countersign.yml:2:12: gate.exempt: \"not a login\" is not a GitHub login"},
		{"gate:\n  untracked: allow\n  exmept: [bob]\n", "countersign.yml:3:3: gate.exmept: unknown key \"exmept\"; did you mean \"exempt\"?"},
		{"gate:\n  exempt: dependabot[bot]\n", "gate.exempt: expected"},
	} {
		_, err := ParseConfig([]byte(tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseConfig(%q) = %v, want an error with %q", tc.file, err, tc.want)
		}
	}
}

// Every mistake under gate: is reported at once, each with its key path.
func TestGateConfigMistakes(t *testing.T) {
	_, err := ParseConfig([]byte("gate:\n  untracked: requires\n  exempt: [\"ok[bot]\", \"not a login\", \"-dash\"]\n"))
	probs := Problems(err)
	var paths []string
	for _, p := range probs {
		paths = append(paths, p.Path)
	}
	want := []string{"gate.untracked", "gate.exempt[2]", "gate.exempt[3]"} // entries count from 1
	if !slices.Equal(paths, want) {
		t.Fatalf("problems at %q (%v), want %q", paths, err, want)
	}
	if !strings.Contains(probs[0].Error(), `did you mean "require"?`) {
		t.Errorf("%v: want the near miss suggested", probs[0])
	}
}

func TestGateRelaxations(t *testing.T) {
	was := DefaultConfig()
	was.Gate.Exempt = []string{"dependabot[bot]"}
	for _, tc := range []struct {
		name string
		edit func(*GateConfig)
		want string
	}{
		{"unchanged", func(*GateConfig) {}, ""},
		{"an exempt login removed", func(g *GateConfig) { g.Exempt = nil }, ""},
		{"untracked allowed", func(g *GateConfig) { g.Untracked = UntrackedAllow }, "gate.untracked goes from require to allow"},
		{"an exempt login added", func(g *GateConfig) { g.Exempt = append(g.Exempt, "renovate[bot]") }, "gate.exempt gains renovate[bot]"},
	} {
		next := was
		next.Gate.Exempt = slices.Clone(was.Gate.Exempt)
		tc.edit(&next.Gate)
		got := strings.Join(Relaxations(was, next), "\n")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: Relaxations = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestUntrackedCheck(t *testing.T) {
	alice, bot := User{ID: 1, Login: "alice"}, User{ID: 2, Login: "dependabot[bot]"}
	exempt := GateConfig{Untracked: UntrackedRequire, Exempt: []string{"dependabot[bot]"}}
	allow := GateConfig{Untracked: UntrackedAllow}
	for _, tc := range []struct {
		name             string
		pr               PullRequest
		gate             GateConfig
		conclusion, mode string
		note             string
	}{
		{"require: does not pass", PullRequest{PRFacts: PRFacts{Author: alice}}, exempt, "failure", UntrackedFails, ""},
		{"allow: passes", PullRequest{PRFacts: PRFacts{Author: alice}}, allow, "success", UntrackedPasses, ""},
		{"an exempt author passes under require", PullRequest{PRFacts: PRFacts{Author: bot}}, exempt, "success", UntrackedExempts, ""},
		{"too many named: never passes", PullRequest{PRFacts: PRFacts{Author: bot}, TooMany: 11}, exempt, "failure", UntrackedFails, "names 11 issues"},
		{"an outsider's refused links: never passes", PullRequest{PRFacts: PRFacts{Author: alice}, Refused: []int{3}, Named: []int{3}}, allow, "failure", UntrackedFails, "may not build here"},
	} {
		c := UntrackedCheck(&tc.pr, tc.gate, nil)
		if c.Status != "completed" || c.Conclusion != tc.conclusion || c.Untracked != tc.mode || !strings.Contains(c.Note, tc.note) {
			t.Errorf("%s: check = %+v, want completed %s (%s) noting %q", tc.name, c, tc.conclusion, tc.mode, tc.note)
		}
	}
}

func TestGateNoted(t *testing.T) {
	task := fxTask(Verified, true)
	ev := Event{Kind: GateNoted, Actor: User{Login: "countersign"}, At: fxAt(90), Issue: IssueFacts{Repo: fxRepo, Number: fxIssue},
		Text: "merge queue: the group of #12 fails"}
	d := DecideTask(task, ev, fxFacts("lead"))
	if d.Task == nil || d.Task.State != Verified {
		t.Fatalf("decision %+v: the task must keep its state and gain a note", d)
	}
	last := d.Task.History[len(d.Task.History)-1]
	if last.Why != ev.Text || last.From != Verified || last.To != Verified {
		t.Fatalf("last history entry %+v, want the note", last)
	}
	if len(d.Effects) != 1 || d.Effects[0].Kind != EffectSyncCard || len(d.Refresh) != 0 {
		t.Fatalf("effects %+v refresh %v: want the card written and nothing else", d.Effects, d.Refresh)
	}
	if d := DecideTask(nil, ev, fxFacts("lead")); d.Task != nil || len(d.Effects) != 0 {
		t.Fatalf("a note on an untracked issue starts nothing: %+v", d)
	}
}

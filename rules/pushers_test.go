package rules

import (
	"strings"
	"testing"
)

// An exempt author's pull request is exempt only while everyone who built
// its head is exempt too (DESIGN §2): its pushers, its commits' authors,
// committers and co-authors; who built it must have been read for its head,
// every push to its branch read, and every commit identity linked to an
// account. Otherwise it is answered as anyone's pull request that closes no
// task (gate.untracked), and the check says who is not exempt.
func TestUntrackedCheckExemptOnlyWhileBuiltByExempt(t *testing.T) {
	bot, eve := User{ID: 2, Login: "dependabot[bot]"}, User{ID: 5, Login: "eve"}
	renovate := User{ID: 3, Login: "renovate[bot]"}
	require := GateConfig{Untracked: UntrackedRequire, Exempt: []string{"dependabot[bot]", "renovate[bot]"}}
	allow := GateConfig{Untracked: UntrackedAllow, Exempt: []string{"dependabot[bot]", "renovate[bot]"}}
	built := func(mod func(*PullRequest)) PullRequest {
		pr := PullRequest{Repo: "acme/app", CommittersHead: "h1", PRFacts: PRFacts{Number: 7, Author: bot, Head: "h1",
			Pushers: []User{bot}, Committers: []Member{MemberOf(bot, "commit author on #7")}}}
		if mod != nil {
			mod(&pr)
		}
		return pr
	}
	for _, tc := range []struct {
		name             string
		pr               PullRequest
		gate             GateConfig
		conclusion, mode string
		note             []string
	}{
		{"built by its exempt author alone: exempt", built(nil), require, "success", UntrackedExempts, nil},
		{"another exempt bot pushed and committed: exempt", built(func(p *PullRequest) {
			p.Pushers = append(p.Pushers, renovate)
			p.Committers = append(p.Committers, MemberOf(renovate, "committer on #7"))
		}), require, "success", UntrackedExempts, nil},
		{"eve pushed to it: not exempt", built(func(p *PullRequest) { p.Pushers = append(p.Pushers, eve) }), require,
			"failure", UntrackedFails, []string{"@eve pushed to it; eve is not in `gate.exempt`", "@dependabot[bot] is in `gate.exempt`"}},
		{"eve wrote a commit: not exempt", built(func(p *PullRequest) { p.Committers = append(p.Committers, MemberOf(eve, "commit author on #7")) }), require,
			"failure", UntrackedFails, []string{"@eve is a commit author on #7; eve is not in `gate.exempt`"}},
		{"eve is a co-author: not exempt", built(func(p *PullRequest) { p.Committers = append(p.Committers, MemberOf(eve, "co-author on #7")) }), require,
			"failure", UntrackedFails, []string{"@eve is a co-author on #7"}},
		{"a commit identity linked to no account: not exempt", built(func(p *PullRequest) { p.Unresolved = []string{"Eve <eve@laptop> (commit author on #7)"} }), require,
			"failure", UntrackedFails, []string{"links to no account", "Eve <eve@laptop>"}},
		{"who built the head not read: not exempt", built(func(p *PullRequest) { p.Head = "h2" }), require,
			"failure", UntrackedFails, []string{"was not read"}},
		{"pushes to its branch left unread: not exempt", built(func(p *PullRequest) { p.PushersUnread = "branch x has more than 300 pushes" }), require,
			"failure", UntrackedFails, []string{"not everyone who pushed to it is known"}},
		{"someone who took the exempt login: not exempt", built(func(p *PullRequest) { p.Pushers = append(p.Pushers, User{ID: 99, Login: "renovate[bot]"}) }),
			require, "failure", UntrackedFails, []string{"@renovate[bot] pushed to it"}},
		{"eve pushed, under allow: passes as any pull request, saying why it is not exempt", built(func(p *PullRequest) { p.Pushers = append(p.Pushers, eve) }), allow,
			"success", UntrackedPasses, []string{"@eve pushed to it"}},
		{"a person's pull request pushed by the exempt bot: not exempt", PullRequest{PRFacts: PRFacts{Author: eve, Pushers: []User{bot}}}, require,
			"failure", UntrackedFails, nil},
	} {
		c := UntrackedCheck(&tc.pr, tc.gate, map[string]int64{"dependabot[bot]": 2, "renovate[bot]": 3})
		if c.Status != "completed" || c.Conclusion != tc.conclusion || c.Untracked != tc.mode {
			t.Errorf("%s: check = %+v, want completed %s (%s)", tc.name, c, tc.conclusion, tc.mode)
		}
		for _, n := range tc.note {
			if !strings.Contains(c.Note, n) {
				t.Errorf("%s: note %q does not say %q", tc.name, c.Note, n)
			}
		}
		if tc.note == nil && c.Note != "" {
			t.Errorf("%s: note %q, want none", tc.name, c.Note)
		}
	}
}

// A pull request whose head branch has more pushes than countersign read
// (PushersUnread): who pushed the older ones is unknown, so only a lead may
// verify the attempt; everyone else's /verify is refused saying why.
func TestDecideTaskPushersUnread(t *testing.T) {
	unread := func() *Task {
		t := fxTask(Completed, true)
		t.PRs[0].PushersUnread = "branch login has more than 300 pushes and branch changes; the older ones were not read"
		return t
	}
	runEventCases(t, []eventCase{
		{name: "completed/bob's /verify refused: only a lead may verify", task: unread(), ev: fxComment("bob", "/verify"),
			want: want{state: Completed, notices: []NoticeKind{NoticeRefused}, check: refusedFor("not everyone who pushed to #12 is known", "only a lead may /verify")}},
		{name: "completed/a lead's /verify is accepted", task: unread(), ev: fxComment("lead", "/verify"),
			want: want{state: Verified, steps: []step{{Verified, "/verify"}}, labels: lbl(Verified)}},
		{name: "review/a push whose pushers are all read lifts it", task: func() *Task {
			t := unread()
			t.State = Review
			return t
		}(), ev: pushed(PRPushed, "h2", "alice"),
			want: want{state: Review, check: func(t *testing.T, d Decision) {
				if d.Task.PRs[0].PushersUnread != "" {
					t.Errorf("still unread: %q", d.Task.PRs[0].PushersUnread)
				}
			}}},
	})
}

package card

import (
	"testing"
	"time"

	"github.com/countersign/countersign/rules"
)

func TestFollowsHistory(t *testing.T) {
	base := time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)
	const (
		P, A, I, R, C, V = rules.Pending, rules.Assigned, rules.InProgress, rules.Review, rules.Completed, rules.Verified
	)
	hist := func(states ...rules.State) *rules.Task {
		t := &rules.Task{}
		var from rules.State
		for _, s := range states {
			t.History = append(t.History, rules.Transition{From: from, To: s})
			from = s
		}
		return t
	}
	rebuilt := hist(I, R, C)
	rebuilt.History[0].Why = "rebuilt after the store was lost: x"
	tests := []struct {
		name   string
		labels []rules.State
		task   *rules.Task
		want   bool
	}{
		{"the record's own history", []rules.State{P, A, R, C}, hist(P, A, I, R, C), true},
		{"a decision that walked several states labels only the last", []rules.State{P, R}, hist(P, A, I, R), true},
		{"a revert re-applies the same state", []rules.State{P, A, I}, hist(P, A, I, I), true},
		{"a replay of an earlier completed attempt", []rules.State{P, A, R, C, I, R, C}, hist(P, A, I, R, C), false},
		{"a replay after a regression", []rules.State{P, R, C, V, I, R, C, V}, hist(P, A, I, R, C, V), false},
		{"a rebuilt record: labels before the rebuild are not its history", []rules.State{P, R, C, I, R, C}, rebuilt, true},
		{"no labels", nil, hist(P), true},
	}
	at := func(states ...rules.State) []Labeled[rules.State] { // applied a minute apart
		out := make([]Labeled[rules.State], len(states))
		for i, s := range states {
			out[i] = Labeled[rules.State]{Value: s, At: base.Add(time.Duration(i) * time.Minute)}
		}
		return out
	}
	for _, tc := range tests {
		if got := followsHistory(at(tc.labels...), tc.task); got != tc.want {
			t.Errorf("%s: followsHistory = %v, want %v", tc.name, got, tc.want)
		}
	}

	// A bounded history: entries left out (Omitted, the last of them at
	// omittedAt, entering omitted), then the entries kept. It answers for the
	// labels applied since.
	bounded := func(omittedAt int, omitted rules.State, tail ...rules.State) *rules.Task {
		t := &rules.Task{History: []rules.Transition{{To: P, At: base}}}
		t.History = append(t.History, rules.Transition{From: omitted, To: omitted, Omitted: 40, At: base.Add(time.Duration(omittedAt) * time.Minute)})
		from := omitted
		for i, s := range tail {
			t.History = append(t.History, rules.Transition{From: from, To: s, At: base.Add(time.Duration(omittedAt+1+i) * time.Minute)})
			from = s
		}
		return t
	}
	labels := at(P, A, I, R, C, I, R, C, V) // minutes 0 to 8
	for _, tc := range []struct {
		name string
		task *rules.Task
		want bool
	}{
		{"the labels since the entries left out follow the entries kept", bounded(5, I, R, C, V), true},
		{"labels older than the entries left out are not its to prove", bounded(7, C, V), true},
		{"a replay of an older bounded record misses the labels applied since", bounded(2, I, R, C, V), false},
	} {
		if got := followsHistory(labels, tc.task); got != tc.want {
			t.Errorf("%s: followsHistory = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestConservativeTaskNeverPastInProgress(t *testing.T) {
	alice, bob, carol, dave := rules.User{ID: 1, Login: "alice"}, rules.User{ID: 2, Login: "bob"}, rules.User{ID: 3, Login: "carol"}, rules.User{ID: 4, Login: "dave"}
	is := rules.IssueFacts{Repo: "acme/w", Number: 3, Title: "t", Author: carol, Assignees: []rules.User{alice}, Closed: true}
	signed := &rules.Task{Repo: "acme/w", Number: 3, State: rules.Verified, Verifier: bob, Attempt: 2,
		Builders:  []rules.Member{rules.MemberOf(dave, "author of #4")},
		Approvals: []rules.Approval{{By: carol}}, Approvers: []rules.User{carol}}
	for _, proven := range rules.States {
		got := conservativeTask(is, proven, signed, "why", signed.VerifiedAt)
		if rules.InProgress.Before(got.State) || (proven.Before(rules.InProgress) && got.State != proven) {
			t.Errorf("labeled %s: rebuilt as %s", proven, got.State)
		}
		if !got.Verifier.IsZero() || len(got.Approvals) != 0 || len(got.Approvers) != 0 || got.Closed {
			t.Errorf("labeled %s: kept unproven roles: %+v", proven, got)
		}
		if !got.IsBuilder(alice) || !got.IsBuilder(dave) || got.Attempt != 2 {
			t.Errorf("labeled %s: lost builders or attempts: %+v", proven, got.Builders)
		}
	}
}

package rules

import (
	"reflect"
	"testing"
	"time"
)

func TestDecideTask(t *testing.T) {
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	opened := Event{Kind: IssueOpened, Actor: "alice", At: at,
		Issue: IssueFacts{Repo: "acme/app", Number: 7, Title: "Add login form"}}
	existing := &Task{Repo: "acme/app", Number: 7, State: Assigned, Attempt: 1}

	tests := []struct {
		name        string
		task        *Task
		ev          Event
		wantState   State // "" when no new record is expected
		wantEffects []Effect
	}{
		{
			name:      "new issue becomes a pending task with a label and a card",
			ev:        opened,
			wantState: Pending,
			wantEffects: []Effect{
				{Kind: EffectSetState, Repo: "acme/app", Number: 7, State: Pending},
				{Kind: EffectSyncCard, Repo: "acme/app", Number: 7},
			},
		},
		{
			name: "opened again for a tracked task changes nothing",
			task: existing,
			ev:   opened,
		},
		{
			name: "an unknown event changes nothing",
			ev:   Event{Kind: "something.else", Actor: "bob", At: at},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := DecideTask(tc.task, tc.ev)
			if tc.wantState == "" {
				if d.Task != nil {
					t.Fatalf("want no new record, got %+v", d.Task)
				}
			} else {
				if d.Task == nil || d.Task.State != tc.wantState {
					t.Fatalf("want state %q, got %+v", tc.wantState, d.Task)
				}
			}
			if !reflect.DeepEqual(d.Effects, tc.wantEffects) {
				t.Fatalf("effects:\n got %+v\nwant %+v", d.Effects, tc.wantEffects)
			}
		})
	}
}

func TestNewTaskRecordsWhoAndWhen(t *testing.T) {
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	d := DecideTask(nil, Event{Kind: IssueOpened, Actor: "alice", At: at,
		Issue: IssueFacts{Repo: "acme/app", Number: 7, Title: "Add login form"}})
	want := &Task{Repo: "acme/app", Number: 7, Title: "Add login form", State: Pending, Opener: "alice", Attempt: 1,
		History: []Transition{{To: Pending, Actor: "alice", At: at, Why: "issue opened"}}}
	if !reflect.DeepEqual(d.Task, want) {
		t.Fatalf("got %+v\nwant %+v", d.Task, want)
	}
}

func TestStateLabels(t *testing.T) {
	for _, s := range States {
		got, ok := StateFromLabel(s.Label())
		if !ok || got != s {
			t.Errorf("StateFromLabel(%q) = %q, %v", s.Label(), got, ok)
		}
	}
	for _, l := range []string{"state:", "state:done", "pending", "State:pending", "goal:open", ""} {
		if s, ok := StateFromLabel(l); ok {
			t.Errorf("StateFromLabel(%q) = %q, want not a state label", l, s)
		}
	}
}

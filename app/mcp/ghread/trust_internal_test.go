package ghread

import (
	"strings"
	"testing"
	"time"
)

// A state label is believed only when countersign's bot put it on last.
func TestJudgeLabels(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	bot := func(on bool, l string) LabelEvent {
		return LabelEvent{Labeled: on, Label: l, Actor: "countersign[bot]", Bot: true, At: at}
	}
	carol := func(on bool, l string) LabelEvent { return LabelEvent{Labeled: on, Label: l, Actor: "carol", At: at} }
	for _, tc := range []struct {
		name   string
		labels []string
		evs    []LabelEvent
		want   string
		why    string
	}{
		{"the bot's label", []string{"state:review"}, []LabelEvent{bot(true, "state:review")}, "review", ""},
		{"a person's label", []string{"state:verified"}, []LabelEvent{bot(true, "state:verified"), bot(false, "state:verified"), carol(true, "state:verified")}, Unsettled, "put on by @carol"},
		{"a person's account named like the bot", []string{"state:verified"}, []LabelEvent{{Labeled: true, Label: "state:verified", Actor: "countersign[bot]"}}, Unsettled, "not by countersign"},
		{"no record (a renamed label)", []string{"state:verified"}, []LabelEvent{bot(true, "state:review")}, Unsettled, "no record"},
		{"taken off since", []string{"state:review"}, []LabelEvent{bot(true, "state:review"), bot(false, "state:review")}, Unsettled, "changing"},
		{"two of the bot's", []string{"state:review", "state:completed"}, []LabelEvent{bot(true, "state:review"), bot(true, "state:completed")}, Unsettled, "changing"},
	} {
		st, why, err := judgeLabels(Bot("countersign[bot]"), tc.labels, tc.evs, TaskKind)
		if err != nil || st != tc.want || !strings.Contains(why, tc.why) || (tc.why == "" && why != "") {
			t.Errorf("%s: %q %q %v, want %q saying %q", tc.name, st, why, err, tc.want, tc.why)
		}
	}
}

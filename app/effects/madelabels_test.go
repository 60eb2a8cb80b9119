package effects

import (
	"fmt"
	"testing"

	"github.com/countersign/countersign/app/records"
)

// The labels known to exist are remembered for at most madeLabelsMax of
// them, whatever the number of repositories: 5,000 repositories' seven
// labels each leave the set at its bound, the latest one known.
func TestMadeLabelsAreBounded(t *testing.T) {
	var s madeLabels
	var last string
	for r := range 5000 {
		for l := range 7 {
			last = records.MadeLabelKey(fmt.Sprintf("org%04d/repo", r), fmt.Sprintf("label-%d", l))
			s.add(last)
		}
	}
	if n := s.len(); n > madeLabelsMax || n < madeLabelsMax*3/4 {
		t.Fatalf("%d labels kept, want between %d and %d", n, madeLabelsMax*3/4, madeLabelsMax)
	}
	if !s.has(last) {
		t.Fatal("the label added last is not known")
	}
	s.drop(last)
	if s.has(last) {
		t.Fatal("a dropped label is still known")
	}
}

package scenario_test

import (
	"bytes"
	"context"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/scenario"
	"github.com/countersign/countersign/internal/scenarios"
)

// lockedBuffer collects the bot's logs from its goroutines.
type lockedBuffer struct {
	mu  chan struct{}
	buf bytes.Buffer
}

func newLockedBuffer() *lockedBuffer { return &lockedBuffer{mu: make(chan struct{}, 1)} }

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu <- struct{}{}
	defer func() { <-b.mu }()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu <- struct{}{}
	defer func() { <-b.mu }()
	return b.buf.String()
}

// Every scenario file plays to the end with every expectation met, each
// against its own fake GitHub and bot.
func TestScenarios(t *testing.T) {
	names, err := fs.Glob(scenarios.Files, "*.scenario")
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatal("no scenario files embedded")
	}
	for _, name := range names {
		t.Run(strings.TrimSuffix(name, ".scenario"), func(t *testing.T) {
			t.Parallel()
			sc, err := scenario.ParseFile(scenarios.Files, name)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			logs := newLockedBuffer()
			rig, err := scenario.NewRig(ctx, scenario.RigOptions{LogWriter: logs})
			if err != nil {
				t.Fatal(err)
			}
			defer rig.Close()
			var timeline bytes.Buffer
			if err := sc.Play(ctx, rig, &timeline); err != nil {
				t.Errorf("%v\n\ntimeline:\n%s", err, timeline.String())
				if testing.Verbose() {
					t.Logf("bot logs:\n%s", logs.String())
				}
			}
		})
	}
}

// Every embedded scenario file parses (a fast check that runs with -run Parse).
func TestParseScenarioFiles(t *testing.T) {
	names, _ := fs.Glob(scenarios.Files, "*.scenario")
	for _, name := range names {
		if _, err := scenario.ParseFile(scenarios.Files, name); err != nil {
			t.Error(err)
		}
	}
}

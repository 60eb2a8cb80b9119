package board

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/countersign/countersign/rules"
	"github.com/shurcooL/githubv4"
)

// reader answers every query with err, counting them.
type reader struct {
	err     error
	queries int
}

func (r *reader) Query(context.Context, any, map[string]any) error { r.queries++; return r.err }

type noWriter struct{}

func (noWriter) Mutate(context.Context, any, githubv4.Input, map[string]any) error {
	return errors.New("no writes here")
}

// What GitHub answers about a project that cannot help being asked again is
// ErrUnreachable, saying why; anything else (an outage) is not.
func TestReach(t *testing.T) {
	cfg := rules.BoardConfig{Project: "https://github.com/orgs/acme/projects/1", Field: rules.DefaultBoardField}
	for _, tc := range []struct {
		name        string
		cfg         rules.BoardConfig
		webHost     string
		answer      error
		unreachable string // the error says this ("" : not ErrUnreachable)
		queries     int
	}{
		{name: "no permission", cfg: cfg, answer: errors.New("Resource not accessible by integration"), unreachable: "organization projects (write) permission", queries: 1},
		{name: "another organization", cfg: cfg, answer: errors.New("Could not resolve to an Organization with the login of 'acme'."), unreachable: "not a project of an organization the App is installed on", queries: 1},
		{name: "no such project", cfg: cfg, answer: errors.New("Could not resolve to a ProjectV2 with the number 1."), unreachable: "does not exist", queries: 1},
		{name: "another host", cfg: cfg, webHost: "ghe.example.com", unreachable: "is on github.com, but countersign talks to ghe.example.com", queries: 0},
		{name: "a user's project", cfg: rules.BoardConfig{Project: "https://github.com/users/carol/projects/2"}, unreachable: "not a user's", queries: 0},
		{name: "GitHub is away", cfg: cfg, answer: errors.New("GraphQL answered 502 Bad Gateway"), queries: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &reader{err: tc.answer}
			b := New(nil, func(int64) (Reader, Writer, error) { return r, noWriter{}, nil }, slog.New(slog.DiscardHandler))
			err := b.Reach(context.Background(), 1, tc.cfg, tc.webHost)
			switch {
			case tc.unreachable != "" && (!errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), tc.unreachable)):
				t.Errorf("Reach: %v, want ErrUnreachable saying %q", err, tc.unreachable)
			case tc.unreachable == "" && (err == nil || errors.Is(err, ErrUnreachable)):
				t.Errorf("Reach: %v, want an error to wait out", err)
			}
			if r.queries != tc.queries {
				t.Errorf("%d queries, want %d", r.queries, tc.queries)
			}
		})
	}
}

func TestKeysAreCanonical(t *testing.T) {
	a := rules.BoardConfig{Project: "https://GitHub.com/orgs/acme/projects/1/views/2", Field: "Countersign"}
	b := rules.BoardConfig{Project: "https://github.com/orgs/acme/projects/1", Field: "countersign"}
	if ProjectKey(a) != ProjectKey(b) || ItemKey(a.Project, "acme/w", 3) != ItemKey(b.Project, "acme/w", 3) || UnreachableKey(7, a.Project) != UnreachableKey(7, b.Project) {
		t.Errorf("keys of one board differ: %q %q", ProjectKey(a), ProjectKey(b))
	}
}

// An installation that cannot reach a project (another organization's, named
// in its own repository's configuration) marks it unreachable for itself
// only: the organization's own installation keeps its board.
func TestUnreachableIsAnInstallationsOwn(t *testing.T) {
	url := "https://github.com/orgs/acme/projects/1"
	if UnreachableKey(1, url) == UnreachableKey(2, url) {
		t.Errorf("installations 1 and 2 share the unreachable mark of %s: %q", url, UnreachableKey(1, url))
	}
}

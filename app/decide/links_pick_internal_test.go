package decide

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/countersign/countersign/rules"
)

// linkCounts reads a payload's issue summaries as decoding the whole
// payload does.
func TestLinkCountsAgreeWithDecoding(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "github-webhooks", "*", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test payloads: %v", err)
	}
	payloads := [][]byte{
		[]byte(`{"issue":{"issue_dependencies_summary":{"total_blocked_by":2},"sub_issues_summary":{"total":3}}}`),
		[]byte(`{"issue":{"issue_dependencies_summary":{"total_blocked_by":2}}}`),
		[]byte(`{"issue":{"issue_dependencies_summary":5,"sub_issues_summary":{"total":3}}}`),
		[]byte(`{"issue":null}`), []byte(`{"issue":7}`), []byte(`{}`), []byte(`nope`),
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		payloads = append(payloads, b)
	}
	for _, p := range payloads {
		var v struct {
			Issue struct {
				Deps *struct {
					Total int `json:"total_blocked_by"`
				} `json:"issue_dependencies_summary"`
				Subs *struct {
					Total int `json:"total"`
				} `json:"sub_issues_summary"`
			} `json:"issue"`
		}
		var want *rules.LinkCounts
		if json.Unmarshal(p, &v) == nil && v.Issue.Deps != nil && v.Issue.Subs != nil {
			want = &rules.LinkCounts{BlockedBy: v.Issue.Deps.Total, SubIssues: v.Issue.Subs.Total}
		}
		if got := linkCounts(p); !reflect.DeepEqual(got, want) {
			t.Errorf("linkCounts(%.100s) = %+v, want %+v", p, got, want)
		}
	}
}

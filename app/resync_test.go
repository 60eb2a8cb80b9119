package app_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/rules"
)

// A repository the App is installed on gets countersign's labels before its
// tasks are compared with their records, and a failure to create them fails
// the resync delivery, which is tried again: no comparison (and so no repair)
// happens before the labels exist.
func TestInstallationResyncCreatesLabelsFirst(t *testing.T) {
	h := newHarness(t)
	h.gh.OpenIssue(testRepo, "alice", "a task", "")
	h.settle()
	h.gh.ResetRequests()
	labelsPath := "/repos/" + testRepo + "/labels"
	h.gh.FailNextFor(1, http.StatusInternalServerError, nil, func(method, path string) bool {
		return method == http.MethodPost && path == labelsPath
	})
	payload := fmt.Sprintf(`{"action":"created","installation":{"id":%d},"repositories":[{"full_name":%q}],"sender":{"login":"alice","id":1,"type":"User"}}`,
		testInstallation, testRepo)
	if resp := h.post("installation", "install-1", []byte(payload), true); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("installation delivery: status %d", resp.StatusCode)
	}
	h.settle()

	failed, lastCreate, firstList := -1, -1, -1
	for i, r := range h.gh.Requests() {
		switch {
		case r.Method == http.MethodPost && r.Path == labelsPath && r.Status == http.StatusInternalServerError:
			failed = i
		case r.Method == http.MethodPost && r.Path == labelsPath:
			lastCreate = i
		case r.Method == http.MethodGet && r.Path == "/repos/"+testRepo+"/issues" && firstList < 0:
			firstList = i
		}
	}
	if failed < 0 || lastCreate < failed {
		t.Fatalf("label creation: failed at request %d, last created at %d; want a failure, then the labels created", failed, lastCreate)
	}
	if firstList < lastCreate {
		t.Fatalf("the repository's issues were listed (request %d) before its labels were created (request %d)", firstList, lastCreate)
	}
	have := map[string]bool{}
	for _, l := range h.gh.RepoLabels(testRepo) {
		have[l.Name] = true
	}
	for _, s := range rules.States {
		if !have[s.Label()] {
			t.Errorf("label %s not created", s.Label())
		}
	}
	logs := h.logs.String()
	if !strings.Contains(logs, `"event":"countersign.resync"`) || !strings.Contains(logs, "ensure label") {
		t.Errorf("the resync's failure to create a label is not logged with the resync:\n%s", logs)
	}
	if strings.Contains(logs, "effect refused by GitHub; dropped") {
		t.Error("a label creation was dropped as refused")
	}
}

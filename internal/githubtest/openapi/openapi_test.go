package openapi_test

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/githubtest"
	"github.com/countersign/countersign/internal/githubtest/openapi"
	"github.com/countersign/countersign/internal/scenario"
	"github.com/countersign/countersign/internal/scenarios"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// The subsets are written by
//
//	go run ./internal/githubtest/openapi/gen -rest DIR -webhooks DIR
//
// (DIR: the unpacked npm packages @octokit/openapi and
// @octokit/openapi-webhooks); see gen/main.go.
const (
	restFile  = "../testdata/openapi/api.github.com.json"
	hooksFile = "../testdata/openapi/webhooks.json.gz"
)

var (
	loadOnce         sync.Once
	restSpec, hookSp *openapi.Spec
	loadErr          error
)

func specs(t *testing.T) (rest, hooks *openapi.Spec) {
	t.Helper()
	loadOnce.Do(func() {
		if restSpec, loadErr = openapi.Load(restFile); loadErr != nil {
			return
		}
		hookSp, loadErr = openapi.Load(hooksFile)
	})
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	return restSpec, hookSp
}

// The subsets say where they come from: GitHub's official descriptions.
func TestSubsetSource(t *testing.T) {
	rest, hooks := specs(t)
	if rest.Package != "@octokit/openapi" || rest.Version == "" {
		t.Errorf("REST subset from %q %q, want @octokit/openapi", rest.Package, rest.Version)
	}
	if hooks.Package != "@octokit/openapi-webhooks" || hooks.Version == "" {
		t.Errorf("webhooks subset from %q %q, want @octokit/openapi-webhooks", hooks.Package, hooks.Version)
	}
	t.Logf("REST: %s %s; webhooks: %s %s", rest.Package, rest.Version, hooks.Package, hooks.Version)
}

// Every route the fake serves is an operation of GitHub's description (same
// path template, same method), but for the documented exceptions
// (openapi.NotInSpec); every exception is a route the fake still serves.
// A failure here after adding a route: regenerate the subset (see above).
func TestFakeRoutesInSpec(t *testing.T) {
	rest, _ := specs(t)
	templates := rest.Templates()
	served := map[string]bool{}
	n := 0
	for _, r := range githubtest.Routes() {
		key := r.Method + " " + r.Pattern
		served[key] = true
		if why, ok := openapi.NotInSpec[key]; ok {
			t.Logf("not in the description (documented): %s: %s", key, why)
			continue
		}
		tpl, ok := openapi.TemplateFor(r.Pattern, templates)
		if !ok || !rest.HasOperation(r.Method, tpl) {
			t.Errorf("%s: no such operation in %s %s", key, rest.Package, rest.Version)
			continue
		}
		n++
	}
	for key := range openapi.NotInSpec {
		if !served[key] {
			t.Errorf("NotInSpec lists %s, which the fake does not serve", key)
		}
	}
	t.Logf("%d routes, %d of them operations of the description", len(served), n)
}

// generalStatuses are statuses GitHub answers on any operation, documented
// for it or not, with why; a response with one of them is checked against
// GitHub's basic error shape.
var generalStatuses = map[int]string{
	http.StatusNotModified:         "a conditional GET (If-None-Match) whose ETag still matches",
	http.StatusUnauthorized:        "bad or expired credentials",
	http.StatusForbidden:           "a (secondary) rate limit, or a resource not accessible by the token",
	http.StatusNotFound:            "not found, or not visible to the token",
	http.StatusUnprocessableEntity: "validation failed",
	http.StatusTooManyRequests:     "a secondary rate limit",
	http.StatusInternalServerError: "a fault the fake injects (FailNext, SetOutage)",
	http.StatusBadGateway:          "a fault the fake injects",
	http.StatusServiceUnavailable:  "a fault the fake injects",
}

// tally counts what the workload validated, over every scenario.
type tally struct {
	mu                                       sync.Mutex
	requests, bodies, responses, hooks, skip int
	ops                                      map[string]bool
	missing                                  map[string]int // required fields the fake leaves out: "op status: error"
}

func (ty *tally) add(f func(*tally)) {
	ty.mu.Lock()
	defer ty.mu.Unlock()
	f(ty)
}

// Every scenario (internal/scenarios) played against the fake and the real
// bot makes traffic that conforms to GitHub's description: each request body
// countersign sends validates strictly against its operation's requestBody
// schema (what GitHub would accept), each status the fake answers is one the
// description documents for the operation or one of generalStatuses, and
// each response body validates against the documented schema of its status,
// with `required` relaxed (the types and enum values of the fields present
// must be GitHub's; required fields the fake leaves out are listed in the
// log). Every webhook the fake sends validates, likewise relaxed, against
// @octokit/openapi-webhooks for its event and action.
func TestWorkloadConforms(t *testing.T) {
	rest, hooks := specs(t)
	names, err := fs.Glob(scenarios.Files, "*.scenario")
	if err != nil || len(names) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	ty := &tally{ops: map[string]bool{}, missing: map[string]int{}}
	t.Run("scenarios", func(t *testing.T) {
		for _, name := range names {
			t.Run(strings.TrimSuffix(name, ".scenario"), func(t *testing.T) {
				t.Parallel()
				sc, err := scenario.ParseFile(scenarios.Files, name)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				defer cancel()
				rig, err := scenario.NewRig(ctx, scenario.RigOptions{RecordBodies: true})
				if err != nil {
					t.Fatal(err)
				}
				defer rig.Close()
				var timeline strings.Builder
				if err := sc.Play(ctx, rig, &timeline); err != nil {
					t.Fatalf("%v\n\ntimeline:\n%s", err, timeline.String())
				}
				for _, r := range rig.GH().Requests() {
					checkCall(t, rest, r, ty)
				}
				for _, d := range rig.GH().Deliveries() {
					checkHook(t, hooks, d, ty)
				}
			})
		}
	})
	ops := make([]string, 0, len(ty.ops))
	for op := range ty.ops {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	t.Logf("%d scenarios: %d calls (%d not in the description), %d request bodies, %d response bodies, %d webhooks validated; %d operations used:\n  %s",
		len(names), ty.requests, ty.skip, ty.bodies, ty.responses, ty.hooks, len(ops), strings.Join(ops, "\n  "))
	miss := make([]string, 0, len(ty.missing))
	for m, n := range ty.missing {
		miss = append(miss, fmt.Sprintf("%s (%d times)", m, n))
	}
	sort.Strings(miss)
	if len(miss) > 0 {
		t.Logf("required fields the fake leaves out (relaxed):\n  %s", strings.Join(miss, "\n  "))
	}
}

func checkCall(t *testing.T, rest *openapi.Spec, r githubtest.Request, ty *tally) {
	t.Helper()
	call := fmt.Sprintf("%s %s (%d)", r.Method, r.Path, r.Status)
	if r.Route == "" {
		t.Errorf("%s: countersign called a route the fake does not serve", call)
		return
	}
	if _, ok := openapi.NotInSpec[r.Method+" "+r.Route]; ok {
		ty.add(func(ty *tally) { ty.requests++; ty.skip++ })
		return
	}
	tpl, ok := openapi.TemplateFor(r.Route, rest.Templates())
	if !ok {
		t.Errorf("%s: route %s not in the description", call, r.Route)
		return
	}
	op := r.Method + " " + tpl
	ty.add(func(ty *tally) { ty.requests++; ty.ops[op] = true })

	// The request body: what GitHub would accept. A JSON null is no body
	// (go-github and ghinstallation send one for "no options").
	if b := strings.TrimSpace(string(r.Body)); b != "" && b != "null" {
		sch, err := rest.RequestSchema(r.Method, tpl)
		switch {
		case err != nil:
			t.Errorf("%s: compiling the request schema: %v", op, err)
		case sch == nil:
			t.Errorf("%s: countersign sent a body %s; the operation takes none", call, r.Body)
		default:
			v, err := openapi.Decode(r.Body)
			if err != nil {
				t.Errorf("%s: countersign sent a body that is not JSON: %v", call, err)
				break
			}
			if arr, ok := v.([]any); ok && (op == addLabels || op == setLabels) {
				// "You can also pass an array of labels directly" (the
				// description's prose; go-github does): read as {labels: [...]}.
				v = map[string]any{"labels": arr}
			}
			if err := sch.Validate(v); err != nil {
				t.Errorf("%s: countersign sent a body GitHub would refuse: %v\nbody: %s", call, err, r.Body)
			}
			for _, e := range proseRules(op, v) {
				t.Errorf("%s: countersign sent a body GitHub would refuse: %s\nbody: %s", call, e, r.Body)
			}
			ty.add(func(ty *tally) { ty.bodies++ })
		}
	}

	// The status and the response body.
	status := strconv.Itoa(r.Status)
	if op == "PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}" && r.Status == http.StatusUnprocessableEntity {
		t.Logf("%s: documented drift (TestFakeRefusesWhatGitHubRefuses): the fake refuses to change a completed run; GitHub accepts", call)
	}
	documented := slices.Contains(rest.Statuses(r.Method, tpl), status)
	if !documented {
		if _, ok := generalStatuses[r.Status]; !ok {
			t.Errorf("%s: the fake answered %d, which the description does not document for %s (it does %v)", call, r.Status, op, rest.Statuses(r.Method, tpl))
			return
		}
	}
	if len(r.Response) == 0 {
		return
	}
	v, err := openapi.Decode(r.Response)
	if err != nil {
		t.Errorf("%s: the fake answered a body that is not JSON: %v", call, err)
		return
	}
	// The documented schema of the status; GitHub's basic error for an error
	// status it gives none.
	var strict, relaxed func() (*jsonschema.Schema, error)
	if sch, _ := rest.ResponseSchema(r.Method, tpl, status, true); documented && sch != nil {
		strict = func() (*jsonschema.Schema, error) { return rest.ResponseSchema(r.Method, tpl, status, false) }
		relaxed = func() (*jsonschema.Schema, error) { return rest.ResponseSchema(r.Method, tpl, status, true) }
	} else if r.Status >= 400 {
		strict = func() (*jsonschema.Schema, error) { return rest.ComponentSchema("basic-error", false) }
		relaxed = func() (*jsonschema.Schema, error) { return rest.ComponentSchema("basic-error", true) }
	} else {
		t.Errorf("%s: the fake answered a body %.200s; the description gives %s none", call, r.Response, status)
		return
	}
	sch, err := relaxed()
	if err != nil || sch == nil {
		t.Errorf("%s: compiling the response schema: %v", op, err)
		return
	}
	if err := sch.Validate(v); err != nil {
		t.Errorf("%s: the fake's response is not GitHub's: %v\nbody: %.2000s", call, err, r.Response)
		return
	}
	ty.add(func(ty *tally) { ty.responses++ })
	if s, err := strict(); err == nil && s != nil {
		if err := s.Validate(v); err != nil {
			for _, m := range missingFields(err) {
				ty.add(func(ty *tally) { ty.missing[op+" "+status+": "+m]++ })
			}
		}
	}
}

func checkHook(t *testing.T, hooks *openapi.Spec, d githubtest.SentWebhook, ty *tally) {
	t.Helper()
	op := openapi.HookOperation(d.Event, d.Action)
	sch, err := hooks.HookSchema(op, true)
	if err != nil {
		t.Errorf("webhook %s: compiling its schema: %v", op, err)
		return
	}
	if sch == nil {
		t.Errorf("webhook %s (%s): no such event and action in %s %s", op, d.ID, hooks.Package, hooks.Version)
		return
	}
	v, err := openapi.Decode(d.Payload)
	if err != nil {
		t.Errorf("webhook %s: the payload is not JSON: %v", op, err)
		return
	}
	if err := sch.Validate(v); err != nil {
		t.Errorf("webhook %s: the fake's payload is not GitHub's: %v\npayload: %.3000s", op, err, d.Payload)
		return
	}
	ty.add(func(ty *tally) { ty.hooks++; ty.ops["webhook "+op] = true })
	if s, err := hooks.HookSchema(op, false); err == nil && s != nil {
		if err := s.Validate(v); err != nil {
			for _, m := range missingFields(err) {
				ty.add(func(ty *tally) { ty.missing["webhook "+op+": "+m]++ })
			}
		}
	}
}

// missingFields lists the required fields a strict validation found missing,
// as "/path/*/to: a, b" (array indices written *); other errors are left to
// the relaxed validation.
func missingFields(err error) []string {
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if rq, ok := e.ErrorKind.(*kind.Required); ok {
			loc := make([]string, len(e.InstanceLocation))
			for i, p := range e.InstanceLocation {
				if _, err := strconv.Atoi(p); err == nil {
					p = "*"
				}
				loc[i] = p
			}
			m := "/" + strings.Join(loc, "/") + ": " + strings.Join(rq.Missing, ", ")
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return out
}

const (
	addLabels = "POST /repos/{owner}/{repo}/issues/{issue_number}/labels"
	setLabels = "PUT /repos/{owner}/{repo}/issues/{issue_number}/labels"
)

// proseRules are what GitHub refuses that its description says only in
// prose (the schemas let them through).
func proseRules(op string, body any) []string {
	var out []string
	switch op {
	case "POST /repos/{owner}/{repo}/check-runs", "PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}":
		b, _ := body.(map[string]any)
		conclusion, hasConclusion := b["conclusion"].(string)
		if conclusion == "stale" {
			out = append(out, `conclusion "stale": "You cannot change a check run conclusion to stale, only GitHub can set this"`)
		}
		if _, ok := b["completed_at"]; ok && !hasConclusion {
			out = append(out, "completed_at without a conclusion: the conclusion is \"Required if you provide completed_at\"")
		}
		if b["status"] == "completed" && !hasConclusion {
			out = append(out, "status completed without a conclusion: the conclusion is \"Required if you provide ... a status of completed\"")
		}
	}
	return out
}

package countersign

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/rhysd/actionlint"
)

// The workflows of .github/workflows are checked here, since GitHub Actions
// cannot run in the test suite: actionlint (as a library) lints them the way
// GitHub would read them (syntax, expressions, contexts, permissions, the
// inputs of the actions it knows, and the shell scripts with shellcheck when
// shellcheck is on PATH, as it is on GitHub's runners), and the tests below
// hold what a release depends on.

// workflowFiles are the workflow files of the repository.
func workflowFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, glob := range []string{"*.yml", "*.yaml"} {
		m, err := filepath.Glob(filepath.Join(".github", "workflows", glob))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	sort.Strings(files)
	for _, want := range []string{"ci.yml", "release.yml"} {
		if !slices.Contains(files, filepath.Join(".github", "workflows", want)) {
			t.Errorf(".github/workflows/%s is missing", want)
		}
	}
	return files
}

// parseWorkflow parses one workflow with actionlint's parser.
func parseWorkflow(t *testing.T, file string) (*actionlint.Workflow, []byte) {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	w, errs := actionlint.Parse(src)
	for _, e := range errs {
		t.Errorf("%s:%d:%d: %s", file, e.Line, e.Column, e.Message)
	}
	if w == nil {
		t.Fatalf("%s: not a workflow", file)
	}
	return w, src
}

// Every workflow passes actionlint with no error.
func TestWorkflowsLint(t *testing.T) {
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	project, err := actionlint.NewProject(root)
	if err != nil {
		t.Fatal(err)
	}
	opts := &actionlint.LinterOptions{WorkingDir: root}
	if sc, err := exec.LookPath("shellcheck"); err == nil {
		opts.Shellcheck = sc
	} else {
		t.Log("shellcheck is not on PATH: the run: scripts are not checked by it")
	}
	var out bytes.Buffer
	linter, err := actionlint.NewLinter(&out, opts)
	if err != nil {
		t.Fatal(err)
	}
	files := workflowFiles(t)
	if len(files) == 0 {
		t.Fatal("no workflow to lint")
	}
	errs, err := linter.LintFiles(files, project)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range errs {
		t.Errorf("%s:%d:%d: %s [%s]", e.Filepath, e.Line, e.Column, e.Message, e.Kind)
	}
}

// pinnedUses is an action from a repository, pinned to a full commit SHA,
// with its version in a comment for the reader: owner/repo[/path]@SHA # vX.Y.Z.
var (
	pinnedUses    = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+(/[A-Za-z0-9_./-]+)?@([0-9a-f]{40})$`)
	versionRemark = regexp.MustCompile(`#\s*v\d+(\.\d+){0,2}\b`)
	pinnedDocker  = regexp.MustCompile(`^docker://[^@\s]+@sha256:[0-9a-f]{64}$`)
)

// Every action a workflow uses is pinned to a 40-hex commit SHA (a moved tag
// cannot change what runs), says its version in a comment on the same line,
// and is pinned to one SHA throughout.
func TestWorkflowActionsPinned(t *testing.T) {
	shaOf := map[string]string{} // action -> SHA
	where := map[string]string{}
	uses := 0
	for _, file := range workflowFiles(t) {
		w, src := parseWorkflow(t, file)
		lines := strings.Split(string(src), "\n")
		check := func(u *actionlint.String) {
			uses++
			at := file
			if u.Pos != nil {
				at = file + ":" + strconv.Itoa(u.Pos.Line)
			}
			v := u.Value
			switch {
			case strings.HasPrefix(v, "./"):
				return // an action of this repository, at this commit
			case strings.HasPrefix(v, "docker://"):
				if !pinnedDocker.MatchString(v) {
					t.Errorf("%s: %s is not pinned by digest (docker://IMAGE@sha256:...)", at, v)
				}
				return
			}
			m := pinnedUses.FindStringSubmatch(v)
			if m == nil {
				t.Errorf("%s: uses: %s is not pinned to a full commit SHA (owner/repo@<40 hex> # vX.Y.Z)", at, v)
				return
			}
			if u.Pos == nil || u.Pos.Line > len(lines) || !versionRemark.MatchString(lines[u.Pos.Line-1]) {
				t.Errorf("%s: uses: %s has no `# vX.Y.Z` comment naming the version its SHA is", at, v)
			}
			action := strings.SplitN(v, "@", 2)[0]
			if prev, ok := shaOf[action]; ok && prev != m[2] {
				t.Errorf("%s: %s is pinned to %s here and to %s at %s", at, action, m[2], prev, where[action])
			}
			shaOf[action], where[action] = m[2], at
		}
		for _, job := range w.Jobs {
			if job.WorkflowCall != nil && job.WorkflowCall.Uses != nil {
				check(job.WorkflowCall.Uses)
			}
			for _, step := range job.Steps {
				if a, ok := step.Exec.(*actionlint.ExecAction); ok && a.Uses != nil {
					check(a.Uses)
				}
			}
		}
	}
	if uses == 0 {
		t.Fatal("no uses: found")
	}
	// The test itself: a tag or a short SHA is refused.
	for _, bad := range []string{"actions/checkout@v4", "actions/checkout@3d3c42e", "actions/checkout@main"} {
		if pinnedUses.MatchString(bad) {
			t.Errorf("pinnedUses accepts %s", bad)
		}
	}
}

// Each workflow declares its permissions, so the token gets no access by
// default. Only the release's jobs may write (TestReleaseWorkflow says what),
// and nothing grants write-all.
func TestWorkflowPermissionsMinimal(t *testing.T) {
	for _, file := range workflowFiles(t) {
		w, _ := parseWorkflow(t, file)
		if w.Permissions == nil {
			t.Errorf("%s: no top-level permissions:", file)
		}
		perms := []*actionlint.Permissions{w.Permissions}
		for _, job := range w.Jobs {
			perms = append(perms, job.Permissions)
		}
		for _, p := range perms {
			if p == nil {
				continue
			}
			if p.All != nil && p.All.Value != "read-all" {
				t.Errorf("%s:%d: permissions: %s", file, p.Pos.Line, p.All.Value)
			}
			if filepath.Base(file) == "release.yml" {
				continue
			}
			for name, s := range p.Scopes {
				if s.Value.Value == "write" {
					t.Errorf("%s:%d: %s: write", file, p.Pos.Line, name)
				}
			}
		}
	}
}

// CI runs what .ci/run runs, on pull requests and pushes to the default
// branch, with the Go version go.mod names.
func TestCIWorkflowRunsCIRun(t *testing.T) {
	w, _ := parseWorkflow(t, filepath.Join(".github", "workflows", "ci.yml"))
	events := map[string]*actionlint.WebhookEvent{}
	for _, e := range w.On {
		if e, ok := e.(*actionlint.WebhookEvent); ok {
			events[e.EventName()] = e
		}
	}
	if events["pull_request"] == nil {
		t.Error("ci.yml does not run on pull_request")
	}
	if push := events["push"]; push == nil || push.Branches == nil || !slices.ContainsFunc(push.Branches.Values, func(s *actionlint.String) bool { return s.Value == "main" }) {
		t.Error("ci.yml does not run on pushes to main")
	}
	runs, setupGo := 0, 0
	for _, job := range w.Jobs {
		for _, step := range job.Steps {
			switch e := step.Exec.(type) {
			case *actionlint.ExecRun:
				if e.Run != nil && strings.TrimSpace(e.Run.Value) == ".ci/run" {
					runs++
				}
			case *actionlint.ExecAction:
				if strings.HasPrefix(e.Uses.Value, "actions/setup-go@") {
					setupGo++
					if f := e.Inputs["go-version-file"]; f == nil || f.Value.Value != "go.mod" {
						t.Error("ci.yml: setup-go does not take the Go version from go.mod (go-version-file: go.mod)")
					}
				}
			}
		}
	}
	if runs != 1 || setupGo != 1 {
		t.Errorf("ci.yml: %d steps run .ci/run, %d set up Go; want 1 and 1", runs, setupGo)
	}
}

// The release workflow, on a tag v*, runs GoReleaser and builds, pushes,
// attests and signs the multi-arch image, each job with only the
// permissions it needs.
func TestReleaseWorkflow(t *testing.T) {
	w, src := parseWorkflow(t, filepath.Join(".github", "workflows", "release.yml"))
	tagged := false
	for _, e := range w.On {
		if e, ok := e.(*actionlint.WebhookEvent); ok && e.EventName() == "push" && e.Tags != nil {
			for _, tag := range e.Tags.Values {
				tagged = tagged || tag.Value == "v*"
			}
		}
	}
	if !tagged {
		t.Error("release.yml does not run on tags v*")
	}
	if w.Permissions == nil || w.Permissions.All != nil || len(w.Permissions.Scopes) != 0 {
		t.Error("release.yml: the workflow's own permissions should be {} (each job names its own)")
	}
	// What each job is granted, and what it must be.
	want := map[string]map[string]string{
		"binaries": {"contents": "write"},
		"image":    {"contents": "read", "packages": "write", "id-token": "write"},
	}
	for id, job := range w.Jobs {
		grants, ok := want[id]
		if !ok {
			t.Errorf("release.yml: job %s is not one this test knows; say what it may do", id)
			continue
		}
		got := map[string]string{}
		if job.Permissions != nil {
			for name, s := range job.Permissions.Scopes {
				got[name] = s.Value.Value
			}
		}
		if len(got) != len(grants) {
			t.Errorf("release.yml: job %s has permissions %v, want %v", id, got, grants)
		}
		for name, v := range grants {
			if got[name] != v {
				t.Errorf("release.yml: job %s has permissions %v, want %v", id, got, grants)
				break
			}
		}
	}
	inputs := func(action string) map[string]string {
		for _, job := range w.Jobs {
			for _, step := range job.Steps {
				if a, ok := step.Exec.(*actionlint.ExecAction); ok && strings.HasPrefix(a.Uses.Value, action+"@") {
					in := map[string]string{}
					for k, v := range a.Inputs {
						in[k] = v.Value.Value
					}
					return in
				}
			}
		}
		t.Errorf("release.yml does not use %s", action)
		return map[string]string{}
	}
	if in := inputs("goreleaser/goreleaser-action"); !strings.Contains(in["args"], "release") {
		t.Errorf("release.yml: goreleaser args %q", in["args"])
	}
	in := inputs("docker/build-push-action")
	for k, v := range map[string]string{"platforms": "linux/amd64,linux/arm64", "push": "true", "sbom": "true", "provenance": "mode=max"} {
		if in[k] != v {
			t.Errorf("release.yml: build-push-action %s: %q, want %q", k, in[k], v)
		}
	}
	for _, a := range []string{"docker/setup-qemu-action", "docker/setup-buildx-action", "docker/login-action", "sigstore/cosign-installer"} {
		inputs(a)
	}
	if !regexp.MustCompile(`cosign sign --yes "\$\{IMAGE\}@\$\{DIGEST\}"`).Match(src) ||
		!strings.Contains(string(src), "DIGEST: ${{ steps.build.outputs.digest }}") {
		t.Error("release.yml does not sign the pushed image by its digest with cosign")
	}
}

// GoReleaser builds the binaries the release promises (linux and darwin,
// amd64 and arm64) the way the Dockerfile builds the image's, and writes a
// checksums file.
func TestGoReleaserConfig(t *testing.T) {
	data, err := os.ReadFile(".goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Version int `yaml:"version"`
		Builds  []struct {
			Main    string   `yaml:"main"`
			Binary  string   `yaml:"binary"`
			Env     []string `yaml:"env"`
			Goos    []string `yaml:"goos"`
			Goarch  []string `yaml:"goarch"`
			Flags   []string `yaml:"flags"`
			Ldflags []string `yaml:"ldflags"`
		} `yaml:"builds"`
		ProjectName string `yaml:"project_name"`
		Archives    []struct {
			Formats      []string `yaml:"formats"`
			NameTemplate string   `yaml:"name_template"`
		} `yaml:"archives"`
		Checksum struct {
			NameTemplate string `yaml:"name_template"`
			Algorithm    string `yaml:"algorithm"`
		} `yaml:"checksum"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	if cfg.Version != 2 || len(cfg.Builds) != 1 {
		t.Fatalf(".goreleaser.yaml: version %d, %d builds; want version 2, one build", cfg.Version, len(cfg.Builds))
	}
	b := cfg.Builds[0]
	if b.Main != "./cmd/countersign" || b.Binary != "countersign" || !slices.Contains(b.Env, "CGO_ENABLED=0") || !slices.Contains(b.Flags, "-trimpath") {
		t.Errorf(".goreleaser.yaml build: %+v", b)
	}
	slices.Sort(b.Goos)
	slices.Sort(b.Goarch)
	if !slices.Equal(b.Goos, []string{"darwin", "linux"}) || !slices.Equal(b.Goarch, []string{"amd64", "arm64"}) {
		t.Errorf(".goreleaser.yaml: goos %v goarch %v", b.Goos, b.Goarch)
	}
	// The -X settings are the Dockerfile's: `countersign version` says the
	// release's tag and commit, whichever way it was built.
	x := regexp.MustCompile(`-X (\S+)=`)
	dockerfile, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var fromDocker, fromGR []string
	for _, m := range x.FindAllStringSubmatch(string(dockerfile), -1) {
		fromDocker = append(fromDocker, m[1])
	}
	for _, m := range x.FindAllStringSubmatch(strings.Join(b.Ldflags, " "), -1) {
		fromGR = append(fromGR, m[1])
	}
	slices.Sort(fromDocker)
	slices.Sort(fromGR)
	if len(fromDocker) == 0 || !slices.Equal(fromDocker, fromGR) {
		t.Errorf(".goreleaser.yaml sets %v at link time; the Dockerfile sets %v", fromGR, fromDocker)
	}
	if !strings.Contains(strings.Join(b.Ldflags, " "), "buildinfo.version={{ .Tag }}") {
		t.Errorf(".goreleaser.yaml: the version is not the tag: %v", b.Ldflags)
	}
	if cfg.Checksum.NameTemplate == "" || cfg.Checksum.Algorithm != "sha256" {
		t.Errorf(".goreleaser.yaml: checksum %+v", cfg.Checksum)
	}
	// The README's download command names the archive GoReleaser makes.
	if len(cfg.Archives) != 1 || !slices.Equal(cfg.Archives[0].Formats, []string{"tar.gz"}) {
		t.Fatalf(".goreleaser.yaml: archives %+v, want one, tar.gz", cfg.Archives)
	}
	archive := strings.NewReplacer("{{ .ProjectName }}", cfg.ProjectName, "{{ .Version }}", "0.1.0", "{{ .Os }}", "linux", "{{ .Arch }}", "amd64").
		Replace(cfg.Archives[0].NameTemplate) + ".tar.gz"
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"/releases/download/v0.1.0/" + archive, "/releases/download/v0.1.0/" + cfg.Checksum.NameTemplate} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("README.md does not download %s, which GoReleaser makes", want)
		}
	}
}

// The comments of the workflows and of .goreleaser.yaml point the reader to
// pages and sections of docs/ that exist.
func TestWorkflowCommentReferencesResolve(t *testing.T) {
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	anchors := func(page string) map[string]bool {
		src, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		_, a := parsePage(src)
		return a
	}
	refs := 0
	for _, f := range append(workflowFiles(t), ".goreleaser.yaml") {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			for _, ref := range docReference.FindAllString(line, -1) {
				refs++
				if err := resolve(t, root, "README.md", ref, anchors); err != nil {
					t.Errorf("%s:%d: %v", f, i+1, err)
				}
			}
		}
	}
	if refs == 0 {
		t.Fatal("the workflows point to no page of docs/")
	}
}

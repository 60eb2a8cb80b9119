package countersign

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bmatcuk/doublestar/v4"
)

// dockerignore is a parsed .dockerignore: patterns in order, "!" ones
// re-including what an earlier one left out (Docker's rules: a pattern that
// matches a directory leaves out everything under it; the last match wins).
type dockerignore []struct {
	pattern string
	include bool
}

func parseDockerignore(t *testing.T, data []byte) dockerignore {
	t.Helper()
	var d dockerignore
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		include := strings.HasPrefix(line, "!")
		p := path.Clean(strings.TrimPrefix(strings.TrimPrefix(line, "!"), "/"))
		if !doublestar.ValidatePattern(p) {
			t.Fatalf(".dockerignore: bad pattern %q", line)
		}
		d = append(d, struct {
			pattern string
			include bool
		}{p, include})
	}
	return d
}

// excluded reports whether file (slash-separated, relative to the context)
// stays out of the Docker context.
func (d dockerignore) excluded(file string) bool {
	out := false
	for _, p := range d {
		for dir := file; dir != "."; dir = path.Dir(dir) {
			if ok, _ := doublestar.Match(p.pattern, dir); ok {
				out = !p.include
				break
			}
		}
	}
	return out
}

// The image builds from a clean checkout: the Dockerfile's own build command,
// run in a directory holding exactly what the Docker context would (the
// committed files less .dockerignore), makes a binary that runs. This proves
// the context without a Docker daemon.
func TestDockerContextBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	ls, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	ignore, err := os.ReadFile(".dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	d := parseDockerignore(t, ignore)
	dockerfile, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	build := dockerfileBuild(t, string(dockerfile))

	ctxDir := t.TempDir()
	var copied int
	for _, f := range strings.Split(strings.TrimRight(string(ls), "\x00"), "\x00") {
		if f == "" || d.excluded(f) {
			continue
		}
		if err := copyFile(f, filepath.Join(ctxDir, filepath.FromSlash(f))); err != nil {
			if os.IsNotExist(err) {
				continue // deleted in the work tree, not yet committed
			}
			t.Fatal(err)
		}
		copied++
	}
	for _, gone := range []string{"testdata/github-webhooks", ".git", "deploy"} {
		if _, err := os.Stat(filepath.Join(ctxDir, gone)); err == nil {
			t.Errorf("%s is in the Docker context", gone)
		}
	}
	t.Logf("context: %d files; build: %s", copied, build)

	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", strings.ReplaceAll(build, "/out/", out+"/"))
	cmd.Dir = ctxDir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the Dockerfile's build fails in the Docker context: %v\n%s", err, b)
	}
	bin := filepath.Join(out, "countersign")
	v, err := exec.CommandContext(ctx, bin, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(v), "countersign v0.0.0-test (commit "+testCommit+",") {
		t.Fatalf("the built binary: %v %s", err, v)
	}
	if h, err := exec.CommandContext(ctx, bin, "register", "-h").CombinedOutput(); err != nil || !strings.Contains(string(h), "manifest flow") {
		t.Fatalf("countersign register -h: %v %s", err, h)
	}
}

// testCommit stands for the COMMIT build argument.
const testCommit = "0123456789abcdef0123456789abcdef01234567"

// dockerfileBuild is the build stage's `go build` command, without the steps
// after it.
func dockerfileBuild(t *testing.T, dockerfile string) string {
	t.Helper()
	joined := strings.ReplaceAll(dockerfile, "\\\n", " ")
	m := regexp.MustCompile(`(?m)^RUN (CGO_ENABLED=0 go build [^\n]*?-o /out/countersign \./cmd/countersign)`).FindStringSubmatch(joined)
	if m == nil {
		t.Fatal("Dockerfile: no `RUN CGO_ENABLED=0 go build ... -o /out/countersign ./cmd/countersign`")
	}
	// The build arguments, as `docker build --build-arg` gives them.
	return strings.NewReplacer("${COMMIT}", testCommit, "${VERSION}", "v0.0.0-test").Replace(m[1])
}

// The image runs as a fixed non-root user with nothing to write outside /data,
// on the Go version go.mod names.
func TestDockerfileHardening(t *testing.T) {
	dockerfile, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(gomod)
	stages := strings.Split(string(dockerfile), "\nFROM ")
	final := stages[len(stages)-1]
	for _, want := range []string{
		"FROM docker.io/library/golang:" + string(goVersion[1]) + "@sha256:",
		"FROM gcr.io/distroless/static-debian12:nonroot@sha256:",
	} {
		if !strings.Contains(string(dockerfile), want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	// Every base image is fully qualified (a registry host, as Podman and
	// Buildah demand) and pinned by digest.
	froms := regexp.MustCompile(`(?m)^FROM (\S+)`).FindAllStringSubmatch(string(dockerfile), -1)
	if len(froms) < 2 {
		t.Fatalf("Dockerfile: %d FROM lines", len(froms))
	}
	pinned := regexp.MustCompile(`^[a-z0-9.-]+\.[a-z]+/[a-z0-9._/-]+:[A-Za-z0-9._-]+@sha256:[0-9a-f]{64}$`)
	for _, f := range froms {
		if !pinned.MatchString(f[1]) {
			t.Errorf("Dockerfile: FROM %s is not REGISTRY/NAME:TAG@sha256:DIGEST", f[1])
		}
	}
	if !regexp.MustCompile(`(?m)^USER 65532:65532$`).MatchString(final) {
		t.Error("the final stage does not run as 65532:65532")
	}
	if !strings.Contains(final, "COPY --from=build --chown=65532:65532 /out/data /data") || !strings.Contains(final, "VOLUME /data") {
		t.Error("/data is not the non-root user's volume")
	}
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

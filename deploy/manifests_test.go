// Package deploy checks the Kubernetes manifests under kubernetes/: each
// document decodes strictly into its Kubernetes API type (an unknown or
// misspelt field is an error), and the production rules hold for every pod.
// It is a module of its own so that the Kubernetes API types stay out of
// countersign's go.mod; .ci/run runs it.
package deploy

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// objects are the decoded documents of one file, by kind.
type objects struct {
	deployments  []*appsv1.Deployment
	statefulSets []*appsv1.StatefulSet
	services     []*corev1.Service
	pdbs         []*policyv1.PodDisruptionBudget
	netpols      []*networkingv1.NetworkPolicy
	ingresses    []*networkingv1.Ingress
}

func decode(t *testing.T, file string) *objects {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	o := &objects{}
	for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("%s: document %d: %v", file, i+1, err)
		}
		if head.Kind == "" {
			if strings.TrimSpace(stripComments(doc)) != "" {
				t.Fatalf("%s: document %d has no kind", file, i+1)
			}
			continue
		}
		var target any
		switch head.APIVersion + " " + head.Kind {
		case "apps/v1 Deployment":
			d := &appsv1.Deployment{}
			o.deployments, target = append(o.deployments, d), d
		case "apps/v1 StatefulSet":
			s := &appsv1.StatefulSet{}
			o.statefulSets, target = append(o.statefulSets, s), s
		case "v1 Service":
			s := &corev1.Service{}
			o.services, target = append(o.services, s), s
		case "policy/v1 PodDisruptionBudget":
			p := &policyv1.PodDisruptionBudget{}
			o.pdbs, target = append(o.pdbs, p), p
		case "networking.k8s.io/v1 NetworkPolicy":
			n := &networkingv1.NetworkPolicy{}
			o.netpols, target = append(o.netpols, n), n
		case "networking.k8s.io/v1 Ingress":
			n := &networkingv1.Ingress{}
			o.ingresses, target = append(o.ingresses, n), n
		default:
			t.Fatalf("%s: document %d: unexpected %s %s", file, i+1, head.APIVersion, head.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), target); err != nil {
			t.Fatalf("%s: document %d (%s): %v", file, i+1, head.Kind, err)
		}
	}
	return o
}

func stripComments(doc string) string {
	var b bytes.Buffer
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// pinned is an image with a version tag (or a digest), never latest or a
// bare major version.
var pinned = regexp.MustCompile(`^[a-z0-9./-]+(:v?[0-9]+\.[0-9]+\.[0-9]+[a-z0-9.-]*)?(@sha256:[0-9a-f]{64})?$`)

// checkPod holds every pod to the same rules.
func checkPod(t *testing.T, where string, spec corev1.PodSpec) {
	t.Helper()
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: pod securityContext must run as non-root with the RuntimeDefault seccomp profile: %+v", where, psc)
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("%s: the service account token is mounted (nothing here talks to the Kubernetes API)", where)
	}
	if len(spec.Containers) == 0 {
		t.Fatalf("%s: no containers", where)
	}
	for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
		at := where + "/" + c.Name
		if !pinned.MatchString(c.Image) || !strings.ContainsAny(c.Image, ":@") {
			t.Errorf("%s: image %q is not pinned to a version", at, c.Image)
		}
		sc := c.SecurityContext
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot ||
			sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" ||
			sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault ||
			(sc.Privileged != nil && *sc.Privileged) {
			t.Errorf("%s: container securityContext is not locked down: %+v", at, sc)
		}
		if c.ReadinessProbe == nil || c.LivenessProbe == nil {
			t.Errorf("%s: needs readiness and liveness probes", at)
		}
		r := c.Resources
		if r.Requests.Cpu().IsZero() || r.Requests.Memory().IsZero() || r.Limits.Memory().IsZero() {
			t.Errorf("%s: needs cpu and memory requests and a memory limit: %+v", at, r)
		}
		for _, e := range c.Env {
			low := strings.ToLower(e.Name)
			if (strings.Contains(low, "secret") || strings.Contains(low, "password") || strings.HasSuffix(low, "_key")) && e.Value != "" {
				t.Errorf("%s: %s is a literal value, not from a Secret", at, e.Name)
			}
		}
	}
}

func env(c corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

// secretRef reports whether name comes from key of secret.
func secretRef(c corev1.Container, name, secret, key string) bool {
	e := env(c, name)
	return e != nil && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil &&
		e.ValueFrom.SecretKeyRef.Name == secret && e.ValueFrom.SecretKeyRef.Key == key
}

func checkCountersignContainer(t *testing.T, where string, c corev1.Container) {
	t.Helper()
	if !secretRef(c, "GITHUB_APP_ID", "countersign", "app-id") || !secretRef(c, "GITHUB_WEBHOOK_SECRET", "countersign", "webhook-secret") {
		t.Errorf("%s: the App id and webhook secret must come from the countersign Secret (the keys countersign register writes)", where)
	}
	if e := env(c, "COUNTERSIGN_RECORD_KEY"); !secretRef(c, "COUNTERSIGN_RECORD_KEY", "countersign", "record-key") ||
		e.ValueFrom.SecretKeyRef.Optional == nil || !*e.ValueFrom.SecretKeyRef.Optional {
		t.Errorf("%s: COUNTERSIGN_RECORD_KEY must come from the countersign Secret's record-key (optional)", where)
	}
	if e := env(c, "GITHUB_PRIVATE_KEY_PATH"); e == nil || e.Value != "/secrets/private-key.pem" {
		t.Errorf("%s: GITHUB_PRIVATE_KEY_PATH", where)
	}
	if c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" ||
		c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("%s: probes must be /readyz and /healthz", where)
	}
}

func TestRedisDeployment(t *testing.T) {
	cs := decode(t, filepath.Join("kubernetes", "countersign.yaml"))
	rd := decode(t, filepath.Join("kubernetes", "redis.yaml"))
	if len(cs.deployments) != 1 || len(cs.pdbs) != 1 || len(cs.services) != 1 {
		t.Fatalf("countersign.yaml: want a Deployment, a PodDisruptionBudget and a Service")
	}
	d := cs.deployments[0]
	checkPod(t, "countersign.yaml", d.Spec.Template.Spec)
	if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
		t.Error("countersign.yaml: fewer than two replicas")
	}
	podLabels := labels.Set(d.Spec.Template.Labels)
	aa := d.Spec.Template.Spec.Affinity
	if aa == nil || aa.PodAntiAffinity == nil || len(aa.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		t.Fatal("countersign.yaml: no pod anti-affinity")
	}
	term := aa.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm
	if sel := labels.SelectorFromSet(term.LabelSelector.MatchLabels); term.TopologyKey != "kubernetes.io/hostname" || !sel.Matches(podLabels) {
		t.Error("countersign.yaml: the anti-affinity does not spread the replicas over nodes")
	}
	pdb := cs.pdbs[0]
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() < 1 ||
		!labels.SelectorFromSet(pdb.Spec.Selector.MatchLabels).Matches(podLabels) {
		t.Error("countersign.yaml: the PodDisruptionBudget does not keep a replica up")
	}
	if !labels.SelectorFromSet(cs.services[0].Spec.Selector).Matches(podLabels) {
		t.Error("countersign.yaml: the Service does not select the pods")
	}
	c := d.Spec.Template.Spec.Containers[0]
	checkCountersignContainer(t, "countersign.yaml", c)
	if !secretRef(c, "REDIS_PASSWORD", "countersign-redis", "password") {
		t.Error("countersign.yaml: REDIS_PASSWORD must come from the countersign-redis Secret")
	}
	// REDIS_URL uses the password, declared before it ($(VAR) expansion).
	if e := env(c, "REDIS_URL"); e == nil || !strings.HasPrefix(e.Value, "redis://:$(REDIS_PASSWORD)@countersign-redis:6379/") {
		t.Errorf("countersign.yaml: REDIS_URL %v does not carry the password", e)
	}
	if envIndex(c, "REDIS_PASSWORD") > envIndex(c, "REDIS_URL") {
		t.Error("countersign.yaml: REDIS_PASSWORD must come before REDIS_URL")
	}
	// Each replica paces its own writes: together they stay under GitHub's
	// secondary limits (80 writes a minute, 500 an hour, per installation).
	replicas := 1
	if d.Spec.Replicas != nil {
		replicas = int(*d.Spec.Replicas)
	}
	for name, limit := range map[string]int{"COUNTERSIGN_WRITES_PER_MINUTE": 80, "COUNTERSIGN_WRITES_PER_HOUR": 500} {
		e := env(c, name)
		n, err := strconv.Atoi(valueOf(e))
		if e == nil || err != nil || n < 1 || n*replicas > limit {
			t.Errorf("countersign.yaml: %s %v: %d replicas must write at most %d together", name, e, replicas, limit)
		}
	}

	if len(rd.statefulSets) != 1 || len(rd.services) != 1 || len(rd.netpols) != 1 {
		t.Fatalf("redis.yaml: want a StatefulSet, a Service and a NetworkPolicy")
	}
	r := rd.statefulSets[0]
	checkPod(t, "redis.yaml", r.Spec.Template.Spec)
	rc := r.Spec.Template.Spec.Containers[0]
	args := strings.Join(rc.Args, " ")
	if !secretRef(rc, "REDIS_PASSWORD", "countersign-redis", "password") || !strings.Contains(args, "--requirepass $(REDIS_PASSWORD)") {
		t.Error("redis.yaml: Redis must require the password from the countersign-redis Secret")
	}
	if !secretRef(rc, "REDISCLI_AUTH", "countersign-redis", "password") {
		t.Error("redis.yaml: the redis-cli probe needs REDISCLI_AUTH")
	}
	if !strings.Contains(args, "--appendonly yes") || !strings.Contains(args, "--appendfsync always") {
		t.Errorf("redis.yaml: want append-only persistence with appendfsync always (docs/deploying.md, Redis durability): %s", args)
	}
	// A full Redis refuses writes (countersign answers 503, GitHub's delivery
	// is healed later) rather than being killed at its memory limit or evicting
	// queued deliveries: maxmemory below the limit, and noeviction.
	maxmemory, err := resource.ParseQuantity(strings.ToUpper(strings.TrimSuffix(flagValue(rc.Args, "--maxmemory"), "b")) + "i")
	if err != nil {
		t.Errorf("redis.yaml: --maxmemory %q: %v", flagValue(rc.Args, "--maxmemory"), err)
	} else if limit := rc.Resources.Limits.Memory(); limit.IsZero() || maxmemory.Cmp(*limit) >= 0 {
		t.Errorf("redis.yaml: maxmemory %s is not below the memory limit %s", maxmemory.String(), limit.String())
	}
	if p := flagValue(rc.Args, "--maxmemory-policy"); p != "noeviction" {
		t.Errorf("redis.yaml: --maxmemory-policy %q, want noeviction", p)
	}
	redisLabels := labels.Set(r.Spec.Template.Labels)
	np := rd.netpols[0]
	if !labels.SelectorFromSet(np.Spec.PodSelector.MatchLabels).Matches(redisLabels) {
		t.Fatal("redis.yaml: the NetworkPolicy does not select Redis")
	}
	if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].From) != 1 || np.Spec.Ingress[0].From[0].PodSelector == nil ||
		!labels.SelectorFromSet(np.Spec.Ingress[0].From[0].PodSelector.MatchLabels).Matches(podLabels) ||
		labels.SelectorFromSet(np.Spec.Ingress[0].From[0].PodSelector.MatchLabels).Matches(labels.Set{"app": "other"}) ||
		len(np.Spec.Ingress[0].Ports) != 1 || np.Spec.Ingress[0].Ports[0].Port.IntValue() != 6379 {
		t.Error("redis.yaml: the NetworkPolicy must let in countersign's pods, on 6379, and nothing else")
	}
	if !labels.SelectorFromSet(rd.services[0].Spec.Selector).Matches(redisLabels) || rd.services[0].Name != "countersign-redis" {
		t.Error("redis.yaml: the Service countersign-redis does not select Redis")
	}
}

// flagValue is the argument after flag in args ("" when absent).
func flagValue(args []string, flag string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			return args[i+1]
		}
	}
	return ""
}

func valueOf(e *corev1.EnvVar) string {
	if e == nil {
		return ""
	}
	return e.Value
}

func envIndex(c corev1.Container, name string) int {
	for i, e := range c.Env {
		if e.Name == name {
			return i
		}
	}
	return -1
}

func TestSingleDeployment(t *testing.T) {
	o := decode(t, filepath.Join("kubernetes", "single.yaml"))
	if len(o.statefulSets) != 1 || len(o.services) != 1 {
		t.Fatal("single.yaml: want a StatefulSet and a Service")
	}
	s := o.statefulSets[0]
	checkPod(t, "single.yaml", s.Spec.Template.Spec)
	if s.Spec.Replicas == nil || *s.Spec.Replicas != 1 {
		t.Error("single.yaml: the embedded store allows exactly one replica")
	}
	c := s.Spec.Template.Spec.Containers[0]
	checkCountersignContainer(t, "single.yaml", c)
	if e := env(c, "COUNTERSIGN_DATA"); e == nil || !strings.HasPrefix(e.Value, "/data/") || env(c, "REDIS_URL") != nil {
		t.Error("single.yaml: the store must be a file on the /data volume")
	}
	if len(s.Spec.VolumeClaimTemplates) != 1 || s.Spec.VolumeClaimTemplates[0].Name != "data" {
		t.Error("single.yaml: no volume for /data")
	}
	if fs := s.Spec.Template.Spec.SecurityContext.FSGroup; fs == nil || *fs != 65532 {
		t.Error("single.yaml: fsGroup 65532 lets the non-root user write its volume")
	}
}

// Every file under kubernetes/ is checked by a test above.
func TestEveryManifestChecked(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("kubernetes", "*"))
	for _, f := range files {
		switch filepath.Base(f) {
		case "countersign.yaml", "redis.yaml", "single.yaml", "ingress.yaml":
		default:
			t.Errorf("%s is not checked by deploy's tests", f)
		}
	}
}

// publishedImage is the countersign image the manifests name: the one the
// release workflow publishes for the tag v0.1.0, under the repository's own
// name on ghcr.io (the module path github.com/OWNER/REPO, ghcr.io/OWNER/REPO).
const publishedImage = "ghcr.io/countersign/countersign:v0.1.0"

// deployingDoc is where the manifests send their reader.
var deployingDoc = filepath.Join("..", "docs", "deploying.md")

// The countersign image is the published one, by tag or pinned by digest
// (TAG@sha256:...), and its line says where pinning it is shown; the
// documentation names the same image, and the image is named after the
// repository the module path names.
func TestPublishedImage(t *testing.T) {
	doc, err := os.ReadFile(deployingDoc)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), publishedImage) {
		t.Errorf("%s does not name the manifests' image %s", deployingDoc, publishedImage)
	}
	if strings.Contains(string(doc), "registry.example.com") {
		t.Errorf("%s still names registry.example.com", deployingDoc)
	}
	gomod, err := os.ReadFile(filepath.Join("..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	module := regexp.MustCompile(`(?m)^module github\.com/(\S+)$`).FindSubmatch(gomod)
	if module == nil || !strings.HasPrefix(publishedImage, "ghcr.io/"+strings.ToLower(string(module[1]))+":") {
		t.Errorf("the image %s is not ghcr.io/ and the module path's repository (%s)", publishedImage, module)
	}
	line := regexp.MustCompile(`(?m)^\s*image: (\S+)(.*)$`)
	pinned := regexp.MustCompile(`^` + regexp.QuoteMeta(publishedImage) + `(@sha256:[0-9a-f]{64})?$`)
	for _, f := range []string{"countersign.yaml", "single.yaml"} {
		data, err := os.ReadFile(filepath.Join("kubernetes", f))
		if err != nil {
			t.Fatal(err)
		}
		m := line.FindAllStringSubmatch(string(data), -1)
		if len(m) != 1 || !pinned.MatchString(m[0][1]) || !strings.Contains(m[0][2], "# ") ||
			!strings.Contains(m[0][2], "docs/deploying.md#the-published-image") {
			t.Errorf("%s: want one image line, %s (or %s@sha256:DIGEST) with a comment pointing to docs/deploying.md#the-published-image: %q", f, publishedImage, publishedImage, m)
		}
	}
}

// minimumKubernetes is the version the manifests and the documentation state.
var minimumKubernetes = regexp.MustCompile(`Requires Kubernetes >= 1\.([0-9]+)`)

// Each manifest with a pod states the minimum Kubernetes version, and that
// version has every lifecycle feature the pods use: the sleep action of a
// preStop or postStart hook is on by default from 1.30 (alpha, off, in 1.29).
// The documentation states the same minimum.
func TestMinimumKubernetesVersion(t *testing.T) {
	doc, err := os.ReadFile(deployingDoc)
	if err != nil {
		t.Fatal(err)
	}
	dm := minimumKubernetes.FindSubmatch(doc)
	if dm == nil {
		t.Fatalf("%s does not say %q", deployingDoc, "Requires Kubernetes >= 1.N")
	}
	for _, f := range []string{"countersign.yaml", "single.yaml", "redis.yaml"} {
		path := filepath.Join("kubernetes", f)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		m := minimumKubernetes.FindSubmatch(data)
		o := decode(t, path)
		var pods []corev1.PodSpec
		for _, d := range o.deployments {
			pods = append(pods, d.Spec.Template.Spec)
		}
		for _, s := range o.statefulSets {
			pods = append(pods, s.Spec.Template.Spec)
		}
		need := 0
		for _, p := range pods {
			for _, c := range p.Containers {
				if l := c.Lifecycle; l != nil && (l.PreStop != nil && l.PreStop.Sleep != nil || l.PostStart != nil && l.PostStart.Sleep != nil) {
					need = max(need, 30)
				}
			}
		}
		if need == 0 {
			continue
		}
		if m == nil {
			t.Errorf("%s: uses a hook's sleep action but states no minimum (%q)", f, "Requires Kubernetes >= 1.30")
			continue
		}
		if minor, _ := strconv.Atoi(string(m[1])); minor < need {
			t.Errorf("%s: states Kubernetes >= 1.%d, but the sleep action needs 1.%d", f, minor, need)
		}
		if string(m[1]) != string(dm[1]) {
			t.Errorf("%s states Kubernetes >= 1.%s, %s states 1.%s", f, m[1], deployingDoc, dm[1])
		}
	}
}

// The Ingress example serves POST /webhook alone, over TLS, to the Service
// both countersign.yaml and single.yaml define.
func TestIngress(t *testing.T) {
	o := decode(t, filepath.Join("kubernetes", "ingress.yaml"))
	if len(o.ingresses) != 1 {
		t.Fatal("ingress.yaml: want one Ingress")
	}
	in := o.ingresses[0]
	if len(in.Spec.TLS) != 1 || in.Spec.TLS[0].SecretName == "" || len(in.Spec.Rules) != 1 {
		t.Fatalf("ingress.yaml: want one TLS entry with a Secret and one rule: %+v", in.Spec)
	}
	rule := in.Spec.Rules[0]
	if len(in.Spec.TLS[0].Hosts) != 1 || in.Spec.TLS[0].Hosts[0] != rule.Host || rule.Host == "" {
		t.Errorf("ingress.yaml: the TLS hosts %v do not cover the rule's host %q", in.Spec.TLS[0].Hosts, rule.Host)
	}
	if rule.HTTP == nil || len(rule.HTTP.Paths) != 1 {
		t.Fatal("ingress.yaml: want exactly one path")
	}
	p := rule.HTTP.Paths[0]
	if p.Path != "/webhook" || p.PathType == nil || *p.PathType != networkingv1.PathTypeExact {
		t.Errorf("ingress.yaml: the path must be /webhook, Exact (nothing else exposed): %q %v", p.Path, p.PathType)
	}
	svc := p.Backend.Service
	if svc == nil {
		t.Fatal("ingress.yaml: no backend service")
	}
	for _, f := range []string{"countersign.yaml", "single.yaml"} {
		found := false
		for _, s := range decode(t, filepath.Join("kubernetes", f)).services {
			for _, port := range s.Spec.Ports {
				found = found || s.Name == svc.Name && port.Name == svc.Port.Name && svc.Port.Name != ""
			}
		}
		if !found {
			t.Errorf("ingress.yaml: backend %s:%s is not a Service port of %s", svc.Name, svc.Port.Name, f)
		}
	}
}

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
		t.Errorf("redis.yaml: want append-only persistence with appendfsync always (README, Redis durability): %s", args)
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
		case "countersign.yaml", "redis.yaml", "single.yaml":
		default:
			t.Errorf("%s is not checked by deploy's tests", f)
		}
	}
}

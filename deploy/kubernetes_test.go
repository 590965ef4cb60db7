package deploy

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// manifests are deploy/kubernetes's objects, each decoded strictly into
// Kubernetes' own Go types (k8s.io/api): a misspelt or misplaced field, a
// value of the wrong type or a quantity that does not parse fails the
// decoding, as kubectl apply --validate=strict would refuse it.
type manifests struct {
	deployment appsv1.Deployment
	service    corev1.Service
	pdb        policyv1.PodDisruptionBudget
	configMap  corev1.ConfigMap
	secret     corev1.Secret
	job        batchv1.Job
	kustomize  struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Labels     []struct {
			Pairs map[string]string `json:"pairs"`
		} `json:"labels"`
		Resources []string `json:"resources"`
		Images    []struct {
			Name    string `json:"name"`
			NewName string `json:"newName,omitempty"`
			NewTag  string `json:"newTag"`
		} `json:"images"`
	}
}

func readManifests(t *testing.T) *manifests {
	t.Helper()
	m := &manifests{}
	for file, into := range map[string]any{
		"kustomization.yaml": &m.kustomize,
		"deployment.yaml":    &m.deployment,
		"service.yaml":       &m.service,
		"pdb.yaml":           &m.pdb,
		"configmap.yaml":     &m.configMap,
		"secret.yaml":        &m.secret,
		"migrate-job.yaml":   &m.job,
	} {
		b, err := os.ReadFile(filepath.Join("kubernetes", file))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "\n---") {
			t.Errorf("%s holds several documents: one object per file", file)
		}
		if err := yaml.UnmarshalStrict(b, into); err != nil {
			t.Errorf("%s: %v", file, err)
		}
	}
	return m
}

// checkMeta checks an object's kind, API version and name as the API
// server would: a DNS-1123 subdomain name, valid label keys and values.
func checkMeta(t *testing.T, what string, tm metav1.TypeMeta, om metav1.ObjectMeta, apiVersion, kind string) {
	t.Helper()
	if tm.APIVersion != apiVersion || tm.Kind != kind {
		t.Errorf("%s: %s %s, want %s %s", what, tm.APIVersion, tm.Kind, apiVersion, kind)
	}
	for _, msg := range validation.IsDNS1123Subdomain(om.Name) {
		t.Errorf("%s: name %q: %s", what, om.Name, msg)
	}
	for k, v := range om.Labels {
		for _, msg := range append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...) {
			t.Errorf("%s: label %s=%s: %s", what, k, v, msg)
		}
	}
}

// checkPod holds a pod template to what the image and rlapi need: not
// root, nothing writable, no privilege, the settings from the ConfigMap
// and the Secret of the manifests.
func checkPod(t *testing.T, what string, spec corev1.PodSpec, m *manifests) {
	t.Helper()
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != 65532 ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: pod security context %+v: want non-root 65532 (the image's user) and the runtime's seccomp profile", what, psc)
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("%s: mounts a service account token rlapi never uses", what)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%s: %d containers, want 1", what, len(spec.Containers))
	}
	c := spec.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("%s: container security context %+v: want a read-only root, no privilege escalation, every capability dropped", what, sc)
	}
	if _, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok {
		t.Errorf("%s: no memory limit (rlapi sizes its soft memory limit from it)", what)
	}
	for _, from := range c.EnvFrom {
		switch {
		case from.SecretRef != nil && from.SecretRef.Name != m.secret.Name:
			t.Errorf("%s: environment from Secret %q, which the manifests do not define", what, from.SecretRef.Name)
		case from.ConfigMapRef != nil && from.ConfigMapRef.Name != m.configMap.Name:
			t.Errorf("%s: environment from ConfigMap %q, which the manifests do not define", what, from.ConfigMapRef.Name)
		}
	}
	if !slices.ContainsFunc(c.EnvFrom, func(f corev1.EnvFromSource) bool { return f.SecretRef != nil }) {
		t.Errorf("%s: no environment from the Secret: DATABASE_URL would be missing", what)
	}
}

// TestKubernetesManifests: deploy/kubernetes decodes strictly into
// Kubernetes' types, and its objects fit together: the kustomization
// lists every manifest but the Job; the Service, the PodDisruptionBudget
// and the Deployment select the Deployment's pods; the Service's target
// ports are container ports; readiness is /readyz and liveness /healthz
// on the HTTP port; the ConfigMap sets only variables rlapi reads; the
// Secret holds DATABASE_URL; the migration Job runs `rlapi migrate` with
// the Deployment's image and Secret.
func TestKubernetesManifests(t *testing.T) {
	m := readManifests(t)
	if t.Failed() {
		t.FailNow()
	}

	k := m.kustomize
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Errorf("kustomization.yaml: %s %s", k.APIVersion, k.Kind)
	}
	files, err := filepath.Glob(filepath.Join("kubernetes", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		listed := slices.Contains(k.Resources, name)
		switch name {
		case "kustomization.yaml", "migrate-job.yaml":
			if listed {
				t.Errorf("kustomization.yaml lists %s", name)
			}
		default:
			if !listed {
				t.Errorf("kustomization.yaml does not list %s", name)
			}
		}
	}
	for _, r := range k.Resources {
		if _, err := os.Stat(filepath.Join("kubernetes", r)); err != nil {
			t.Errorf("kustomization.yaml lists %s: %v", r, err)
		}
	}

	d := m.deployment
	checkMeta(t, "deployment.yaml", d.TypeMeta, d.ObjectMeta, "apps/v1", "Deployment")
	checkMeta(t, "service.yaml", m.service.TypeMeta, m.service.ObjectMeta, "v1", "Service")
	checkMeta(t, "pdb.yaml", m.pdb.TypeMeta, m.pdb.ObjectMeta, "policy/v1", "PodDisruptionBudget")
	checkMeta(t, "configmap.yaml", m.configMap.TypeMeta, m.configMap.ObjectMeta, "v1", "ConfigMap")
	checkMeta(t, "secret.yaml", m.secret.TypeMeta, m.secret.ObjectMeta, "v1", "Secret")
	checkMeta(t, "migrate-job.yaml", m.job.TypeMeta, m.job.ObjectMeta, "batch/v1", "Job")

	pods := labels.Set(d.Spec.Template.Labels)
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(pods) {
		t.Errorf("the Deployment's selector %v (%v) does not select its own pods %v", d.Spec.Selector, err, pods)
	}
	if s := labels.SelectorFromSet(m.service.Spec.Selector); len(m.service.Spec.Selector) == 0 || !s.Matches(pods) {
		t.Errorf("the Service's selector %v does not select the Deployment's pods %v", m.service.Spec.Selector, pods)
	}
	if s, err := metav1.LabelSelectorAsSelector(m.pdb.Spec.Selector); err != nil || s.Empty() || !s.Matches(pods) {
		t.Errorf("the PodDisruptionBudget's selector %v (%v) does not select the Deployment's pods %v", m.pdb.Spec.Selector, err, pods)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 || m.pdb.Spec.MaxUnavailable == nil || m.pdb.Spec.MaxUnavailable.IntValue() >= int(*d.Spec.Replicas) {
		t.Errorf("replicas %v, PodDisruptionBudget maxUnavailable %v: a drain must leave a replica deciding", d.Spec.Replicas, m.pdb.Spec.MaxUnavailable)
	}
	if replicas := m.configMap.Data["RLAPI_LEASE_REPLICAS"]; replicas != "" && d.Spec.Replicas != nil && replicas != strconv.Itoa(int(*d.Spec.Replicas)) {
		t.Errorf("RLAPI_LEASE_REPLICAS=%s, but the Deployment runs %d replicas: leases would split a limit wrongly", replicas, *d.Spec.Replicas)
	}

	checkPod(t, "deployment.yaml", d.Spec.Template.Spec, m)
	c := d.Spec.Template.Spec.Containers[0]
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["http"] != 8080 || ports["grpc"] != 8081 {
		t.Errorf("container ports %v: want http 8080 and grpc 8081 (the ConfigMap's RLAPI_ADDR and RLAPI_GRPC_ADDR)", ports)
	}
	if m.configMap.Data["RLAPI_ADDR"] != "0.0.0.0:8080" || m.configMap.Data["RLAPI_GRPC_ADDR"] != "0.0.0.0:8081" {
		t.Errorf("ConfigMap addresses %q and %q: want 0.0.0.0:8080 and 0.0.0.0:8081, the container's ports", m.configMap.Data["RLAPI_ADDR"], m.configMap.Data["RLAPI_GRPC_ADDR"])
	}
	for _, p := range m.service.Spec.Ports {
		if _, ok := ports[p.TargetPort.String()]; !ok {
			t.Errorf("the Service's port %s targets %s, which is no container port", p.Name, p.TargetPort.String())
		}
	}
	for name, probe := range map[string]*corev1.Probe{"/readyz": c.ReadinessProbe, "/healthz": c.LivenessProbe} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != name || probe.HTTPGet.Port.String() != "http" {
			t.Errorf("want a probe of %s on the http port, got %+v", name, probe)
		}
	}
	if got := append(slices.Clone(c.Command), c.Args...); !slices.Equal(got, []string{"serve"}) {
		t.Errorf("the Deployment runs %q: want serve (the image's entrypoint is rlapi)", got)
	}
	if d.Spec.Template.Spec.TerminationGracePeriodSeconds == nil || *d.Spec.Template.Spec.TerminationGracePeriodSeconds <= 20 {
		t.Error("terminationGracePeriodSeconds must exceed rlapi's --shutdown-timeout (20 s), or in-flight requests are cut")
	}

	known := knownVariables(t)
	for key := range m.configMap.Data {
		if !slices.Contains(known, key) {
			t.Errorf("the ConfigMap sets %s, which rlapi serve -h does not list", key)
		}
	}
	if _, ok := m.secret.StringData["DATABASE_URL"]; !ok {
		t.Error("the Secret holds no DATABASE_URL")
	}
	for key := range m.secret.StringData {
		if !slices.Contains(known, key) {
			t.Errorf("the Secret sets %s, which rlapi serve -h does not list", key)
		}
	}

	job := m.job.Spec.Template.Spec
	checkPod(t, "migrate-job.yaml", job, m)
	image := c.Image
	if len(k.Images) == 1 && k.Images[0].Name == c.Image {
		image = c.Image + ":" + k.Images[0].NewTag
		if k.Images[0].NewName != "" {
			image = k.Images[0].NewName + ":" + k.Images[0].NewTag
		}
	}
	if j := job.Containers[0]; j.Image != image || !slices.Equal(j.Args, []string{"migrate"}) {
		t.Errorf("the Job runs %s %q: want %s migrate, the Deployment's image", j.Image, j.Args, image)
	}
	if job.RestartPolicy != corev1.RestartPolicyOnFailure && job.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("the Job's restartPolicy %q: a Job's must be OnFailure or Never", job.RestartPolicy)
	}
}

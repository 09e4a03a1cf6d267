package kubernetes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// fixture is base/payments.yaml and base/networkpolicy.yaml as written, with
// what kustomize adds (the part-of label, the ConfigMap the Deployment's
// envFrom names): objects that pass every rule, for each case below to
// break one way. It needs no kubectl.
func fixture(t *testing.T) Objects {
	t.Helper()
	var stream []byte
	for _, f := range []string{"payments.yaml", "networkpolicy.yaml"} {
		b, err := os.ReadFile(filepath.Join(root, "deploy/kubernetes/base", f))
		if err != nil {
			t.Fatal(err)
		}
		stream = append(append(stream, b...), "\n---\n"...)
	}
	o, err := Decode(stream)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range o.Deployments {
		d.Spec.Template.Labels["app.kubernetes.io/part-of"] = PartOf
	}
	for _, j := range o.Jobs {
		j.Spec.Template.Labels["app.kubernetes.io/part-of"] = PartOf
	}
	o.ConfigMaps["payments-config"] = &corev1.ConfigMap{Data: map[string]string{
		"PAYMENTS_TOPIC_ARN": "arn:aws:sns:us-east-1:000000000000:payments-events",
		"SHUTDOWN_TIMEOUT":   "15s", "MIGRATE_ON_START": "false",
	}}
	return o
}

var fixtureDoc = "## Every service\n\n" +
	"| `DATABASE_URL` | required | x |\n| `SHUTDOWN_TIMEOUT` | `15s` | x |\n| `MIGRATE_ON_START` | `true` | x |\n\n" +
	"## payments\n\n| `PAYMENTS_TOPIC_ARN` | required | x |\n| `PAYMENTS_SIGNING_KEY_ID` | required | x |\n| `PAYMENTS_SIGNING_KEY` | required | x |\n\n" +
	"## Read by the OpenTelemetry SDK\n\n| `OTEL_SERVICE_NAME` | x | x |\n"

func problems(o Objects) []string {
	cfg := NewConfig(fixtureDoc, []string{"payments"})
	var out []string
	for _, w := range o.Workloads() {
		out = append(out, CheckSecurity(w)...)
		out = append(out, cfg.CheckLifecycle(o, w)...)
		out = append(out, cfg.CheckEnv(o, w)...)
	}
	out = append(out, CheckAvailability(o)...)
	out = append(out, CheckOpsPort(o)...)
	return out
}

func server(o Objects) *appsv1.Deployment { return o.Deployments[0] }

func container(o Objects) *corev1.Container { return &server(o).Spec.Template.Spec.Containers[0] }

// TestEveryRuleFailsABadObject feeds each rule of policy.go an object that
// breaks it and sees it fail, naming what is wrong.
func TestEveryRuleFailsABadObject(t *testing.T) {
	if p := problems(fixture(t)); len(p) > 0 {
		t.Fatalf("the fixture itself breaks the policy: %v", p)
	}
	no := false
	yes := true
	cases := []struct {
		name   string
		break_ func(o *Objects)
		want   string
	}{
		{"no readiness probe", func(o *Objects) { container(*o).ReadinessProbe = nil }, "no readiness probe"},
		{"readiness on the API port", func(o *Objects) { container(*o).ReadinessProbe.HTTPGet.Port = intstr.FromString("http") }, "no readiness probe"},
		{"no liveness probe", func(o *Objects) { container(*o).LivenessProbe = nil }, "no liveness probe"},
		{"no cpu limit", func(o *Objects) { delete(container(*o).Resources.Limits, corev1.ResourceCPU) }, "no cpu limit"},
		{"no memory limit", func(o *Objects) { delete(container(*o).Resources.Limits, corev1.ResourceMemory) }, "no memory limit"},
		{"no memory request on the Job", func(o *Objects) {
			delete(o.Jobs[0].Spec.Template.Spec.Containers[0].Resources.Requests, corev1.ResourceMemory)
		}, "Job payments-migrate, container payments: no memory request"},
		{"root", func(o *Objects) { server(*o).Spec.Template.Spec.SecurityContext.RunAsNonRoot = nil }, "runAsNonRoot"},
		{"writable root", func(o *Objects) { container(*o).SecurityContext.ReadOnlyRootFilesystem = &no }, "readOnlyRootFilesystem"},
		{"privilege escalation", func(o *Objects) { container(*o).SecurityContext.AllowPrivilegeEscalation = &yes }, "allowPrivilegeEscalation"},
		{"privilege escalation unset", func(o *Objects) { container(*o).SecurityContext.AllowPrivilegeEscalation = nil }, "allowPrivilegeEscalation"},
		{"capabilities kept", func(o *Objects) { container(*o).SecurityContext.Capabilities.Drop = []corev1.Capability{"NET_RAW"} }, "capabilities"},
		{"a capability added", func(o *Objects) { container(*o).SecurityContext.Capabilities.Add = []corev1.Capability{"NET_ADMIN"} }, "capabilities"},
		{"no seccomp", func(o *Objects) { server(*o).Spec.Template.Spec.SecurityContext.SeccompProfile = nil }, "seccompProfile"},
		{"unconfined seccomp", func(o *Objects) {
			container(*o).SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
		}, "seccompProfile"},
		{"grace shorter than the drain", func(o *Objects) {
			g := int64(20) // preStop 5 s + SHUTDOWN_TIMEOUT 15 s
			server(*o).Spec.Template.Spec.TerminationGracePeriodSeconds = &g
		}, "does not outlast"},
		{"a longer drain, the grace unchanged", func(o *Objects) { o.ConfigMaps["payments-config"].Data["SHUTDOWN_TIMEOUT"] = "30s" }, "does not outlast"},
		{"a variable payments does not read", func(o *Objects) {
			container(*o).Env = append(container(*o).Env, corev1.EnvVar{Name: "LEDGER_WORKERS", Value: "8"})
		}, "sets LEDGER_WORKERS, which payments does not read"},
		{"a misspelt variable in the ConfigMap", func(o *Objects) { o.ConfigMaps["payments-config"].Data["SHUTDOWN_TIMEOUTS"] = "15s" }, "sets SHUTDOWN_TIMEOUTS"},
		{"a required variable unset", func(o *Objects) { delete(o.ConfigMaps["payments-config"].Data, "PAYMENTS_TOPIC_ARN") }, "needs PAYMENTS_TOPIC_ARN"},
		{"the database unset on the Job", func(o *Objects) { o.Jobs[0].Spec.Template.Spec.Containers[0].Env = nil }, "payments migrate needs DATABASE_URL"},
		{"envFrom a ConfigMap the render lacks", func(o *Objects) { delete(o.ConfigMaps, "payments-config") }, "not in the render"},
		{"a container named for no service", func(o *Objects) { container(*o).Name = "api" }, "no service of cmd/"},
		{"no PodDisruptionBudget", func(o *Objects) { o.PDBs = nil }, "no PodDisruptionBudget"},
		{"no HorizontalPodAutoscaler", func(o *Objects) { o.HPAs = nil }, "no HorizontalPodAutoscaler"},
		{"no NetworkPolicy", func(o *Objects) { o.Policies = nil }, "no NetworkPolicy selects"},
		{"the ops port open to all", func(o *Objects) {
			np := o.Policies[0]
			np.Spec.Ingress = append(np.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{})
		}, "opens the ops port"},
		{"the ops port by number to a pod selector", func(o *Objects) {
			port := intstr.FromInt32(9090)
			np := o.Policies[0]
			np.Spec.Ingress[1].Ports = []networkingv1.NetworkPolicyPort{{Port: &port}}
			np.Spec.Ingress[0].Ports = append(np.Spec.Ingress[0].Ports, networkingv1.NetworkPolicyPort{Port: &port})
		}, "opens the ops port"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := fixture(t)
			c.break_(&o)
			got := problems(o)
			for _, p := range got {
				if strings.Contains(p, c.want) {
					return
				}
			}
			t.Errorf("got %v, want a problem saying %q", got, c.want)
		})
	}
}

func TestDecodeIsStrict(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown field":   "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replicas: 1\n  replica: 2\n",
		"duplicate field": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {A: b}\ndata: {A: c}\n",
		"misplaced field": "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  ports:\n    - port: 80\n      containerPort: 80\n",
		"unknown kind":    "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: x}\n",
	} {
		if _, err := Decode([]byte(doc)); err == nil {
			t.Errorf("%s: decoded without an error", name)
		}
	}
	if _, err := Decode([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {A: b}\n")); err != nil {
		t.Errorf("a valid ConfigMap: %v", err)
	}
}

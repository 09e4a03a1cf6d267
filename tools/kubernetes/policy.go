package kubernetes

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/payments-outbox/payments-outbox/internal/configdoc"
)

// PartOf is the label every object of the services carries
// (app.kubernetes.io/part-of); the policy holds the pods that carry it.
const PartOf = "payments-outbox"

// Objects are the objects of one rendered overlay, decoded strictly into
// the Kubernetes API types.
type Objects struct {
	All          []runtime.Object
	Deployments  []*appsv1.Deployment
	Jobs         []*batchv1.Job
	ConfigMaps   map[string]*corev1.ConfigMap
	Secrets      map[string]*corev1.Secret
	Services     []*corev1.Service
	Accounts     []*corev1.ServiceAccount
	PDBs         []*policyv1.PodDisruptionBudget
	HPAs         []*autoscalingv2.HorizontalPodAutoscaler
	Policies     []*networkingv1.NetworkPolicy
	Rules        []*monitoringv1.PrometheusRule
	Unrecognised []string
}

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, policyv1.AddToScheme,
		autoscalingv2.AddToScheme, networkingv1.AddToScheme, monitoringv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// Decode reads a multi-document YAML stream (what `kubectl kustomize`
// prints) into the API types. Strict: a field the type does not have, or
// one given twice, is an error — the API server would drop the one and
// keep either of the other, and the manifest would not say what runs.
func Decode(stream []byte) (Objects, error) {
	out := Objects{ConfigMaps: map[string]*corev1.ConfigMap{}, Secrets: map[string]*corev1.Secret{}}
	dec := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	var errs []error
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return out, err
		}
		if onlyComments(doc) {
			continue
		}
		obj, gvk, err := dec.Decode(doc, nil, nil)
		if err != nil {
			errs = append(errs, fmt.Errorf("document %d (%s): %w", i+1, gvk, err))
			continue
		}
		out.All = append(out.All, obj)
		switch o := obj.(type) {
		case *appsv1.Deployment:
			out.Deployments = append(out.Deployments, o)
		case *batchv1.Job:
			out.Jobs = append(out.Jobs, o)
		case *corev1.ConfigMap:
			out.ConfigMaps[o.Name] = o
		case *corev1.Secret:
			out.Secrets[o.Name] = o
		case *corev1.Service:
			out.Services = append(out.Services, o)
		case *corev1.ServiceAccount:
			out.Accounts = append(out.Accounts, o)
		case *policyv1.PodDisruptionBudget:
			out.PDBs = append(out.PDBs, o)
		case *autoscalingv2.HorizontalPodAutoscaler:
			out.HPAs = append(out.HPAs, o)
		case *networkingv1.NetworkPolicy:
			out.Policies = append(out.Policies, o)
		case *monitoringv1.PrometheusRule:
			out.Rules = append(out.Rules, o)
		case *corev1.Namespace:
		default:
			out.Unrecognised = append(out.Unrecognised, gvk.String())
		}
	}
	return out, errors.Join(errs...)
}

// Config is what the services read, from docs/CONFIGURATION.md: the rows of
// each service's tables (its own and "Every service"), and the variables
// the SDKs read (the OpenTelemetry SDK's table, and the AWS SDK's
// credentials, which the document names in prose).
type Config struct {
	Services map[string][]configdoc.Row
	SDK      map[string]bool
}

// awsSDK are the AWS SDK's default chain's variables (docs/CONFIGURATION.md's
// opening paragraph): a deployment may set them, no service reads them.
var awsSDK = []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"}

// NewConfig reads the configuration document for services.
func NewConfig(doc string, services []string) Config {
	c := Config{Services: map[string][]configdoc.Row{}, SDK: map[string]bool{}}
	for _, s := range services {
		c.Services[s] = configdoc.Service(doc, s)
	}
	for _, r := range configdoc.Rows(doc) {
		if strings.Contains(r.Section, "OpenTelemetry SDK") {
			c.SDK[r.Name] = true
		}
	}
	for _, v := range awsSDK {
		c.SDK[v] = true
	}
	return c
}

// Workload is a pod template of the services, named for messages.
type Workload struct {
	Where    string // "Deployment payments"
	Template corev1.PodTemplateSpec
	// LongRunning is a Deployment's: it needs probes and a grace period
	// that outlasts its drain. A Job runs to its end.
	LongRunning bool
}

// Workloads returns the pod templates of the services (part-of PartOf).
func (o Objects) Workloads() []Workload {
	var out []Workload
	for _, d := range o.Deployments {
		if d.Spec.Template.Labels["app.kubernetes.io/part-of"] == PartOf {
			out = append(out, Workload{Where: "Deployment " + d.Name, Template: d.Spec.Template, LongRunning: true})
		}
	}
	for _, j := range o.Jobs {
		if j.Spec.Template.Labels["app.kubernetes.io/part-of"] == PartOf {
			out = append(out, Workload{Where: "Job " + j.Name, Template: j.Spec.Template})
		}
	}
	return out
}

// CheckSecurity fails a workload that is not held to Kubernetes' restricted
// pod security profile: non-root, read-only root file system, no privilege
// escalation, every capability dropped, the runtime's default seccomp
// profile; and one whose containers lack requests and limits of CPU and
// memory (the scheduler's and the node's only protection from it).
func CheckSecurity(w Workload) []string {
	var out []string
	pod := w.Template.Spec
	psc := pod.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		at := fmt.Sprintf("%s, container %s", w.Where, c.Name)
		sc := c.SecurityContext
		if sc == nil {
			sc = &corev1.SecurityContext{}
		}
		if !isTrue(sc.RunAsNonRoot) && !(sc.RunAsNonRoot == nil && isTrue(psc.RunAsNonRoot)) {
			out = append(out, at+": runAsNonRoot is not true")
		}
		if !isTrue(sc.ReadOnlyRootFilesystem) {
			out = append(out, at+": readOnlyRootFilesystem is not true")
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			out = append(out, at+": allowPrivilegeEscalation is not false")
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
			out = append(out, at+": capabilities do not drop ALL (and add none)")
		}
		seccomp := psc.SeccompProfile
		if sc.SeccompProfile != nil {
			seccomp = sc.SeccompProfile
		}
		if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
			out = append(out, at+": seccompProfile is not RuntimeDefault")
		}
		if sc.Privileged != nil && *sc.Privileged {
			out = append(out, at+": privileged")
		}
		for _, kind := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if _, ok := c.Resources.Requests[kind]; !ok {
				out = append(out, fmt.Sprintf("%s: no %s request", at, kind))
			}
			if _, ok := c.Resources.Limits[kind]; !ok {
				out = append(out, fmt.Sprintf("%s: no %s limit", at, kind))
			}
		}
	}
	if pod.HostNetwork || pod.HostPID || pod.HostIPC {
		out = append(out, w.Where+": shares the host's network, PIDs or IPC")
	}
	return out
}

func isTrue(b *bool) bool { return b != nil && *b }

// Env is the environment a container is given: its env and the ConfigMaps
// and Secrets of its envFrom, which must be in the render (else the manifest
// would not say what the service reads).
func (o Objects) Env(w Workload, c corev1.Container) (map[string]bool, map[string]string, []string) {
	names, values := map[string]bool{}, map[string]string{}
	var problems []string
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			cm, ok := o.ConfigMaps[from.ConfigMapRef.Name]
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: envFrom ConfigMap %s is not in the render", w.Where, from.ConfigMapRef.Name))
				continue
			}
			for k, v := range cm.Data {
				names[from.Prefix+k], values[from.Prefix+k] = true, v
			}
		case from.SecretRef != nil:
			s, ok := o.Secrets[from.SecretRef.Name]
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: envFrom Secret %s is not in the render: name each variable with a secretKeyRef", w.Where, from.SecretRef.Name))
				continue
			}
			for k := range s.Data {
				names[from.Prefix+k] = true
			}
			for k := range s.StringData {
				names[from.Prefix+k] = true
			}
		}
	}
	for _, e := range c.Env {
		names[e.Name] = true
		if e.ValueFrom == nil {
			values[e.Name] = e.Value
		} else {
			delete(values, e.Name)
		}
	}
	return names, values, problems
}

// Command is the service command a container runs: its first argument, or
// serve.
func Command(c corev1.Container) string {
	if len(c.Args) == 0 {
		return "serve"
	}
	return c.Args[0]
}

// CheckEnv fails a container given a variable its service does not read
// (the service's tables, "Every service" and the SDKs'), and a server (a
// `serve` container) that lacks a variable the tables mark required; other
// commands (migrate, inbox process) need the required ones of "Every
// service" only.
func (cfg Config) CheckEnv(o Objects, w Workload) []string {
	var out []string
	for _, c := range w.Template.Spec.Containers {
		rows, ok := cfg.Services[c.Name]
		if !ok {
			out = append(out, fmt.Sprintf("%s: container %s is no service of cmd/: name the container after the service it runs", w.Where, c.Name))
			continue
		}
		names, _, problems := o.Env(w, c)
		out = append(out, problems...)
		for _, n := range sortedKeys(names) {
			if !cfg.SDK[n] && !slices.ContainsFunc(rows, func(r configdoc.Row) bool { return r.Name == n }) {
				out = append(out, fmt.Sprintf("%s: %s sets %s, which %s does not read (docs/CONFIGURATION.md lists no such row for it)", w.Where, c.Name, n, c.Name))
			}
		}
		serve := Command(c) == "serve"
		for _, r := range rows {
			if r.Required() && (serve || r.Section != c.Name) && !names[r.Name] {
				out = append(out, fmt.Sprintf("%s: %s %s needs %s (required in docs/CONFIGURATION.md), which nothing sets", w.Where, c.Name, Command(c), r.Name))
			}
		}
	}
	return out
}

// CheckLifecycle fails a long-running workload whose containers lack a
// readiness probe on /readyz or a liveness probe on /healthz of the ops
// port, or whose pod is killed before it can drain: the grace period must
// outlast the preStop pause plus the service's SHUTDOWN_TIMEOUT (its value,
// else the default docs/CONFIGURATION.md gives).
func (cfg Config) CheckLifecycle(o Objects, w Workload) []string {
	if !w.LongRunning {
		return nil
	}
	var out []string
	pod := w.Template.Spec
	grace := 30 * time.Second // Kubernetes' default
	if pod.TerminationGracePeriodSeconds != nil {
		grace = time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	}
	for _, c := range pod.Containers {
		at := fmt.Sprintf("%s, container %s", w.Where, c.Name)
		if !probes(c.ReadinessProbe, "/readyz") {
			out = append(out, at+": no readiness probe on /readyz of the ops port")
		}
		if !probes(c.LivenessProbe, "/healthz") {
			out = append(out, at+": no liveness probe on /healthz of the ops port")
		}
		_, values, _ := o.Env(w, c)
		shutdown, err := cfg.duration(c.Name, "SHUTDOWN_TIMEOUT", values)
		if err != nil {
			out = append(out, at+": "+err.Error())
			continue
		}
		var pause time.Duration
		if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
			pause = time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
		}
		if grace <= pause+shutdown {
			out = append(out, fmt.Sprintf("%s: terminationGracePeriodSeconds %s does not outlast the preStop pause %s + SHUTDOWN_TIMEOUT %s: SIGKILL would cut the drain", at, grace, pause, shutdown))
		}
	}
	return out
}

func probes(p *corev1.Probe, path string) bool {
	return p != nil && p.HTTPGet != nil && p.HTTPGet.Path == path && p.HTTPGet.Port.String() == "ops"
}

// duration is name's value for service: values' if set, else the documented
// default.
func (cfg Config) duration(service, name string, values map[string]string) (time.Duration, error) {
	v, ok := values[name]
	if !ok {
		for _, r := range cfg.Services[service] {
			if r.Name == name {
				v, ok = r.DefaultValue()
			}
		}
	}
	if !ok {
		return 0, fmt.Errorf("%s has no value and docs/CONFIGURATION.md no default", name)
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: %w", name, v, err)
	}
	return d, nil
}

// CheckAvailability fails a Deployment of the services that no
// PodDisruptionBudget covers or no HorizontalPodAutoscaler scales.
func CheckAvailability(o Objects) []string {
	var out []string
	for _, d := range o.Deployments {
		if d.Spec.Template.Labels["app.kubernetes.io/part-of"] != PartOf {
			continue
		}
		pods := labels.Set(d.Spec.Template.Labels)
		if !slices.ContainsFunc(o.PDBs, func(p *policyv1.PodDisruptionBudget) bool {
			sel, err := metav1LabelSelector(p.Spec.Selector)
			return err == nil && !sel.Empty() && sel.Matches(pods)
		}) {
			out = append(out, "Deployment "+d.Name+": no PodDisruptionBudget selects its pods")
		}
		if !slices.ContainsFunc(o.HPAs, func(h *autoscalingv2.HorizontalPodAutoscaler) bool {
			return h.Spec.ScaleTargetRef.Kind == "Deployment" && h.Spec.ScaleTargetRef.Name == d.Name
		}) {
			out = append(out, "Deployment "+d.Name+": no HorizontalPodAutoscaler scales it")
		}
	}
	return out
}

// CheckOpsPort fails unless a NetworkPolicy selects every pod of the
// services, and every rule that opens their ops port (named, or all ports)
// admits the monitoring namespace only.
func CheckOpsPort(o Objects) []string {
	var out []string
	for _, w := range o.Workloads() {
		if !w.LongRunning {
			continue
		}
		pods := labels.Set(w.Template.Labels)
		covered := false
		for _, np := range o.Policies {
			sel, err := metav1LabelSelector(&np.Spec.PodSelector)
			if err != nil || !sel.Matches(pods) || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
				continue
			}
			covered = true
			for i, rule := range np.Spec.Ingress {
				opensOps := len(rule.Ports) == 0 || slices.ContainsFunc(rule.Ports, func(p networkingv1.NetworkPolicyPort) bool {
					return p.Port == nil || p.Port.String() == "ops" || opsNumber(w, p.Port.IntValue())
				})
				if opensOps && !monitoringOnly(rule.From) {
					out = append(out, fmt.Sprintf("NetworkPolicy %s, ingress rule %d: opens the ops port of %s to more than the monitoring namespace", np.Name, i+1, w.Where))
				}
			}
		}
		if !covered {
			out = append(out, w.Where+": no NetworkPolicy selects its pods, so its ops port is open to the cluster")
		}
	}
	return out
}

func opsNumber(w Workload, port int) bool {
	for _, c := range w.Template.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == "ops" && int(p.ContainerPort) == port {
				return true
			}
		}
	}
	return false
}

func monitoringOnly(from []networkingv1.NetworkPolicyPeer) bool {
	if len(from) == 0 {
		return false // every source
	}
	for _, peer := range from {
		if peer.IPBlock != nil || peer.PodSelector != nil && peer.NamespaceSelector == nil || peer.NamespaceSelector == nil {
			return false
		}
		if peer.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "monitoring" || len(peer.NamespaceSelector.MatchExpressions) > 0 {
			return false
		}
	}
	return true
}

// onlyComments reports whether a YAML document holds nothing but comments
// and blank lines, as a generated file's header does.
func onlyComments(doc []byte) bool {
	for _, l := range bytes.Split(doc, []byte("\n")) {
		l = bytes.TrimSpace(l)
		if len(l) > 0 && l[0] != '#' && !bytes.Equal(l, []byte("---")) {
			return false
		}
	}
	return true
}

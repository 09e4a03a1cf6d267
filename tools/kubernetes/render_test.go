package kubernetes

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// root is the repository's root, from this package's directory.
const root = "../.."

// overlays are the environments deploy/kubernetes renders.
var overlays = []string{"local", "aws"}

// render is `kubectl kustomize` of an overlay. kubectl is on the developers'
// machines and CI's; without it the test skips, and fails under CI: CI must
// never go green by skipping.
func render(t *testing.T, overlay string) []byte {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but kubectl is not installed: the manifests cannot be rendered")
		}
		t.Skip("kubectl not installed: install it to render and check deploy/kubernetes")
	}
	var stderr bytes.Buffer
	cmd := exec.Command(kubectl, "kustomize", filepath.Join(root, "deploy/kubernetes/overlays", overlay))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize overlays/%s: %v\n%s", overlay, err, stderr.String())
	}
	return out
}

func decoded(t *testing.T, overlay string) Objects {
	t.Helper()
	o, err := Decode(render(t, overlay))
	if err != nil {
		t.Fatalf("overlays/%s does not decode into the Kubernetes API types: %v", overlay, err)
	}
	return o
}

// services are the directories under cmd/ but cmd/internal, as the root's
// config_doc_test finds them.
func services(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(root, "cmd"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "internal" {
			out = append(out, e.Name())
		}
	}
	if len(out) < 2 {
		t.Fatalf("found services %v under cmd/; the test looks in the wrong place", out)
	}
	return out
}

func config(t *testing.T) Config {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(root, "docs/CONFIGURATION.md"))
	if err != nil {
		t.Fatal(err)
	}
	return NewConfig(string(doc), services(t))
}

func TestOverlaysRenderAndDecodeStrictly(t *testing.T) {
	for _, overlay := range overlays {
		t.Run(overlay, func(t *testing.T) {
			o := decoded(t, overlay)
			if len(o.Unrecognised) > 0 {
				t.Errorf("kinds the test does not check: %v; decode and check them in policy.go", o.Unrecognised)
			}
			if len(o.Deployments) < 3 || len(o.Jobs) < 2 {
				t.Fatalf("%d Deployments, %d Jobs: the render is not what the test expects", len(o.Deployments), len(o.Jobs))
			}
		})
	}
}

// TestOverlaysMeetThePolicy renders every overlay and holds each of the
// services' workloads to the rules of policy.go, each of which
// policy_test.go shows failing on a bad object.
func TestOverlaysMeetThePolicy(t *testing.T) {
	cfg := config(t)
	for _, overlay := range overlays {
		t.Run(overlay, func(t *testing.T) {
			o := decoded(t, overlay)
			var problems []string
			for _, w := range o.Workloads() {
				problems = append(problems, CheckSecurity(w)...)
				problems = append(problems, cfg.CheckLifecycle(o, w)...)
				if pending := pendingServices(w, cfg); len(pending) > 0 {
					// A service whose manifests are written before its code
					// has landed: its environment cannot be held to
					// tables that do not exist yet.
					t.Logf("%s: the environment of %v is not checked: no cmd/ directory of that name in this tree", w.Where, pending)
					continue
				}
				problems = append(problems, cfg.CheckEnv(o, w)...)
			}
			problems = append(problems, CheckAvailability(o)...)
			problems = append(problems, CheckOpsPort(o)...)
			for _, p := range problems {
				t.Error(p)
			}
		})
	}
}

func pendingServices(w Workload, cfg Config) []string {
	var out []string
	for _, c := range w.Template.Spec.Containers {
		if _, ok := cfg.Services[c.Name]; !ok {
			out = append(out, c.Name)
		}
	}
	return out
}

// TestEveryServiceIsDeployed fails when a service of cmd/ has no server
// Deployment (running `serve`) or no migrate Job in an overlay: a service
// added to the code and forgotten by the manifests.
func TestEveryServiceIsDeployed(t *testing.T) {
	for _, overlay := range overlays {
		t.Run(overlay, func(t *testing.T) {
			o := decoded(t, overlay)
			for _, svc := range services(t) {
				var serves, migrates bool
				for _, w := range o.Workloads() {
					for _, c := range w.Template.Spec.Containers {
						if c.Name != svc {
							continue
						}
						serves = serves || w.LongRunning && Command(c) == "serve"
						migrates = migrates || !w.LongRunning && Command(c) == "migrate"
					}
				}
				if !serves {
					t.Errorf("cmd/%s has no Deployment running `%s serve` in overlays/%s", svc, svc, overlay)
				}
				if !migrates {
					t.Errorf("cmd/%s has no Job running `%s migrate` in overlays/%s", svc, svc, overlay)
				}
				for _, w := range o.Workloads() {
					for _, c := range w.Template.Spec.Containers {
						if c.Name != svc || !w.LongRunning {
							continue
						}
						if _, values, _ := o.Env(w, c); values["MIGRATE_ON_START"] != "false" {
							t.Errorf("%s: MIGRATE_ON_START is not false: the schema is the migrate Job's, once per release, before the pods roll", w.Where)
						}
					}
				}
			}
		})
	}
}

// TestAWSServiceAccountsHaveIAMRoles: in the aws overlay every
// ServiceAccount of the services names its IAM role (IRSA), and that role's
// policy document is in overlays/aws/iam.
func TestAWSServiceAccountsHaveIAMRoles(t *testing.T) {
	o := decoded(t, "aws")
	if len(o.Accounts) < 3 {
		t.Fatalf("%d ServiceAccounts in overlays/aws", len(o.Accounts))
	}
	for _, sa := range o.Accounts {
		arn := sa.Annotations["eks.amazonaws.com/role-arn"]
		if !strings.HasPrefix(arn, "arn:aws:iam::") || !strings.HasSuffix(arn, ":role/"+PartOf+"-"+sa.Name) {
			t.Errorf("ServiceAccount %s: role annotation %q, want arn:aws:iam::ACCOUNT:role/%s-%s", sa.Name, arn, PartOf, sa.Name)
		}
		if _, err := os.Stat(filepath.Join(root, "deploy/kubernetes/overlays/aws/iam", sa.Name+".json")); err != nil {
			t.Errorf("ServiceAccount %s: its role's policy document: %v", sa.Name, err)
		}
	}
}

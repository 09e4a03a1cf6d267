package stack

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"
	"go.yaml.in/yaml/v3"
)

// observability is the compose profile of Prometheus, Grafana and Jaeger:
// `docker compose --profile observability up`, or `make up-observability`.
const observability = "observability"

// observabilityServices are the profile's services; the files they mount
// are in observability/.
var observabilityServices = []string{"grafana", "jaeger", "prometheus"}

// The profile adds its services and nothing else: a plain `docker compose
// up` runs none of them, and nothing of the system depends on them.
func TestComposeObservabilityProfile(t *testing.T) {
	plain := loadCompose(t)
	for _, name := range observabilityServices {
		if _, ok := plain.Services[name]; ok {
			t.Errorf("%s runs without --profile observability", name)
		}
	}
	p := loadComposeProfiles(t, []string{observability})
	var got []string
	for name, s := range p.Services {
		if len(s.Profiles) > 0 {
			got = append(got, name)
			if !slices.Equal(s.Profiles, []string{observability}) {
				t.Errorf("%s has profiles %v, want [%s]", name, s.Profiles, observability)
			}
		}
		if _, ok := plain.Services[name]; ok {
			for dep := range s.DependsOn {
				if slices.Contains(observabilityServices, dep) {
					t.Errorf("%s depends on %s: the default stack would need the observability profile", name, dep)
				}
			}
		}
	}
	sort.Strings(got)
	if !slices.Equal(got, observabilityServices) {
		t.Errorf("services with a profile: %v, want %v", got, observabilityServices)
	}
	// What they mount is in the repository.
	for _, name := range observabilityServices {
		for _, v := range p.Services[name].Volumes {
			if v.Type != types.VolumeTypeBind {
				continue
			}
			rel, err := filepath.Rel(mustAbs(t, "../.."), v.Source)
			if err != nil || !strings.HasPrefix(rel, "observability/") {
				t.Errorf("%s mounts %s; keep the profile's files in observability/", name, v.Source)
			}
			if _, err := os.Stat(v.Source); err != nil {
				t.Errorf("%s mounts %s: %v", name, rel, err)
			}
		}
	}
}

// composeEnv is the environment compose gives service.
func composeEnv(p *types.Project, service string) map[string]string {
	env := map[string]string{}
	for k, v := range p.Services[service].Environment {
		if v != nil {
			env[k] = *v
		}
	}
	return env
}

// Tracing is off in a plain `docker compose up` (an empty
// OTEL_EXPORTER_OTLP_ENDPOINT), and `make up-observability` points both
// services at the profile's Jaeger, each under its own service name.
func TestComposeTracingIsOffUnlessTheProfileAsks(t *testing.T) {
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	var recipe string
	for _, line := range strings.Split(string(makefile), "\n") {
		if strings.Contains(line, "docker compose") && strings.Contains(line, "--profile "+observability+" up") {
			recipe = line
		}
	}
	_, endpoint, ok := strings.Cut(recipe, "OTLP_ENDPOINT=")
	endpoint, _, _ = strings.Cut(endpoint, " ")
	if !ok || endpoint == "" {
		t.Fatalf("the Makefile has no `OTLP_ENDPOINT=… docker compose --profile %s up` line (found %q)", observability, recipe)
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	profile := loadComposeProfiles(t, []string{observability}, "OTLP_ENDPOINT="+endpoint)
	if u.Hostname() != "jaeger" || u.Port() != "4318" {
		t.Errorf("make up-observability sends traces to %s, want Jaeger's OTLP/HTTP receiver, http://jaeger:4318", endpoint)
	}
	for _, name := range []string{"payments", "ledger", "webhooks"} {
		if got := composeEnv(loadCompose(t), name)["OTEL_EXPORTER_OTLP_ENDPOINT"]; got != "" {
			t.Errorf("%s: OTEL_EXPORTER_OTLP_ENDPOINT = %q by default, want empty (tracing off)", name, got)
		}
		env := composeEnv(profile, name)
		if got := env["OTEL_EXPORTER_OTLP_ENDPOINT"]; got != endpoint {
			t.Errorf("%s: OTEL_EXPORTER_OTLP_ENDPOINT = %q with OTLP_ENDPOINT set, want %q", name, got, endpoint)
		}
		if got := env["OTEL_SERVICE_NAME"]; got != name {
			t.Errorf("%s: OTEL_SERVICE_NAME = %q, want %q", name, got, name)
		}
	}
}

// listens reports whether service serves on port inside the compose
// network: a port it publishes, or its OPS_ADDR.
func listens(p *types.Project, service, port string) bool {
	s, ok := p.Services[service]
	if !ok {
		return false
	}
	for _, pc := range s.Ports {
		if strconv.Itoa(int(pc.Target)) == port {
			return true
		}
	}
	return composeEnv(p, service)["OPS_ADDR"] == "0.0.0.0:"+port
}

// Prometheus scrapes each service's ops listener by its compose name, and
// Grafana's data sources are the profile's Prometheus and Jaeger.
func TestObservabilityTargetsAreComposeServices(t *testing.T) {
	p := loadComposeProfiles(t, []string{observability})
	var prom struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	readYAML(t, "../../observability/prometheus/prometheus.yml", &prom)
	scraped := map[string]bool{}
	for _, sc := range prom.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			for _, target := range st.Targets {
				host, port, err := net.SplitHostPort(target)
				if err != nil {
					t.Errorf("scrape target %q: %v", target, err)
					continue
				}
				if !listens(p, host, port) {
					t.Errorf("Prometheus scrapes %s, which is no compose service's OPS_ADDR or port", target)
				}
				if composeEnv(p, host)["OPS_ADDR"] != "0.0.0.0:"+port {
					t.Errorf("Prometheus scrapes %s, not %s's OPS_ADDR: /metrics is only there", target, host)
				}
				if sc.JobName != host {
					t.Errorf("scrape job %q scrapes %s; name the job after the service (the dashboard shows it)", sc.JobName, host)
				}
				scraped[host] = true
			}
		}
	}
	for _, name := range []string{"payments", "ledger", "webhooks"} {
		if !scraped[name] {
			t.Errorf("Prometheus does not scrape %s", name)
		}
	}
	// The rule files are mounted beside the configuration, where
	// rule_files (relative to it) finds them.
	mounted := map[string]string{}
	for _, v := range p.Services["prometheus"].Volumes {
		mounted[v.Target] = v.Source
	}
	for _, rf := range append([]string{"prometheus.yml"}, prom.RuleFiles...) {
		src, ok := mounted["/etc/prometheus/"+rf]
		if !ok {
			t.Errorf("prometheus does not mount %s at /etc/prometheus/%s", rf, rf)
		} else if filepath.Base(src) != rf {
			t.Errorf("prometheus mounts %s at /etc/prometheus/%s", src, rf)
		}
	}

	var ds struct {
		Datasources []struct {
			Type, UID, URL string
		} `yaml:"datasources"`
	}
	readYAML(t, "../../observability/grafana/provisioning/datasources/datasources.yml", &ds)
	types := map[string]bool{}
	for _, d := range ds.Datasources {
		types[d.Type] = true
		u, err := url.Parse(d.URL)
		if err != nil || !listens(p, u.Hostname(), u.Port()) {
			t.Errorf("Grafana's %s data source is %s, which no compose service serves (%v)", d.Type, d.URL, err)
		}
	}
	if !types["prometheus"] || !types["jaeger"] {
		t.Errorf("Grafana's data sources are of types %v, want prometheus and jaeger", types)
	}

	// Grafana finds its provisioning where it looks, and the dashboards
	// where the provider says; its home dashboard is one of them.
	grafana := map[string]string{}
	for _, v := range p.Services["grafana"].Volumes {
		rel, _ := filepath.Rel(mustAbs(t, "../.."), v.Source)
		grafana[v.Target] = rel
	}
	for _, dir := range []string{"datasources", "dashboards"} {
		if got := grafana["/etc/grafana/provisioning/"+dir]; got != "observability/grafana/provisioning/"+dir {
			t.Errorf("grafana mounts %q at /etc/grafana/provisioning/%s, want observability/grafana/provisioning/%s", got, dir, dir)
		}
	}
	var providers struct {
		Providers []struct {
			Options struct{ Path string } `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, "../../observability/grafana/provisioning/dashboards/dashboards.yml", &providers)
	if len(providers.Providers) != 1 {
		t.Fatalf("%d dashboard providers, want 1", len(providers.Providers))
	}
	dir := providers.Providers[0].Options.Path
	if got := grafana[dir]; got != "observability/grafana/dashboards" {
		t.Errorf("the dashboard provider reads %s, where grafana mounts %q, want observability/grafana/dashboards", dir, got)
	}
	home := composeEnv(p, "grafana")["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
	if rel, ok := strings.CutPrefix(home, dir+"/"); !ok {
		t.Errorf("Grafana's home dashboard %q is not in %s", home, dir)
	} else if _, err := os.Stat("../../observability/grafana/dashboards/" + rel); err != nil {
		t.Errorf("Grafana's home dashboard: %v", err)
	}
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

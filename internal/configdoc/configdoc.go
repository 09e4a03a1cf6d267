// Package configdoc reads the tables of docs/CONFIGURATION.md: which
// environment variables each service reads, and their defaults. One parse for
// every test that holds something to that document — the root's
// config_doc_test.go, which keeps the tables equal to the code, and the
// Kubernetes manifests' policy test (tools/kubernetes), which holds every
// Deployment's environment to them — so that neither can read the document
// differently from the other.
package configdoc

import (
	"regexp"
	"slices"
	"strings"
)

// Row is one variable of one table.
type Row struct {
	// Name is the variable, e.g. DATABASE_URL. A row that names several
	// (`OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG`) is a Row each.
	Name string
	// Section is the "## " heading above the table, as written.
	Section string
	// Default is the second column with its backticks removed: "15s",
	// "required", "unset = real AWS".
	Default string
}

// Required reports whether the service refuses to start without it.
func (r Row) Required() bool { return r.Default == "required" }

var (
	nameInCell = regexp.MustCompile("`([A-Z][A-Z0-9_]*)`")
	// DefaultValue is the first backticked value of a default cell:
	// "`:8080` payments, `:8081` ledger" gives ":8080".
	defaultValue = regexp.MustCompile("`([^`]*)`")
)

// Rows returns every variable of every table of doc, each under the heading
// of its section. Fenced code blocks are skipped; a table row is a line
// starting "| `".
func Rows(doc string) []Row {
	var out []Row
	section := ""
	inFence := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if inFence {
			continue
		}
		if h, ok := strings.CutPrefix(line, "## "); ok {
			section = strings.TrimSpace(h)
			continue
		}
		if section == "" || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, "|")
		def := ""
		if len(cells) > 2 {
			def = strings.TrimSpace(cells[2])
		}
		for _, m := range nameInCell.FindAllStringSubmatch(cells[1], -1) {
			out = append(out, Row{Name: m[1], Section: section, Default: def})
		}
	}
	return out
}

// DefaultValue returns the first value the default cell quotes ("`15s`" gives
// "15s"; "`:9090` payments, `:9091` ledger" gives ":9090") and whether it
// quotes one.
func (r Row) DefaultValue() (string, bool) {
	m := defaultValue.FindStringSubmatch(r.Default)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// ForService reports whether the row's section is the tables of service: a
// section named after it, or one that says "every service".
// Other sections (what only an SDK, compose or a script reads) are no
// service's.
func (r Row) ForService(service string) bool {
	return r.Section == service || strings.Contains(strings.ToLower(r.Section), "every service")
}

// ServiceTables returns, for every variable the service tables list, the
// services it is listed for (see ForService).
func ServiceTables(doc string, services []string) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, r := range Rows(doc) {
		for _, s := range services {
			if !r.ForService(s) {
				continue
			}
			if out[r.Name] == nil {
				out[r.Name] = map[string]bool{}
			}
			out[r.Name][s] = true
		}
	}
	return out
}

// Service returns the rows that service reads: its own section's and the
// ones of every section for every service.
func Service(doc, service string) []Row {
	return slices.DeleteFunc(Rows(doc), func(r Row) bool { return !r.ForService(service) })
}

package apiclients_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// generateLines returns the arguments of each //go:generate line of
// apiclients.go: the commands that make the clients.
func generateLines(t *testing.T) [][]string {
	t.Helper()
	src, err := os.ReadFile("apiclients.go")
	if err != nil {
		t.Fatal(err)
	}
	var cmds [][]string
	for l := range strings.Lines(string(src)) {
		if rest, ok := strings.CutPrefix(l, "//go:generate "); ok {
			cmds = append(cmds, strings.Fields(rest))
		}
	}
	return cmds
}

// TestEveryDocumentHasItsClient: each API's document but the operational
// listener's (no client calls /healthz) is generated into <api>client.
func TestEveryDocumentHasItsClient(t *testing.T) {
	docs, err := filepath.Glob("../../api/*.openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, d := range docs {
		if name := strings.TrimSuffix(filepath.Base(d), ".openapi.yaml"); name != "ops" {
			want = append(want, name)
		}
	}
	var got []string
	for _, args := range generateLines(t) {
		doc := args[len(args)-1]
		name := strings.TrimSuffix(filepath.Base(doc), ".openapi.yaml")
		got = append(got, name)
		if pkg := flagValue(args, "-package"); pkg != name+"client" {
			t.Errorf("%s generates package %q, want %sclient", doc, pkg, name)
		}
		if out := flagValue(args, "-o"); out != name+"client/client.gen.go" {
			t.Errorf("%s generates into %q, want %sclient/client.gen.go", doc, out, name)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("//go:generate makes the clients of %v, api/ has the documents of %v", got, want)
	}
}

// TestClientsAreGenerated runs each //go:generate command into a temporary
// file and requires the committed client to be byte for byte what the
// generator makes of the document now: a document changed without its
// client fails here. It fetches the pinned generator through the Go module
// proxy (once; the module cache keeps it).
func TestClientsAreGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("fetches and runs the pinned oapi-codegen")
	}
	for _, args := range generateLines(t) {
		committed := flagValue(args, "-o")
		t.Run(filepath.Dir(committed), func(t *testing.T) {
			fresh := filepath.Join(t.TempDir(), "client.gen.go")
			args := slices.Clone(args)
			args[slices.Index(args, "-o")+1] = fresh
			cmd := exec.CommandContext(t.Context(), args[0], args[1:]...)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
			}
			want, err := os.ReadFile(fresh)
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(committed)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("tools/apiclients/%s is not what oapi-codegen makes of %s now: run `go -C tools generate ./apiclients`", committed, args[len(args)-1])
			}
		})
	}
}

// TestContractsGivesTheGenerator: the command docs/CONTRACTS.md gives a
// client's team is the one that made these clients, at the same version.
func TestContractsGivesTheGenerator(t *testing.T) {
	doc, err := os.ReadFile("../../docs/CONTRACTS.md")
	if err != nil {
		t.Fatal(err)
	}
	// go run MODULE@VERSION -generate … -package paymentsclient -o … api/payments.openapi.yaml,
	// continued over lines with \ as a shell reads it.
	doc = regexp.MustCompile(`\\\n\s*`).ReplaceAll(doc, []byte(" "))
	got := regexp.MustCompile(`go run (\S+)\s+(-generate \S+) -package paymentsclient -o (\S+) (\S+)`).FindSubmatch(doc)
	if got == nil {
		t.Fatal("docs/CONTRACTS.md gives no `go run … -generate … -package paymentsclient -o … api/payments.openapi.yaml` command")
	}
	for _, args := range generateLines(t) {
		if flagValue(args, "-package") != "paymentsclient" {
			continue
		}
		if string(got[1]) != args[2] || string(got[2]) != strings.Join(args[3:5], " ") || string(got[4]) != "api/payments.openapi.yaml" {
			t.Errorf("docs/CONTRACTS.md gives `%s`; the clients are made by `%s`", got[0], strings.Join(args, " "))
		}
	}
}

func flagValue(args []string, name string) string {
	if i := slices.Index(args, name); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

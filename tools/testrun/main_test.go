package main

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// testrun names packages from the repository root and runs each in the
// module that holds it; ./... is both modules whole.
func TestPlanGivesEachPackageItsModule(t *testing.T) {
	const root = "/repo"
	tools := filepath.Join(root, "tools")
	tests := []struct {
		args    []string
		flags   []string
		modules []module
	}{
		{nil, nil, []module{{root, []string{"./..."}}, {tools, []string{"./..."}}}},
		{[]string{"-count=1", "-timeout", "20m", "./..."}, []string{"-count=1", "-timeout", "20m"},
			[]module{{root, []string{"./..."}}, {tools, []string{"./..."}}}},
		{[]string{"-run", "TestX/y", "./adapters/sqs/...", "."}, []string{"-run", "TestX/y"},
			[]module{{root, []string{"./adapters/sqs/...", "."}}}},
		{[]string{"./tools/faultsuite", "./tools/..."}, nil, []module{{tools, []string{"./faultsuite", "./..."}}}},
		{[]string{"./tools", "./cmd/ledger/"}, nil, []module{{root, []string{"./cmd/ledger"}}, {tools, []string{"."}}}},
		// A directory named like the tools module's, elsewhere, is not it.
		{[]string{"./adapters/tools"}, nil, []module{{root, []string{"./adapters/tools"}}}},
		{[]string{"./toolsmith"}, nil, []module{{root, []string{"./toolsmith"}}}},
	}
	for _, tt := range tests {
		flags, modules, err := plan(tt.args, root)
		if err != nil {
			t.Errorf("plan(%q): %v", tt.args, err)
			continue
		}
		if !reflect.DeepEqual(flags, tt.flags) || !reflect.DeepEqual(modules, tt.modules) {
			t.Errorf("plan(%q) = %q, %v; want %q, %v", tt.args, flags, modules, tt.flags, tt.modules)
		}
	}
	if _, _, err := plan([]string{"./../elsewhere"}, root); err == nil {
		t.Error("plan(./../elsewhere): got nil, want an error: the package is outside the repository")
	}
}

// Under CI a server that cannot be started fails the run before any test
// runs, with the reason; elsewhere the run goes on, and the tests skip.
func TestStartServersFailsUnderCIWithTheReason(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "absent.sock")
	t.Setenv("DOCKER_HOST", "unix://"+sock)
	env := map[string]string{"CI": "true", "AWS_ENDPOINT_URL": "http://127.0.0.1:1"}
	var out strings.Builder
	_, stop, err := startServers(t.Context(), func(k string) string { return env[k] }, &out)
	stop()
	want := "CI is set, DATABASE_URL is unset, and no Postgres container: no Docker engine answers at unix://" + sock
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %v, want %q…", err, want)
	}

	delete(env, "CI")
	out.Reset()
	servers, stop, err := startServers(t.Context(), func(k string) string { return env[k] }, &out)
	stop()
	if err != nil || len(servers) != 0 || !strings.Contains(out.String(), "testrun: no Postgres: no Docker engine answers at unix://"+sock) {
		t.Errorf("outside CI: %v, %v, output\n%s\nwant no error, no server and the reason printed", servers, err, out.String())
	}
}

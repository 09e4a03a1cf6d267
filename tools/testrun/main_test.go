package main

import (
	"path/filepath"
	"reflect"
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

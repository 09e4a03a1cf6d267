package kubernetes

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// TestIAMPoliciesAreSecurityMDs holds the aws overlay's IAM policy documents
// (overlays/aws/iam/*.json) to docs/SECURITY.md's "Least-privilege AWS":
// every document there is a file here and every file here a document there,
// equal as JSON. The manifests ship what the security document says, no
// more and no less.
func TestIAMPoliciesAreSecurityMDs(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "docs/SECURITY.md"))
	if err != nil {
		t.Fatal(err)
	}
	section, ok := strings.CutPrefix(string(doc[strings.Index(string(doc), "## Least-privilege AWS"):]), "## Least-privilege AWS")
	if !ok {
		t.Fatal("docs/SECURITY.md has no section \"Least-privilege AWS\"")
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	var documented []any
	for _, m := range regexp.MustCompile("(?s)```json\n(.*?)```").FindAllStringSubmatch(section, -1) {
		var v any
		if err := json.Unmarshal([]byte(m[1]), &v); err != nil {
			t.Fatalf("docs/SECURITY.md: a policy that is not JSON: %v", err)
		}
		documented = append(documented, v)
	}
	files, err := filepath.Glob(filepath.Join(root, "deploy/kubernetes/overlays/aws/iam/*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(documented) < 3 || len(files) < 3 {
		t.Fatalf("%d policies in docs/SECURITY.md, %d files; the test reads the wrong places", len(documented), len(files))
	}
	matched := make([]bool, len(documented))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		found := false
		for i, d := range documented {
			if reflect.DeepEqual(v, d) {
				matched[i], found = true, true
			}
		}
		if !found {
			t.Errorf("%s is no policy of docs/SECURITY.md's \"Least-privilege AWS\": change both together", filepath.Base(f))
		}
	}
	for i, ok := range matched {
		if !ok {
			t.Errorf("docs/SECURITY.md's policy %d of \"Least-privilege AWS\" has no file in deploy/kubernetes/overlays/aws/iam", i+1)
		}
	}
}

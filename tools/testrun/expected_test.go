package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each expected skip is one test and one reason: the same test skipped for
// another reason, or another test with the same reason, is not expected.
func TestOnlyTheExpectedSkipIsExpected(t *testing.T) {
	const (
		rolling = "github.com/payments-outbox/payments-outbox/tools/rolling"
		test    = "TestPreviousReleaseRunsOnTheNewSchema"
		reason  = "no previous release to roll from: deploy/PREVIOUS_RELEASE is none: this project has not shipped"
	)
	tests := []struct {
		pkg, test, reason string
		want              bool
	}{
		{rolling, test, reason, true},
		{"github.com/acme/payments/tools/rolling", test, reason, true}, // a fork's
		{rolling, test, "the previous release 4eb13b3 is not in this clone", false},
		{rolling, test, "integration test skipped, no Postgres: DATABASE_URL is unset", false},
		{rolling, "TestSomethingElse", reason, false},
		{"github.com/payments-outbox/payments-outbox/adapters/rolling", test, reason, false},
		{rolling, test, "because " + reason, false},
	}
	for _, tt := range tests {
		if got := isExpected(tt.pkg, tt.test, tt.reason); got != tt.want {
			t.Errorf("isExpected(%s, %s, %q) = %v, want %v", tt.pkg, tt.test, tt.reason, got, tt.want)
		}
	}
}

// An expected skip's test gives that reason in its source: a reworded skip
// is no longer expected, and would fail CI for a reason nobody sees here.
func TestExpectedSkipsAreTheTestsOwn(t *testing.T) {
	for _, e := range expectedSkips {
		dir := filepath.Join("..", e.pkg)
		files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
		if err != nil || len(files) == 0 {
			t.Errorf("expected skip of %s: no test files in %s (%v)", e.test, dir, err)
			continue
		}
		var defines, gives bool
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			defines = defines || strings.Contains(string(b), "func "+e.test+"(t *testing.T)")
			gives = gives || strings.Contains(string(b), `"`+e.reason)
		}
		if !defines || !gives {
			t.Errorf("%s defines %s: %v, and a string starting with %q: %v; want both (expected.go quotes that test's skip)", dir, e.test, defines, e.reason, gives)
		}
	}
}

// The report counts an expected skip as a skip, listed with its reason, and
// as expected; under CI it alone does not fail the run, beside another skip
// it does.
func TestReportCountsExpectedSkips(t *testing.T) {
	const events = `{"Action":"run","Package":"m/tools/rolling","Test":"TestPreviousReleaseRunsOnTheNewSchema"}
{"Action":"output","Package":"m/tools/rolling","Test":"TestPreviousReleaseRunsOnTheNewSchema","Output":"    rolling_test.go:60: no previous release to roll from: deploy/PREVIOUS_RELEASE is none: not shipped\n"}
{"Action":"skip","Package":"m/tools/rolling","Test":"TestPreviousReleaseRunsOnTheNewSchema"}
{"Action":"pass","Package":"m/tools/rolling"}
`
	const other = `{"Action":"run","Package":"m/tools/stack","Test":"TestX"}
{"Action":"output","Package":"m/tools/stack","Test":"TestX","Output":"    x_test.go:9: integration test skipped, no Postgres\n"}
{"Action":"skip","Package":"m/tools/stack","Test":"TestX"}
{"Action":"pass","Package":"m/tools/stack"}
`
	for _, tt := range []struct {
		name, events string
		skipped      int
		code         int
	}{{"alone", events, 1, 0}, {"beside another skip", events + other, 2, 1}} {
		var out strings.Builder
		r := newReport(&out)
		r.read(strings.NewReader(tt.events))
		sum := r.summary()
		if sum.skipped != tt.skipped || sum.expected != 1 || !strings.Contains(out.String(), "PREVIOUS_RELEASE is none: not shipped") {
			t.Errorf("%s: got %d skipped, %d expected, want %d and 1, and the reason listed:\n%s", tt.name, sum.skipped, sum.expected, tt.skipped, out.String())
		}
		if code, why := verdict(sum, nil, true); code != tt.code {
			t.Errorf("%s: under CI the verdict is %d (%s), want %d", tt.name, code, why, tt.code)
		}
	}
}

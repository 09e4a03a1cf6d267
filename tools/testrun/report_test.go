package main

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// testdata/run.jsonl is what go test -json printed for three packages: one
// passing with skipped tests (two of them for the same reason, one of them a
// subtest), one with a failed and a skipped test, and one that did not build.
func readRecorded(t *testing.T) (summary, string) {
	t.Helper()
	f, err := os.Open("testdata/run.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out strings.Builder
	r := newReport(&out)
	r.read(f)
	return r.summary(), out.String()
}

func TestReportCountsAndShowsWhatGoTestHides(t *testing.T) {
	sum, out := readRecorded(t)
	// Passed: bad/TestPasses, good/TestPasses, TestTable/a, TestTable.
	// Failed: bad/TestFails and the package that did not build.
	if sum.passed != 4 || sum.failed != 2 || sum.skipped != 3 {
		t.Errorf("got %d passed, %d failed, %d skipped; want 4, 2, 3\n%s", sum.passed, sum.failed, sum.skipped, out)
	}
	for _, want := range []string{
		"ok    example.com/rec/good  0.0s  (3 passed, 0 failed, 2 skipped)",
		"FAIL  example.com/rec/bad  0.0s  (1 passed, 1 failed, 1 skipped)",
		"got 1, want 2",                // the failed test's output
		"FAIL  example.com/rec/broken", // the package that did not build ...
		"undefined: undefined",         // ... and why
		"SKIPPED: 3 of 9 tests did not run",
		"     2  integration test skipped, no Postgres: DATABASE_URL is unset; set DATABASE_URL or start Docker\n",
		"     1  (no reason given)\n",
		"\ntests: 4 passed, 2 failed, 3 skipped\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "looking for a server") {
		t.Errorf("the skip reason is the t.Skip message, not an earlier t.Log:\n%s", out)
	}
	if !strings.HasSuffix(out, "tests: 4 passed, 2 failed, 3 skipped\n") {
		t.Errorf("the counts are not the last line:\n%s", out)
	}
}

func TestPassingRunPrintsNoSkipSection(t *testing.T) {
	var out strings.Builder
	r := newReport(&out)
	r.read(strings.NewReader(`{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Elapsed":0.5}
`))
	sum := r.summary()
	if sum.total() != 1 || strings.Contains(out.String(), "SKIPPED") {
		t.Errorf("got %+v\n%s", sum, out.String())
	}
	if want := "ok    p  0.5s  (1 passed, 0 failed, 0 skipped)\n\ntests: 1 passed, 0 failed, 0 skipped\n"; out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

func TestVerdict(t *testing.T) {
	failed := errors.New("exit status 1")
	tests := []struct {
		name  string
		sum   summary
		goErr error
		ci    bool
		want  int
	}{
		{"all passed", summary{passed: 3}, nil, false, 0},
		{"all passed under CI", summary{passed: 3}, nil, true, 0},
		{"skips outside CI", summary{passed: 3, skipped: 2}, nil, false, 0},
		{"skips under CI", summary{passed: 3, skipped: 1}, nil, true, 1},
		{"an expected skip under CI", summary{passed: 3, skipped: 1, expected: 1}, nil, true, 0},
		{"an expected skip and another under CI", summary{passed: 3, skipped: 2, expected: 1}, nil, true, 1},
		{"a failed test", summary{passed: 3, failed: 1}, failed, false, 1},
		{"go test failed without a counted failure", summary{passed: 3}, failed, false, 1},
		{"no test ran", summary{}, nil, false, 1},
	}
	for _, tt := range tests {
		got, why := verdict(tt.sum, tt.goErr, tt.ci)
		if got != tt.want || (got != 0) != (why != "") {
			t.Errorf("%s: exit code %d (%q), want %d and a reason for any failure", tt.name, got, why, tt.want)
		}
	}
}

// A test that skips only after building or waiting costs every run that
// time for nothing: the report names it, slowest first, and leaves a quick
// skip out.
func TestReportNamesSlowSkips(t *testing.T) {
	var out strings.Builder
	r := newReport(&out)
	r.read(strings.NewReader(`{"Action":"run","Package":"p","Test":"TestQuick"}
{"Action":"output","Package":"p","Test":"TestQuick","Output":"    p_test.go:9: no server\n"}
{"Action":"skip","Package":"p","Test":"TestQuick","Elapsed":0.01}
{"Action":"run","Package":"p","Test":"TestBuildsFirst"}
{"Action":"output","Package":"p","Test":"TestBuildsFirst","Output":"    p_test.go:19: no server\n"}
{"Action":"skip","Package":"p","Test":"TestBuildsFirst","Elapsed":231.7}
{"Action":"run","Package":"q","Test":"TestWaits"}
{"Action":"output","Package":"q","Test":"TestWaits","Output":"    q_test.go:29: no server\n"}
{"Action":"skip","Package":"q","Test":"TestWaits","Elapsed":4.2}
{"Action":"pass","Package":"p","Elapsed":232}
{"Action":"pass","Package":"q","Elapsed":5}
`))
	r.summary()
	want := "\nSkipped only after 1s or more: check what a test needs before building, starting or waiting:\n" +
		"   231.7s  p TestBuildsFirst\n" +
		"     4.2s  q TestWaits\n"
	if !strings.Contains(out.String(), want) || strings.Contains(out.String(), "TestQuick\n") {
		t.Errorf("got\n%s\nwant it to hold\n%s", out.String(), want)
	}
}

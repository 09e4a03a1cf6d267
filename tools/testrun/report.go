package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"
)

// event is one line of go test -json (cmd/test2json), build events included.
type event struct {
	Action      string
	Package     string
	Test        string
	Output      string
	Elapsed     float64
	ImportPath  string // build-output and build-fail events
	FailedBuild string // a package's fail event when it did not build
}

type testKey struct{ pkg, test string }

// pkgState is what one package has done so far.
type pkgState struct {
	passed, failed, skipped int
	failedTests             []string
	output                  []string // lines not attributed to a test
}

// summary counts the tests of a run. A package that failed without a failing
// test (it did not build, its TestMain failed, it timed out) counts as one
// failure, so that the closing line never reads "0 failed" on a failed run.
type summary struct {
	passed, failed, skipped int
	// skipReasons counts the skipped tests by the reason they gave.
	skipReasons map[string]int
	// expected counts the skips that CI lets pass (expectedSkips).
	expected int
	// slowSkips are the skipped tests that ran slowSkip or longer first.
	slowSkips []slowSkip
}

// slowSkip is a test that skipped only after running a while: one that
// builds, starts or waits for something before it checks what it needs.
type slowSkip struct {
	pkg, test string
	elapsed   float64 // seconds
}

// slowSkipAfter is how long a skipped test may run before the report names
// it: a test should find out it cannot run before it spends anything.
const slowSkipAfter = time.Second

func (s summary) total() int { return s.passed + s.failed + s.skipped }

// report turns go test -json into what a person reads: a line per package
// as it finishes, the output of failed tests and packages, and at the end
// the skipped tests by reason and the counts.
type report struct {
	out      io.Writer
	tests    map[testKey][]string // each running test's output
	packages map[string]*pkgState
	builds   map[string][]string // build output by import path
	sum      summary
}

func newReport(out io.Writer) *report {
	return &report{
		out: out, tests: map[testKey][]string{}, packages: map[string]*pkgState{},
		builds: map[string][]string{}, sum: summary{skipReasons: map[string]int{}},
	}
}

// read consumes go test -json until r ends. A line that is not an event (go
// test prints some errors before any test runs) is printed as it came.
func (r *report) read(in io.Reader) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1024*1024), 16*1024*1024)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			fmt.Fprintln(r.out, sc.Text())
			continue
		}
		r.handle(e)
	}
}

func (r *report) pkg(name string) *pkgState {
	p, ok := r.packages[name]
	if !ok {
		p = &pkgState{}
		r.packages[name] = p
	}
	return p
}

func (r *report) handle(e event) {
	switch e.Action {
	case "build-output":
		r.builds[e.ImportPath] = append(r.builds[e.ImportPath], e.Output)
		return
	case "build-fail":
		return // reported with the package's fail event
	}
	if e.Package == "" {
		return
	}
	p := r.pkg(e.Package)
	if e.Test == "" {
		switch e.Action {
		case "output":
			p.output = append(p.output, e.Output)
		case "pass", "fail", "skip":
			r.finishPackage(e, p)
		}
		return
	}
	k := testKey{e.Package, e.Test}
	switch e.Action {
	case "output":
		r.tests[k] = append(r.tests[k], e.Output)
	case "pass":
		p.passed++
		r.sum.passed++
		delete(r.tests, k)
	case "skip":
		p.skipped++
		r.sum.skipped++
		reason := skipReason(r.tests[k])
		r.sum.skipReasons[reason]++
		if isExpected(e.Package, e.Test, reason) {
			r.sum.expected++
		}
		if e.Elapsed >= slowSkipAfter.Seconds() {
			r.sum.slowSkips = append(r.sum.slowSkips, slowSkip{e.Package, e.Test, e.Elapsed})
		}
		delete(r.tests, k)
	case "fail":
		p.failed++
		r.sum.failed++
		p.failedTests = append(p.failedTests, strings.Join(r.tests[k], ""))
		delete(r.tests, k)
	}
}

func (r *report) finishPackage(e event, p *pkgState) {
	counts := fmt.Sprintf("(%d passed, %d failed, %d skipped)", p.passed, p.failed, p.skipped)
	switch e.Action {
	case "skip": // no test files
		return
	case "pass":
		fmt.Fprintf(r.out, "ok    %s  %.1fs  %s\n", e.Package, e.Elapsed, counts)
		return
	}
	fmt.Fprintf(r.out, "FAIL  %s  %.1fs  %s\n", e.Package, e.Elapsed, counts)
	for _, o := range p.failedTests {
		fmt.Fprint(r.out, indent(o))
	}
	// Tests cut off by a timeout or a panic never report their end: their
	// output is all there is to show.
	for k, o := range r.tests {
		if k.pkg == e.Package {
			fmt.Fprint(r.out, indent(strings.Join(o, "")))
			delete(r.tests, k)
		}
	}
	if p.failed == 0 {
		r.sum.failed++ // the package failed without a failing test
		if e.FailedBuild != "" {
			fmt.Fprint(r.out, indent(strings.Join(r.builds[e.FailedBuild], "")))
		}
		fmt.Fprint(r.out, indent(strings.Join(p.output, "")))
	}
}

// fileLine is the prefix the testing package puts before t.Log and t.Skip
// messages.
var fileLine = regexp.MustCompile(`^\s*[\w./-]+\.go:\d+: (.*)$`)

// skipReason is the last message a skipped test logged, which is the one
// t.Skip gave it.
func skipReason(output []string) string {
	reason := "(no reason given)"
	for _, line := range output {
		if m := fileLine.FindStringSubmatch(strings.TrimRight(line, "\n")); m != nil {
			reason = m[1]
		}
	}
	return reason
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	lines := strings.SplitAfter(strings.TrimRight(s, "\n")+"\n", "\n")
	return "    " + strings.Join(lines[:len(lines)-1], "    ")
}

// summary prints the skipped tests by reason, loudly, and the closing line,
// and returns the counts.
func (r *report) summary() summary {
	s := r.sum
	if s.skipped > 0 {
		type reason struct {
			text  string
			count int
		}
		var reasons []reason
		for text, n := range s.skipReasons {
			reasons = append(reasons, reason{text, n})
		}
		slices.SortFunc(reasons, func(a, b reason) int {
			return cmp.Or(cmp.Compare(b.count, a.count), strings.Compare(a.text, b.text))
		})
		fmt.Fprintf(r.out, "\nSKIPPED: %d of %d tests did not run, so this run proves less than it seems:\n", s.skipped, s.total())
		for _, rs := range reasons {
			fmt.Fprintf(r.out, "  %4d  %s\n", rs.count, rs.text)
		}
		if len(s.slowSkips) > 0 {
			slices.SortFunc(s.slowSkips, func(a, b slowSkip) int { return cmp.Compare(b.elapsed, a.elapsed) })
			fmt.Fprintf(r.out, "\nSkipped only after %v or more: check what a test needs before building, starting or waiting:\n", slowSkipAfter)
			for _, sk := range s.slowSkips {
				fmt.Fprintf(r.out, "  %6.1fs  %s %s\n", sk.elapsed, sk.pkg, sk.test)
			}
		}
	}
	fmt.Fprintf(r.out, "\ntests: %d passed, %d failed, %d skipped\n", s.passed, s.failed, s.skipped)
	return s
}

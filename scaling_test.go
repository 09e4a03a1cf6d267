package paymentsoutbox_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestScalingFiguresCiteTheirSource: docs/SCALING.md is a model built from
// measured costs, so every line that states a measured quantity (a number
// with a unit of time, rate, size or cores) links to the section of
// docs/BENCHMARKS.md that measured it, or, for a quota, to AWS's page that
// states it. A figure without its source is a guess.
func TestScalingFiguresCiteTheirSource(t *testing.T) {
	b, err := os.ReadFile("docs/SCALING.md")
	if err != nil {
		t.Fatal(err)
	}
	figure := regexp.MustCompile(`\d[\d,.]*\s?(µs|ms|req/s|rows/s|messages/s|postings/s|writes/s|transactions/s|cores?\b|vCPU|MB/s|KiB)`)
	source := regexp.MustCompile(`\]\((BENCHMARKS\.md#[a-z0-9-]+|https://docs\.aws\.amazon\.com/[^)]+)\)`)
	checked := 0
	// A sentence may wrap: a figure's source is in its line or in the
	// lines of its paragraph or list item.
	var block []string
	flush := func() {
		text := strings.Join(block, " ")
		if figure.MatchString(text) {
			checked++
			if !source.MatchString(text) {
				t.Errorf("docs/SCALING.md: %q states %q without a link to its BENCHMARKS.md section (or AWS's page)", strings.TrimSpace(block[0]), figure.FindString(text))
			}
		}
		block = nil
	}
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "|"): // a table row is its own block
			flush()
			block = []string{line}
			flush()
		case strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "- "):
			flush()
			if strings.HasPrefix(line, "- ") {
				block = []string{line}
			}
		default:
			block = append(block, line)
		}
	}
	flush()
	if checked < 10 {
		t.Fatalf("found %d figures in docs/SCALING.md; the test reads the wrong lines", checked)
	}
}

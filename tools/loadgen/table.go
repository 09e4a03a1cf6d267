package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// row is one line of the final table.
type row struct {
	Scenario      string
	Conc          string
	Rate          spread // operations per second over the repetitions
	Unit          string // what one operation is: "req/s", "rows/s"
	Ratio         spread // Rate as a fraction of the SQL ceiling; N == 0: none
	P50, P95, P99 time.Duration
	Errors        int
	Limit         string // what bounds this figure
}

var header = []string{"scenario", "conc", "throughput (median, min–max)", "vs ceiling", "p50", "p95", "p99", "errors", "limited by"}

func (r row) cells() []string {
	return []string{
		r.Scenario, r.Conc, formatRate(r.Rate, r.Unit), formatRatio(r.Ratio),
		formatLatency(r.P50), formatLatency(r.P95), formatLatency(r.P99),
		fmt.Sprint(r.Errors), r.Limit,
	}
}

func formatRate(s spread, unit string) string {
	if s.N == 0 {
		return "—"
	}
	if s.N == 1 || s.Min == s.Max {
		return fmt.Sprintf("%.0f %s", s.Median, unit)
	}
	return fmt.Sprintf("%.0f %s (%.0f–%.0f)", s.Median, unit, s.Min, s.Max)
}

func formatRatio(s spread) string {
	if s.N == 0 {
		return "—"
	}
	if s.N == 1 || s.Min == s.Max {
		return fmt.Sprintf("%.0f%%", 100*s.Median)
	}
	return fmt.Sprintf("%.0f%% (%.0f–%.0f)", 100*s.Median, 100*s.Min, 100*s.Max)
}

// formatLatency prints milliseconds with two decimals below 10 ms, where the
// targets live, and whole milliseconds above.
func formatLatency(d time.Duration) string {
	if d <= 0 {
		return "—"
	}
	ms := float64(d) / float64(time.Millisecond)
	if ms < 10 {
		return fmt.Sprintf("%.2f ms", ms)
	}
	return fmt.Sprintf("%.0f ms", ms)
}

// writeText prints rows as an aligned table for the terminal.
func writeText(w io.Writer, rows []row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r.cells(), "\t"))
	}
	return tw.Flush()
}

// writeMarkdown prints rows as a GitHub-flavoured Markdown table.
func writeMarkdown(w io.Writer, rows []row) {
	fmt.Fprintf(w, "| %s |\n", strings.Join(header, " | "))
	seps := make([]string, len(header))
	for i := range seps {
		seps[i] = "---"
	}
	fmt.Fprintf(w, "|%s|\n", strings.Join(seps, "|"))
	for _, r := range rows {
		cells := r.cells()
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
}

// The report block in docs/BENCHMARKS.md sits between these markers, inside
// the "Whole path" section; the prose around it is written by hand and kept.
const (
	reportHeading = "## Whole path (tools/loadgen)"
	beginMarker   = "<!-- loadgen:begin -->"
	endMarker     = "<!-- loadgen:end -->"
)

// spliceReport returns doc with the text between the markers replaced by
// block. A document without the markers gets a new "Whole path" section with
// them at its end; an empty one becomes a document of that section alone.
// Every other section is left as it was.
func spliceReport(doc, block string) string {
	block = strings.TrimRight(block, "\n") + "\n"
	begin := strings.Index(doc, beginMarker)
	end := strings.Index(doc, endMarker)
	if begin >= 0 && end > begin {
		return doc[:begin+len(beginMarker)] + "\n" + block + doc[end:]
	}
	section := reportHeading + "\n\n" + beginMarker + "\n" + block + endMarker + "\n"
	if strings.TrimSpace(doc) == "" {
		return "# Benchmarks\n\n" + section
	}
	return strings.TrimRight(doc, "\n") + "\n\n" + section
}

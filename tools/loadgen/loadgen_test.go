package main

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPercentileIsNearestRank(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = ms(i + 1) // 1 ms … 100 ms
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one value", []time.Duration{ms(7)}, 99, ms(7)},
		{"p50 of 100", hundred, 50, ms(50)},
		{"p95 of 100", hundred, 95, ms(95)},
		{"p99 of 100", hundred, 99, ms(99)},
		{"p100 is the maximum", hundred, 100, ms(100)},
		{"tiny p is the minimum", hundred, 0.001, ms(1)},
		{"p99 of 10 is the maximum", hundred[:10], 99, ms(10)},
		{"p50 of 2 is the lower", []time.Duration{ms(1), ms(2)}, 50, ms(1)},
	}
	for _, tt := range tests {
		if got := percentile(tt.sorted, tt.p); got != tt.want {
			t.Errorf("%s: percentile(p%v) = %v, want %v", tt.name, tt.p, got, tt.want)
		}
	}
}

func TestSummarizeSortsAndCountsRate(t *testing.T) {
	s := summarize([]time.Duration{3 * time.Millisecond, time.Millisecond, 2 * time.Millisecond}, 1, 2*time.Second)
	if s.N != 3 || s.Errors != 1 || s.P50 != 2*time.Millisecond || s.P99 != 3*time.Millisecond {
		t.Errorf("got %+v, want N=3 Errors=1 P50=2ms P99=3ms", s)
	}
	if got := s.Rate(); got != 1.5 {
		t.Errorf("Rate() = %v, want 1.5", got)
	}
}

func TestSpreadOf(t *testing.T) {
	tests := []struct {
		xs   []float64
		want spread
	}{
		{nil, spread{}},
		{[]float64{5}, spread{Median: 5, Min: 5, Max: 5, N: 1}},
		{[]float64{9, 1, 5}, spread{Median: 5, Min: 1, Max: 9, N: 3}},
		{[]float64{4, 1, 2, 8}, spread{Median: 3, Min: 1, Max: 8, N: 4}},
	}
	for _, tt := range tests {
		if got := spreadOf(tt.xs); got != tt.want {
			t.Errorf("spreadOf(%v) = %+v, want %+v", tt.xs, got, tt.want)
		}
	}
}

func TestTableFormats(t *testing.T) {
	rows := []row{
		{Scenario: "SQL ceiling", Conc: "16", Rate: spread{Median: 9000, Min: 8500, Max: 9400, N: 3}, Unit: "req/s",
			Ratio: spread{Median: 1, Min: 1, Max: 1, N: 1}, P50: 1500 * time.Microsecond, P95: 4 * time.Millisecond, P99: 12 * time.Millisecond, Limit: "a|b"},
		{Scenario: "relay", Conc: "2×4 workers", Rate: spread{Median: 20000, Min: 20000, Max: 20000, N: 1}, Unit: "rows/s"},
	}
	var text bytes.Buffer
	if err := writeText(&text, rows); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"9000 req/s (8500–9400)", "100%", "1.50 ms", "12 ms", "20000 rows/s", "—"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text table lacks %q:\n%s", want, text.String())
		}
	}
	var md bytes.Buffer
	writeMarkdown(&md, rows)
	lines := strings.Split(strings.TrimSpace(md.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("markdown table has %d lines, want header, separator and 2 rows:\n%s", len(lines), md.String())
	}
	if !strings.Contains(lines[2], `a\|b`) {
		t.Errorf("a | inside a cell is not escaped: %s", lines[2])
	}
	for _, l := range lines {
		if got, want := strings.Count(strings.ReplaceAll(l, `\|`, ""), "|"), len(header)+1; got != want {
			t.Errorf("line has %d pipes, want %d: %s", got, want, l)
		}
	}
}

func TestSpliceReportKeepsOtherSections(t *testing.T) {
	doc := "# Benchmarks\n\n## Relay\n\nrelay text\n"
	once := spliceReport(doc, "table one\n")
	if !strings.HasPrefix(once, doc[:len(doc)-1]) || !strings.Contains(once, reportHeading) || !strings.Contains(once, "table one") {
		t.Fatalf("first splice:\n%s", once)
	}
	// Hand-written prose around the markers survives the next run.
	withProse := strings.Replace(once, beginMarker, "prose before\n\n"+beginMarker, 1) + "\n## Ledger consumer\n\nledger text\n"
	twice := spliceReport(withProse, "table two")
	for _, want := range []string{"relay text", "prose before", "table two", "ledger text"} {
		if !strings.Contains(twice, want) {
			t.Errorf("second splice lost %q:\n%s", want, twice)
		}
	}
	if strings.Contains(twice, "table one") || strings.Count(twice, reportHeading) != 1 {
		t.Errorf("second splice did not replace the block:\n%s", twice)
	}
	if got := spliceReport("", "t"); !strings.HasPrefix(got, "# Benchmarks\n\n"+reportHeading) {
		t.Errorf("empty document: got %q", got)
	}
}

func TestPaymentBodyIsTheOperationsPayment(t *testing.T) {
	var body struct {
		Amount     int64  `json:"amount"`
		Currency   string `json:"currency"`
		PayerID    string `json:"payer_id"`
		MerchantID string `json:"merchant_id"`
	}
	if err := json.Unmarshal(paymentBody(1042), &body); err != nil {
		t.Fatalf("paymentBody is not JSON: %v", err)
	}
	w, err := newWrite(1042, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// The ceiling writes the payment the API is asked to create.
	p := w.payment
	if body.Amount != p.AmountMinor || body.Currency != p.Currency || body.PayerID != p.PayerID || body.MerchantID != p.MerchantID {
		t.Errorf("paymentBody(1042) = %+v, newWrite(1042) wrote %d %s %s %s", body, p.AmountMinor, p.Currency, p.PayerID, p.MerchantID)
	}
}

func TestParseAssignments(t *testing.T) {
	got := parseAssignments("PAYMENTS_TOPIC_ARN=arn:x\nexport LEDGER_QUEUE_URL='http://q'\n# comment\nnoise\n")
	want := []string{"PAYMENTS_TOPIC_ARN=arn:x", "LEDGER_QUEUE_URL=http://q"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestParseFlagsOrdering(t *testing.T) {
	env := func(string) string { return "" }
	for flag, want := range map[string][]bool{"none": {false}, "partition": {true}, "both": {false, true}} {
		o, err := parseFlags([]string{"-database-url", "postgres://x", "-ordering", flag}, env, io.Discard)
		if err != nil || !slices.Equal(o.Orderings, want) {
			t.Errorf("-ordering %s: got %v, %v; want %v", flag, o.Orderings, err, want)
		}
	}
	if _, err := parseFlags([]string{"-database-url", "postgres://x", "-ordering", "fifo"}, env, io.Discard); err == nil || !strings.Contains(err.Error(), "-ordering") {
		t.Errorf("-ordering fifo: got %v, want an error naming -ordering", err)
	}
}

func TestHugetlbKBReadsTheStatusLine(t *testing.T) {
	status := "Name:\tpostgres\nVmRSS:\t  20480 kB\nHugetlbPages:\t  147456 kB\nThreads:\t1\n"
	if kb, ok := hugetlbKB(status); !ok || kb != 147456 {
		t.Errorf("hugetlbKB = %d, %v; want 147456, true", kb, ok)
	}
	if kb, ok := hugetlbKB("Name:\tpostgres\nHugetlbPages:\t       0 kB\n"); !ok || kb != 0 {
		t.Errorf("no huge pages: hugetlbKB = %d, %v; want 0, true", kb, ok)
	}
	if _, ok := hugetlbKB("Name:\tpostgres\n"); ok {
		t.Error("a status without the line must not be read as no huge pages")
	}
}

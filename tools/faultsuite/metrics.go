package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/payments-outbox/payments-outbox/tools/internal/proc"
)

// scraper polls /metrics of every replica. Counters restart at zero with each
// incarnation, so it keeps the last value seen per incarnation and sums them;
// what an incarnation counted after its last scrape and before a SIGKILL is
// lost, so the sums are lower bounds.
type scraper struct {
	procs  []*proc.Process
	client *http.Client

	mu     sync.Mutex
	last   map[string]map[string]float64 // "name#gen" → metric → value
	maxAge float64                       // largest outbox_oldest_pending_age_seconds seen
}

func newScraper(procs []*proc.Process) *scraper {
	return &scraper{procs: procs, client: &http.Client{Timeout: time.Second}, last: map[string]map[string]float64{}}
}

var scraped = []string{
	"outbox_oldest_pending_age_seconds", "outbox_published_total", "outbox_publish_failures_total",
	"ledger_messages_processed_total", "ledger_duplicates_suppressed_total", "ledger_processing_failures_total",
}

func (s *scraper) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s.scrapeAll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *scraper) scrapeAll(ctx context.Context) {
	for _, p := range s.procs {
		if !p.Alive() {
			continue
		}
		key := fmt.Sprintf("%s#%d", p.Name(), p.Gen())
		vals, err := s.scrape(ctx, p.OpsAddr())
		if err != nil {
			continue
		}
		s.mu.Lock()
		s.last[key] = vals
		if a := vals["outbox_oldest_pending_age_seconds"]; a > s.maxAge {
			s.maxAge = a
		}
		s.mu.Unlock()
	}
}

// scrape reads the Prometheus text format, summing each metric over its labels.
func (s *scraper) scrape(ctx context.Context, addr string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	res, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metrics: %s", res.Status)
	}
	vals := map[string]float64{}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name := line
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name = line[:i]
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			continue
		}
		for _, want := range scraped {
			if name == want {
				vals[name] += v
			}
		}
	}
	return vals, sc.Err()
}

// sum adds metric over every incarnation seen.
func (s *scraper) sum(metric string) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var total float64
	for _, vals := range s.last {
		total += vals[metric]
	}
	return total
}

func (s *scraper) maxOldestAge() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxAge
}

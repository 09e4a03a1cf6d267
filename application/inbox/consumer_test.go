package inbox_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/inbox/inboxtest"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// The inbox's own tests run it with a consumer of their own, unlike the
// ledger: a notebook that keeps one note per key. That it needs nothing but
// a Handler and its tables is the point — a second consumer of the events
// reuses the inbox as it is.

var (
	now = time.Date(2026, 11, 29, 12, 0, 1, 0, time.UTC)
)

const (
	typeNoted = "note.added" // the type the notebook applies
	msgA      = "0b7e2f5e-7c41-4c55-9a57-3a3d0c1f6a01"
	msgB      = "0b7e2f5e-7c41-4c55-9a57-3a3d0c1f6a02"
	msgC      = "0b7e2f5e-7c41-4c55-9a57-3a3d0c1f6a03"
)

// noted is a message of typeNoted: note key, carrying n.
func noted(id, key string, n int) []byte {
	return []byte(fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":%q,"dataschema":"https://payments-outbox.example/schemas/events/%[2]s/v1.json","source":"/tests","subject":%q,
"time":"2026-11-29T12:00:00.123Z","datacontenttype":"application/json","data":{"key":%q,"n":%d}}`,
		id, typeNoted, key, key, n))
}

// note is the notebook's checked event: what its Apply writes.
type note struct {
	msgID, key string
	n          int
}

// Notes is the notebook's repository, bound to the inbox's transaction.
type Notes interface {
	// Add writes n unless a note with its key is there: the notebook's own
	// business key, the second layer of idempotency.
	Add(ctx context.Context, n note) (bool, error)
}

// notebook is the consumer's Handler. types maps each type it applies to its
// versions (a later version of the notebook knows more of them); ignored, the
// types it never applies.
type notebook struct {
	types   map[string][]string
	ignored map[string]string
}

func newNotebook() notebook {
	return notebook{types: map[string][]string{typeNoted: {"1"}}}
}

var _ inbox.Handler[Notes, note] = notebook{}

func (h notebook) Types() map[string][]string { return maps.Clone(h.types) }
func (h notebook) Ignored() map[string]string { return maps.Clone(h.ignored) }

func (notebook) Check(ev inbox.Event, _ string) (note, error) {
	var d struct {
		Key string `json:"key"`
		N   *int   `json:"n"`
	}
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		return note{}, err
	}
	if d.Key == "" || d.N == nil || *d.N < 0 {
		return note{}, errors.New("a note needs a key and a count of zero or more")
	}
	return note{msgID: ev.ID, key: d.Key, n: *d.N}, nil
}

func (notebook) Compare(a, b note) int { return cmp.Compare(a.key, b.key) }

func (notebook) Apply(ctx context.Context, notes Notes, n note, _ time.Time) (bool, error) {
	return notes.Add(ctx, n)
}

// pages are the notebook's tables in memory: inboxtest.Tables of Notes.
type pages struct {
	mu        sync.Mutex
	notes     []note // written, the uncommitted ones last
	committed int
	// refuse makes a commit that would write the note of this key fail
	// with the error: a deferred check at COMMIT.
	refuse map[string]error
}

func (p *pages) Repos() Notes { return pageWriter{p} }

func (p *pages) Snapshot() func() {
	p.mu.Lock()
	defer p.mu.Unlock()
	notes, committed := slices.Clone(p.notes), p.committed
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.notes, p.committed = notes, committed
	}
}

func (p *pages) Commit() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, n := range p.notes[p.committed:] {
		if err := p.refuse[n.key]; err != nil {
			return err
		}
	}
	p.committed = len(p.notes)
	return nil
}

// written returns the committed notes, in the order they were written.
func (p *pages) written() []note {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.notes[:p.committed])
}

// refuseCommitsOf makes every commit that writes key's note fail with err,
// until called with nil.
func (p *pages) refuseCommitsOf(key string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.refuse == nil {
		p.refuse = map[string]error{}
	}
	if err == nil {
		delete(p.refuse, key)
		return
	}
	p.refuse[key] = err
}

type pageWriter struct{ p *pages }

func (w pageWriter) Add(_ context.Context, n note) (bool, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	for _, old := range w.p.notes {
		if old.key == n.key {
			return false, nil
		}
	}
	w.p.notes = append(w.p.notes, n)
	return true, nil
}

// rig is the notebook behind the inbox, as a binary wires a consumer: one
// processor, and a service in each mode over the same store.
type rig struct {
	store       *inboxtest.FakeStore[Notes]
	pages       *pages
	proc        *inbox.Processor[Notes, note]
	sync, async *inbox.Service[Notes, note]
}

func newRig(h notebook, schemas inbox.Schemas, metrics inbox.ProcessorMetrics, cfg inbox.ProcessorConfig) rig {
	p := &pages{}
	store := inboxtest.NewFakeStore(p)
	proc := inbox.NewProcessor(store, h, schemas, logtest.Discard(), metrics, time.Now, cfg)
	clock := func() time.Time { return now }
	return rig{store: store, pages: p, proc: proc,
		sync:  inbox.NewService(store, proc, clock, inbox.Config{}),
		async: inbox.NewService(store, proc, clock, inbox.Config{Mode: inbox.Async})}
}

// defaultRig is the notebook with schemas that accept everything.
func defaultRig() rig {
	return newRig(newNotebook(), &inboxtest.FakeSchemas{}, nil, inbox.ProcessorConfig{})
}

func step(t *testing.T, p *inbox.Processor[Notes, note]) int {
	t.Helper()
	n, err := p.Step(context.Background())
	if err != nil {
		t.Fatalf("Step: %v", err)
	}
	return n
}

type countingMetrics struct {
	applied, already, retried, parked int
	backlog                           inbox.Stats
}

func (c *countingMetrics) Processed(applied bool, _ time.Duration) {
	if applied {
		c.applied++
	} else {
		c.already++
	}
}

func (c *countingMetrics) Failed(parked bool) {
	if parked {
		c.parked++
	} else {
		c.retried++
	}
}

func (c *countingMetrics) Backlog(s inbox.Stats) { c.backlog = s }

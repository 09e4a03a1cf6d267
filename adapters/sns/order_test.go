package sns_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/outboxstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/adapters/sns"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/outbox/partition"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
	paymentsmigrations "github.com/payments-outbox/payments-outbox/migrations/payments"
)

// killableStore is a replica's store that can be killed: from then on a
// claim loses its database sessions after its publish, as a process that
// dies between the publish and the commit does (the at-least-once window),
// so its transaction rolls back; and the leases are not released, so the
// other replicas wait for them to expire.
type killableStore struct {
	*outboxstore.Store
	killed *atomic.Bool
	die    func() // terminates the replica's sessions
}

func (s killableStore) ClaimInOrder(ctx context.Context, c partition.Claim, publish func(context.Context, []outbox.Message) outbox.Result) (int, error) {
	return s.Store.ClaimInOrder(ctx, c, func(ctx context.Context, msgs []outbox.Message) outbox.Result {
		out := publish(ctx, msgs)
		if s.killed.Load() {
			s.die()
		}
		return out
	})
}

func (s killableStore) Release(ctx context.Context, owner string) error {
	if s.killed.Load() {
		return nil
	}
	return s.Store.Release(ctx, owner)
}

// handOffs is the replicas' Publisher, recording when the relay handed each
// event to the broker and when the broker acknowledged it, in one order over
// all the replicas (ticks taken under a lock: a call that returned before
// another began has the smaller tick). That is the order the relay answers
// for, whatever the queue behind the topic then does.
type handOffs struct {
	outbox.Publisher
	mu   sync.Mutex
	tick int
	log  []handOff
}

type handOff struct {
	event  eventKey
	handed int // the tick its Publish call began at
	acked  int // the tick its Publish call returned at, when acknowledged; else 0
}

// eventKey is one event of the test: its payment and its place among that
// payment's events (the writers' seq, in the payload).
type eventKey struct {
	Subject uuid.UUID `json:"subject"`
	Seq     int       `json:"seq"`
}

func (h *handOffs) Publish(ctx context.Context, msgs []outbox.Message) []error {
	h.mu.Lock()
	h.tick++
	handed := h.tick
	h.mu.Unlock()
	errs := h.Publisher.Publish(ctx, msgs)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tick++
	for i, m := range msgs {
		ho := handOff{handed: handed}
		if err := json.Unmarshal(m.Payload, &ho.event); err != nil {
			panic(err) // the test wrote every payload
		}
		if i < len(errs) && errs[i] == nil {
			ho.acked = h.tick
		}
		h.log = append(h.log, ho)
	}
	return errs
}

// early returns, for every event the relay handed to the broker before the
// event ahead of it in its payment had been acknowledged, why.
func (h *handOffs) early() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	firstAck := map[eventKey]int{}
	for _, ho := range h.log {
		if t, ok := firstAck[ho.event]; ho.acked > 0 && (!ok || ho.acked < t) {
			firstAck[ho.event] = ho.acked
		}
	}
	var why []string
	for _, ho := range h.log {
		if ho.event.Seq == 0 {
			continue
		}
		prev := eventKey{ho.event.Subject, ho.event.Seq - 1}
		switch t, ok := firstAck[prev]; {
		case !ok:
			why = append(why, fmt.Sprintf("payment %s: event %d handed to the broker, event %d never acknowledged",
				ho.event.Subject, ho.event.Seq, prev.Seq))
		case t > ho.handed:
			why = append(why, fmt.Sprintf("payment %s: event %d handed to the broker at tick %d, event %d acknowledged only at tick %d",
				ho.event.Subject, ho.event.Seq, ho.handed, prev.Seq, t))
		}
	}
	return why
}

// orderedReplica is one slot of the replica set, restarted under a new
// name each time. Its pool's sessions carry the slot's name, so that a
// kill can end them.
type orderedReplica struct {
	name   string
	pool   *pgxpool.Pool
	admin  *pgxpool.Pool // outlives the replica: ends its sessions on a kill
	pub    outbox.Publisher
	cancel context.CancelFunc
	killed *atomic.Bool
	done   chan struct{}
}

func (rp *orderedReplica) start(t *testing.T) {
	rp.killed = new(atomic.Bool)
	ctx, cancel := context.WithCancel(context.Background())
	rp.cancel, rp.done = cancel, make(chan struct{})
	die := func() {
		if _, err := rp.admin.Exec(context.Background(),
			`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, rp.name); err != nil {
			t.Errorf("killing %s: %v", rp.name, err)
		}
	}
	o := partition.NewOrdered(killableStore{outboxstore.New(rp.pool), rp.killed, die}, logtest.Discard(), nil,
		partition.Config{LeaseDuration: time.Second, Heartbeat: 100 * time.Millisecond})
	r := outbox.NewRelay(o, rp.pub, logtest.Discard(), nil, time.Now,
		outbox.Config{BatchSize: 20, Workers: 2, PollInterval: 20 * time.Millisecond})
	go func() {
		defer close(rp.done)
		var g errgroup.Group
		g.Go(func() error { return r.Run(ctx) })
		g.Go(func() error { return o.Run(ctx) })
		if err := g.Wait(); err != nil {
			t.Errorf("relay: %v", err)
		}
	}()
}

// stop stops the replica: gracefully, or killed mid-batch.
func (rp *orderedReplica) stop(kill bool) {
	rp.killed.Store(kill)
	rp.cancel()
	<-rp.done
}

// TestOrderedRelayKeepsEachPaymentsOrderThroughFIFO: payments each with a
// creation and refunds, written concurrently, published by four ordered
// replicas through a FIFO topic to a FIFO queue while replicas are stopped,
// killed mid-batch and restarted at random. Two orders are checked, each
// against what its side promises:
//   - the relay's: it hands no event to the broker before the event ahead of
//     it in its payment was acknowledged (and so committed first);
//   - the queue's: for every payment its events arrive in the order they were
//     committed; none is lost; an event arrives again only after it arrived
//     (a kill between its publish and its mark, the at-least-once window; or
//     its visibility timeout running out before the delete, which SQS FIFO
//     allows), and then never ahead of an event behind it.
//
// A failure of the first is the relay's; of the second alone, the broker's or
// the receive loop's.
func TestOrderedRelayKeepsEachPaymentsOrderThroughFIFO(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t, paymentsmigrations.FS)
	// A short visibility timeout: a receive whose answer is lost (the SDK
	// retries it) would otherwise hide its messages, and their groups, for the
	// production 30 s.
	tq := awstest.NewTopicQueue(t, awstest.QueueConfig{FIFO: true, VisibilityTimeout: 2 * time.Second})
	pub := &handOffs{Publisher: sns.NewPublisher(awssns.NewFromConfig(tq.Config), tq.TopicARN, sns.Config{InFlight: 4})}
	const payments, events = 60, 4 // a creation and three refunds each: 240 messages

	start := time.Now()
	reps := make([]*orderedReplica, 4)
	for i := range reps {
		cfg := pool.Config().Copy()
		name := fmt.Sprintf("ordered-replica-%d", i)
		cfg.ConnConfig.RuntimeParams["application_name"] = name
		p, err := pgxpool.NewWithConfig(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		reps[i] = &orderedReplica{name: name, pool: p, admin: pool, pub: pub}
		reps[i].start(t)
	}

	// Writers: each payment's events one transaction after another, the
	// payments interleaved across goroutines.
	aggs := make([]uuid.UUID, payments)
	for i := range aggs {
		aggs[i] = uuid.New()
	}
	var writers sync.WaitGroup
	for w := range 6 {
		writers.Go(func() {
			for k := range events {
				for i := w; i < payments; i += 6 {
					typ := "payment.refunded"
					if k == 0 {
						typ = "payment.created"
					}
					id := uuid.New()
					body, _ := json.Marshal(map[string]any{"id": id, "type": typ, "subject": aggs[i], "seq": k})
					if _, err := pool.Exec(context.Background(),
						`INSERT INTO outbox (id, type, aggregate_id, payload) VALUES ($1, $2, $3, $4)`, id, typ, aggs[i], body); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}

	// Chaos: stop or kill a random replica and start it again, until every
	// row is PUBLISHED.
	chaosDone, stopChaos := make(chan struct{}), make(chan struct{})
	kills := 0
	go func() {
		defer close(chaosDone)
		rnd := rand.New(rand.NewPCG(1, 2))
		for {
			select {
			case <-stopChaos:
				return
			case <-time.After(time.Duration(100+rnd.IntN(300)) * time.Millisecond): // pacing the chaos, not synchronising
			}
			rp := reps[rnd.IntN(len(reps))]
			kill := rnd.IntN(2) == 0
			if kill {
				kills++
			}
			rp.stop(kill)
			rp.start(t)
		}
	}()
	writers.Wait()
	waitFor(t, 2*time.Minute, "every row PUBLISHED", func() bool {
		var n int
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox WHERE status = 'PUBLISHED'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == payments*events
	})
	close(stopChaos)
	<-chaosDone
	for _, rp := range reps {
		rp.stop(false)
	}

	for _, why := range pub.early() {
		t.Errorf("relay: %s", why)
	}

	// Receive until every event is in, in the order the queue hands them out.
	var got []eventKey
	distinct := map[eventKey]bool{}
	deadline := time.Now().Add(2 * time.Minute)
	for len(distinct) < payments*events && time.Now().Before(deadline) {
		for _, m := range tq.Drain(t, tq.QueueURL, payments*events-len(distinct), 10*time.Second) {
			var e eventKey
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &e); err != nil {
				t.Fatalf("message body: %v", err)
			}
			got = append(got, e)
			distinct[e] = true
		}
	}

	next := map[uuid.UUID]int{}
	dups := 0
	for _, e := range got {
		switch n := next[e.Subject]; {
		case e.Seq == n:
			next[e.Subject] = n + 1
		case e.Seq < n:
			dups++ // again, after its successors' predecessors: at least once
		default:
			t.Errorf("queue: payment %s: event %d arrived before event %d", e.Subject, e.Seq, n)
			next[e.Subject] = e.Seq + 1
		}
	}
	for _, a := range aggs {
		if next[a] != events {
			t.Errorf("queue: payment %s: %d of %d events arrived in order", a, next[a], events)
		}
	}
	t.Logf("published and received in %v", time.Since(start))
	t.Logf("%d messages received for %d events; %d duplicates; %d replicas killed mid-batch, the rest stopped", len(got), payments*events, dups, kills)
}

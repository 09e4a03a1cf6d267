package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/application/provenance"
	"github.com/payments-outbox/payments-outbox/domain/payment"
	"github.com/payments-outbox/payments-outbox/tools/internal/proc"
)

// params size one run.
type params struct {
	Payments  int           // payments to create
	Rate      float64       // payments per second
	BrokerCut time.Duration // how long the SNS/SQS endpoint is unreachable
	DBCut     time.Duration // how long Postgres is unreachable
	SlowFor   time.Duration // how long the ledger's database is slow while the visibility timeout is 1s
	// InboxMode is the ledger's LEDGER_INBOX_MODE: sync (the default) or
	// async. The guarantees checked are the same.
	InboxMode string
	// Ordered runs the relay in its ordered mode (OUTBOX_ORDERING=partition)
	// on a FIFO topic, queue and DLQ, the resources localstack/init-aws.sh
	// creates with PAYMENTS_FIFO=true; otherwise unordered (none) on
	// standard ones. The guarantees checked are the same.
	Ordered bool
	// Webhooks runs the webhooks service too (two replicas, a database
	// and a queue of their own) against a receiver that misbehaves while the
	// faults last, SIGKILLs one replica mid-attempt, and checks every event
	// reached its merchant's endpoint, signed (webhooks.go).
	Webhooks bool
	Progress io.Writer // one line per step
}

// modes names the run's inbox and relay modes, as the table prints them.
func (p params) modes() string {
	inbox, relay := p.InboxMode, "unordered"
	if inbox == "" {
		inbox = "sync"
	}
	if p.Ordered {
		relay = "ordered"
	}
	return inbox + "/" + relay
}

// The queue's visibility timeout outside the slow-handler fault. Its
// maxReceiveCount is production's (awstest.MaxReceiveCount, the value of
// localstack/init-aws.sh): every receive the faults and restarts cost a good
// message counts against the budget a real deployment has.
const visibilityTimeout = 20 * time.Second

// awsCallTimeout bounds each of the suite's own calls to the broker, so a
// broker that stops answering fails the run instead of hanging it.
const awsCallTimeout = 15 * time.Second

// poisonSendTimeout bounds each SendMessage of the poison. Those are sent
// while the traffic and the relays keep the broker busy, and a moto on a
// loaded machine can take longer than awsCallTimeout to answer one. They
// are not retried instead: a send cut off by its deadline may have been
// queued all the same, and a standard queue would then hold that message
// twice, which the DLQ check rightly counts as a failure. So the suite
// waits longer, still a bound, for the one answer.
const poisonSendTimeout = 2 * time.Minute

// report is what one run measured and what it found wrong.
type report struct {
	Modes                        string // the ledger's inbox mode and the relay's
	Sent, Accepted               int    // payments
	RefundsSent, RefundsAccepted int
	Manual, Captured, Canceled   int // manual payments authorized, and captured or canceled by a request
	Expired                      int // manual payments the payments service expired
	GaveUp                       int
	Faults                       []string
	Events                       int     // outbox rows: events the payments service committed
	Published                    float64 // broker ACKs counted by the relays (≥ Events when some were republished)
	Duplicates                   float64 // ledger_duplicates_suppressed_total over all ledger incarnations
	MaxOldestAge                 float64 // largest outbox_oldest_pending_age_seconds scraped
	Unavailable                  int64   // 503 answers the clients got
	Probe                        string  // what the API answered while Postgres was cut
	Drain                        time.Duration
	Total                        time.Duration
	Failures                     []string
}

func (r *report) fail(format string, args ...any) {
	r.Failures = append(r.Failures, fmt.Sprintf(format, args...))
}

type binaries struct{ payments, ledger, webhooks string }

// runSuite runs the services under faults once and checks the guarantees.
// Infrastructure problems (no database, a service that cannot start) stop it
// through t; broken guarantees are returned in report.Failures.
func runSuite(ctx context.Context, t testing.TB, bins binaries, name string, p params) *report {
	t.Helper()
	started := time.Now()
	rep := &report{Modes: p.modes()}
	logf := func(format string, args ...any) {
		if p.Progress != nil {
			fmt.Fprintf(p.Progress, "%s %6.1fs  %s\n", name, time.Since(started).Seconds(), fmt.Sprintf(format, args...))
		}
	}
	// The services' logs are kept when the run fails, for the post-mortem.
	logDir, err := os.MkdirTemp("", "faultsuite-logs-")
	if err != nil {
		t.Fatalf("log dir: %v", err)
	}
	t.Cleanup(func() {
		if len(rep.Failures) == 0 {
			_ = os.RemoveAll(logDir)
		}
	})

	// Fresh databases and a fresh topic, queue and DLQ.
	payDB, ledDB := pgtest.NewDatabase(t), pgtest.NewDatabase(t)
	tq := awstest.NewTopicQueue(t, awstest.QueueConfig{VisibilityTimeout: visibilityTimeout, FIFO: p.Ordered})

	// A proxy in front of every link the suite breaks.
	pgAddr := hostPort(t, pgtest.URL(t))
	awsAddr := hostPort(t, awstest.Endpoint(t))
	mk := func(target string) *proxy {
		px, err := newProxy(target)
		if err != nil {
			t.Fatalf("proxy: %v", err)
		}
		t.Cleanup(px.Close)
		return px
	}
	pgPay, pgLed := mk(pgAddr), mk(pgAddr)
	sns1, sns2, sqsP := mk(awsAddr), mk(awsAddr), mk(awsAddr)
	delivered := newDeliveries()
	sqsP.TapReplies(delivered.reader)

	common := func() map[string]string {
		env := map[string]string{"LOG_LEVEL": "warn", "MIGRATE_ON_START": "true", "SHUTDOWN_TIMEOUT": "5s"}
		for k, def := range map[string]string{"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"} {
			if os.Getenv(k) == "" {
				env[k] = def
			}
		}
		return env
	}
	// Signing on, as deployed: payments signs every event with the run's
	// key, and the ledger and the webhooks service refuse any other.
	signer, err := provenance.GenerateSigner("faultsuite")
	if err != nil {
		t.Fatalf("signing key: %v", err)
	}
	publicKeys := signer.PublicKey().String()
	var pays, leds []*proc.Process
	for i, sns := range []*proxy{sns1, sns2} {
		env := common()
		env["DATABASE_URL"] = viaProxy(t, payDB, pgPay)
		env["PAYMENTS_SIGNING_KEY_ID"], env["PAYMENTS_SIGNING_KEY"] = signer.KeyID(), signer.Seed()
		env["AWS_ENDPOINT_URL"] = "http://" + sns.Addr()
		env["PAYMENTS_TOPIC_ARN"] = tq.TopicARN
		env["OUTBOX_POLL_INTERVAL"] = "500ms"
		// Authorizations left uncaptured expire within the run, through
		// the same outbox and the same faults.
		env["PAYMENTS_AUTHORIZATION_TTL"] = "2s"
		env["PAYMENTS_AUTHORIZATION_EXPIRY_INTERVAL"] = "500ms"
		env["OUTBOX_ORDERING"] = "none"
		if p.Ordered {
			env["OUTBOX_ORDERING"] = "partition"
		}
		pr, err := newReplica(fmt.Sprintf("payments-%d", i+1), bins.payments, logDir, env)
		if err != nil {
			t.Fatalf("%v", err)
		}
		pays = append(pays, pr)
	}
	for i := range 2 {
		env := common()
		env["DATABASE_URL"] = viaProxy(t, ledDB, pgLed)
		env["AWS_ENDPOINT_URL"] = "http://" + sqsP.Addr()
		env["LEDGER_QUEUE_URL"] = tq.QueueURL
		env["LEDGER_DLQ_URL"] = tq.DLQURL
		env["LEDGER_WORKERS"] = "4"
		// Short long polls: a SIGKILLed ledger leaves its polls open at the
		// broker for their wait, and with the 1s visibility timeout of the
		// slow-handler fault each could take the same message in turn.
		env["LEDGER_WAIT_TIME"] = "2s"
		env["SHUTDOWN_TIMEOUT"] = "7s" // the wait + sqs.BatchBudget
		env["LEDGER_DLQ_POLL_INTERVAL"] = "1s"
		env["LEDGER_API_TOKENS"] = operatorToken // the balances are read through the API
		env["PAYMENTS_PUBLIC_KEYS"] = publicKeys
		if p.InboxMode != "" {
			env["LEDGER_INBOX_MODE"] = p.InboxMode
			// The processor polls the backlog the other replica records.
			env["LEDGER_INBOX_POLL_INTERVAL"] = "200ms"
		}
		pr, err := newReplica(fmt.Sprintf("ledger-%d", i+1), bins.ledger, logDir, env)
		if err != nil {
			t.Fatalf("%v", err)
		}
		leds = append(leds, pr)
	}
	// The webhooks service, beside the ledger, on the same topic.
	var (
		whs   []*proc.Process
		whDB  string
		wq    webhookQueue
		rcv   *receiver
		pgWh  *proxy
		sqsWh *proxy
	)
	if p.Webhooks {
		whDB = pgtest.NewDatabase(t)
		wq = newWebhookQueue(t, tq, p.Ordered)
		pgWh, sqsWh = mk(pgAddr), mk(awsAddr)
		rcv = newReceiver()
		t.Cleanup(rcv.srv.Close)
		secretsKey := newSecretsKey()
		for i := range 2 {
			env := common()
			maps.Copy(env, webhookEnv(viaProxy(t, whDB, pgWh), "http://"+sqsWh.Addr(), pays[i].Addr(), wq, secretsKey))
			env["PAYMENTS_PUBLIC_KEYS"] = publicKeys
			pr, err := newReplica(fmt.Sprintf("webhooks-%d", i+1), bins.webhooks, logDir, env)
			if err != nil {
				t.Fatalf("%v", err)
			}
			whs = append(whs, pr)
		}
	}
	all := append(append(append([]*proc.Process(nil), pays...), leds...), whs...)
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, pr := range all {
			wg.Go(func() { _ = pr.Stop() })
		}
		wg.Wait()
	})
	defer func() {
		if len(rep.Failures) > 0 {
			for _, pr := range all {
				logf("last lines of %s:\n%s", pr.Log(), pr.Tail(15))
			}
		}
	}()
	for _, pr := range all {
		if err := pr.Start(ctx); err != nil {
			t.Fatalf("%v", err)
		}
	}
	logf("payments ×2 and ledger ×2 ready (%s); logs in %s", rep.Modes, logDir)
	if p.Webhooks {
		rcv.register(ctx, t, whs[0].Addr(), payDB, webhookMerchants())
		logf("webhooks ×2 ready, %d merchant endpoints registered", len(webhookMerchants()))
	}

	scr := newScraper(append(append([]*proc.Process(nil), pays...), leds...))
	scrCtx, stopScraper := context.WithCancel(ctx)
	var scrDone sync.WaitGroup
	scrDone.Go(func() { scr.run(scrCtx, 250*time.Millisecond) })
	defer func() { stopScraper(); scrDone.Wait() }()

	// Traffic.
	key := platformKey(ctx, t, payDB)
	cl := newClient([]string{pays[0].Addr(), pays[1].Addr()}, key)
	acc := newAccepted()
	trafficDone, faultsDone := make(chan struct{}), make(chan struct{})
	go func() {
		sendTraffic(ctx, cl, name, p.Payments, p.Rate, faultsDone, acc)
		close(trafficDone)
	}()
	acceptedCount := func() int {
		acc.mu.Lock()
		defer acc.mu.Unlock()
		return len(acc.payments) + acc.manual
	}

	var poison, forgedIDs []string
	sendPoison := func() {
		bodies, unknown, err := poisonMessages()
		if err != nil {
			t.Fatalf("build poison: %v", err)
		}
		// The poison is signed with the payments key, as a producer's bug
		// would be, so that the inbox, not the signature check, refuses it.
		// The forgery is not: a valid event the payments service never
		// published, which must reach the DLQ unposted.
		forged, forgedID, err := forgedEvent()
		if err != nil {
			t.Fatalf("build a forgery: %v", err)
		}
		forgedIDs = append(forgedIDs, forgedID)
		for _, b := range append(append(bodies, unknown), forged) {
			in := &awssqs.SendMessageInput{QueueUrl: aws.String(tq.QueueURL), MessageBody: aws.String(b)}
			if b != forged {
				in.MessageAttributes = awstest.SQSAttributes(signer.Sign([]byte(b)))
			}
			if p.Ordered {
				// A group of its own each, so that no poison message
				// holds back a payment's events behind it.
				id := uuid.NewString()
				in.MessageGroupId, in.MessageDeduplicationId = aws.String("poison-"+id), aws.String(id)
			}
			cctx, cancel := context.WithTimeout(ctx, poisonSendTimeout)
			_, err := tq.SQS.SendMessage(cctx, in)
			cancel()
			if err != nil {
				t.Fatalf("send poison: %v", err)
			}
		}
		poison = append(poison, append(bodies, forged)...)
	}
	fault := func(desc string) {
		rep.Faults = append(rep.Faults, desc)
		logf("fault: %s", desc)
	}
	// poll reports whether cond came true within d.
	poll := func(d time.Duration, cond func() bool) bool {
		deadline := time.Now().Add(d)
		for !cond() {
			if time.Now().After(deadline) || ctx.Err() != nil {
				return false
			}
			time.Sleep(50 * time.Millisecond) // polling a condition, bounded by the deadline
		}
		return true
	}
	waitFor := func(what string, d time.Duration, cond func() bool) bool {
		if !poll(d, cond) {
			rep.fail("gave up waiting %s for %s", d, what)
			return false
		}
		return true
	}

	sendPoison()
	fault(fmt.Sprintf("%d poison messages (one an unsigned forgery) + 1 unknown event type sent to the queue", len(poison)))
	waitFor("the first payments to be accepted", 60*time.Second, func() bool { return acceptedCount() >= 10 })

	// 1. The SNS/SQS endpoint unreachable.
	sns1.Cut()
	sns2.Cut()
	sqsP.Cut()
	if p.Webhooks {
		sqsWh.Cut()
	}
	fault(fmt.Sprintf("SNS/SQS endpoint cut for %s (relays and consumers)", p.BrokerCut))
	time.Sleep(p.BrokerCut) // the length of the outage is the fault
	sns1.Restore()
	sns2.Restore()
	sqsP.Restore()
	if p.Webhooks {
		sqsWh.Restore()
	}

	// 2. SIGKILL of a payments replica between publish and mark: the broker
	// got the batch, the relay never hears the ACK, the process dies holding
	// the claim. Then a SIGKILL at a random moment.
	sns1.DropReplies()
	if poll(30*time.Second, func() bool { return sns1.upstream.Load() > 0 }) {
		time.Sleep(300 * time.Millisecond) // let the broker act on the request
		pays[0].Kill()
		fault("SIGKILL payments-1 with a publish acknowledged by the broker but not marked")
	} else {
		pays[0].Kill()
		fault("SIGKILL payments-1 (no publish was in flight)")
	}
	sns1.Restore()
	if err := pays[0].Start(ctx); err != nil {
		t.Fatalf("%v", err)
	}
	time.Sleep(time.Duration(rand.Int64N(int64(time.Second))))
	pays[1].Kill()
	fault("SIGKILL payments-2 at a random moment")
	if err := pays[1].Start(ctx); err != nil {
		t.Fatalf("%v", err)
	}
	if p.Webhooks {
		// A webhooks replica dies with attempts in flight: their leases
		// pass, and the other replica (or its restart) sends them again.
		if poll(20*time.Second, func() bool { return rcv.flying.Load() > 0 }) {
			whs[0].Kill()
			fault("SIGKILL webhooks-1 with webhook attempts in flight")
		} else {
			whs[0].Kill()
			fault("SIGKILL webhooks-1 (no attempt was in flight)")
		}
		if err := whs[0].Start(ctx); err != nil {
			t.Fatalf("%v", err)
		}
	}

	// 3 and 5. A handler slower than the visibility timeout, and a SIGKILL of
	// a ledger replica in the middle of a batch.
	setVisibility(ctx, t, tq.SQS, tq.QueueURL, time.Second)
	pgLed.SetLatency(100 * time.Millisecond)
	fault(fmt.Sprintf("visibility timeout 1s while every ledger database round trip takes +100ms, for %s", p.SlowFor))
	slowEnd := time.Now().Add(p.SlowFor)
	time.Sleep(p.SlowFor / 3) // let the batches received from now on pile up behind the slow database
	if poll(30*time.Second, func() bool { return inFlight(ctx, tq.SQS, tq.QueueURL) > 0 }) {
		leds[0].Kill()
		fault("SIGKILL ledger-1 in the middle of a batch")
	} else {
		leds[0].Kill()
		fault("SIGKILL ledger-1 (no batch was in flight)")
	}
	time.Sleep(time.Until(slowEnd)) // the length of the slow period is the fault
	pgLed.SetLatency(0)
	setVisibility(ctx, t, tq.SQS, tq.QueueURL, visibilityTimeout)
	if err := leds[0].Start(ctx); err != nil {
		t.Fatalf("%v", err)
	}

	// 4. Postgres unreachable: the API must answer 503 + Retry-After, not hang.
	pgPay.Cut()
	pgLed.Cut()
	if p.Webhooks {
		pgWh.Cut()
	}
	fault(fmt.Sprintf("Postgres cut for %s (every service)", p.DBCut))
	cutEnd := time.Now().Add(p.DBCut)
	rep.Probe = probeDuringCut(ctx, pays, key, name, rep)
	time.Sleep(time.Until(cutEnd)) // the length of the outage is the fault
	pgPay.Restore()
	pgLed.Restore()
	if p.Webhooks {
		pgWh.Restore()
	}

	// 6. More poison, mixed into the tail of the traffic.
	sendPoison()
	fault("poison messages sent again")
	close(faultsDone)
	if p.Webhooks {
		rcv.chaotic.Store(false)
		fault("webhook receiver failing at random until now: 500s, answers past the attempt timeout, connection resets, slow answers")
	}

	<-trafficDone
	logf("traffic done: %d/%d payments (%d manual: %d captured, %d canceled) and %d/%d refunds accepted",
		len(acc.payments)+acc.manual, acc.sent, acc.manual, len(acc.captures), len(acc.canceled), len(acc.refunds), acc.refSent)

	// Drain: everything committed is published, applied, and the poison is
	// in the DLQ.
	payConn := connect(ctx, t, payDB)
	ledConn := connect(ctx, t, ledDB)
	drainStart := time.Now()
	var state drainState
	var whState webhookState
	var whConn *pgx.Conn
	var coreDrained time.Duration // when payments and the ledger had drained, the webhooks perhaps not yet
	if p.Webhooks {
		whConn = connect(ctx, t, whDB)
	}
	drained := waitFor("the system to drain", 240*time.Second, func() bool {
		state = readState(ctx, payConn, ledConn, tq.SQS, tq.QueueURL, tq.DLQURL)
		if !state.drained(len(poison)) {
			return false
		}
		if coreDrained == 0 {
			coreDrained = time.Since(drainStart)
		}
		if p.Webhooks {
			whState = readWebhookState(ctx, whConn, tq.SQS, wq)
			return whState.drained(state.events)
		}
		return true
	})
	rep.Drain = time.Since(drainStart)
	if !drained {
		rep.fail("not drained: %+v", state)
		if p.Webhooks {
			rep.fail("webhooks not drained: %s", whState)
		}
	}
	scr.scrapeAll(ctx)
	logf("drained in %s: %+v", rep.Drain.Round(100*time.Millisecond), state)
	if p.Webhooks {
		logf("webhooks drained (%s after payments and the ledger): %s", (rep.Drain - coreDrained).Round(100*time.Millisecond), whState)
	}

	rep.Sent, rep.Accepted = acc.sent, len(acc.payments)+acc.manual
	rep.Manual, rep.Captured, rep.Canceled = acc.manual, len(acc.captures), len(acc.canceled)
	rep.RefundsSent, rep.RefundsAccepted = acc.refSent, len(acc.refunds)
	rep.GaveUp = acc.gaveUp
	rep.Events = state.events
	rep.Published = scr.sum("outbox_published_total")
	rep.Duplicates = scr.sum("ledger_duplicates_suppressed_total")
	rep.MaxOldestAge = scr.maxOldestAge()
	rep.Unavailable = cl.unavail.Load()

	// Where every event went: the DLQ's contents named one by one, and each
	// fact the ledger lacks followed to the last place its event was seen.
	events, err := readOutbox(ctx, payConn)
	if err != nil {
		t.Fatalf("%v", err)
	}
	dlq, err := readDLQ(ctx, tq.SQS, tq.DLQURL, max(len(poison), state.dlq), 30*time.Second)
	if err != nil {
		rep.fail("%v", err)
	}
	summary, dlqFailures := judgeDLQ(dlq, poison, events)
	logf("the ledger was handed %d messages carrying an event id; %s", delivered.all(), summary)
	for _, f := range dlqFailures {
		rep.fail("%s", f)
	}
	checkForgeries(ctx, rep, ledConn, forgedIDs)
	lost, err := unposted(ctx, payConn, ledConn, events, dlq, delivered, state, 20)
	if err != nil {
		t.Fatalf("%v", err)
	}
	for _, l := range lost {
		rep.fail("%s", l)
	}

	check(ctx, t, rep, bins, acc, cl, payConn, ledConn, payDB, ledDB)
	checkBalancesThroughAPIs(ctx, t, rep, payConn, pays[0].Addr(), leds[1].Addr(), key)
	if p.Webhooks {
		checkWebhooks(ctx, t, rep, rcv, payConn, whState, logf)
	}
	rep.Total = time.Since(started)
	return rep
}

// poisonMessages returns bodies the ledger can never apply (they must end in
// the DLQ) and one valid event of a type it does not handle (it must be
// recorded and acknowledged, not dead-lettered). The first two are broken
// beyond parsing, by hand. The others start from a payment.created document
// rendered by the producer's own encoder and change one field — the amount
// made negative, the type one the ledger has never heard of — so that apart
// from that field they follow the published format as it is today.
func poisonMessages() (poison []string, unknown string, err error) {
	invalid, err := editedEvent(func(doc map[string]any) error {
		data, ok := doc["data"].(map[string]any)
		if !ok {
			return fmt.Errorf("payment.created has no data object: %v", doc)
		}
		data["amount"] = -5
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	unknown, err = editedEvent(func(doc map[string]any) error {
		doc["type"] = "payment.not_yet_known"
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	poison = []string{
		"not json at all " + uuid.NewString(),
		fmt.Sprintf(`{"specversion":"1.0","type":"payment.created","note":%q}`, uuid.NewString()), // no id
		invalid,
	}
	return poison, unknown, nil
}

// forgedEvent returns a payment.created the payments service never
// published, valid in every respect but its missing signature, and its
// event id.
func forgedEvent() (body, id string, err error) {
	body, err = editedEvent(func(doc map[string]any) error {
		id, _ = doc["id"].(string)
		return nil
	})
	return body, id, err
}

// checkForgeries fails the run when a forged event was recorded or posted.
// That each reached the DLQ is judgeDLQ's to check, with the poison; the
// count of refusals is not checked here, since a replica killed before its
// next scrape takes its last counts with it.
func checkForgeries(ctx context.Context, rep *report, led *pgx.Conn, ids []string) {
	var recorded, posted int
	if err := led.QueryRow(ctx, `SELECT count(*) FROM inbox_messages WHERE id = ANY($1::uuid[])`, ids).Scan(&recorded); err != nil {
		rep.fail("count the forgeries in the inbox: %v", err)
		return
	}
	if err := led.QueryRow(ctx, `SELECT count(*) FROM ledger_transactions WHERE message_id = ANY($1::uuid[])`, ids).Scan(&posted); err != nil {
		rep.fail("count the forgeries' postings: %v", err)
		return
	}
	if recorded != 0 || posted != 0 {
		rep.fail("unsigned forgeries reached the ledger: %d in its inbox, %d posted, of %d sent", recorded, posted, len(ids))
	}
}

// editedEvent encodes the Created event of a new payment as the payments
// service publishes it, under a fresh message id, lets edit change the
// decoded document, and returns it encoded again.
func editedEvent(edit func(doc map[string]any) error) (string, error) {
	p, err := payment.New(payment.ID(uuid.NewString()), 100, "BRL", "cus_poison", "mer_poison", "", time.Now())
	if err != nil {
		return "", err
	}
	body, err := payments.EncodeEvent(uuid.NewString(), p.PullEvents()[0], payments.TraceContext{})
	if err != nil {
		return "", err
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		return "", err
	}
	if err := edit(doc); err != nil {
		return "", err
	}
	body, err = json.Marshal(doc)
	return string(body), err
}

// probeDuringCut sends one new payment to each replica while Postgres is
// unreachable and describes the answers; anything but a 503 with
// Retry-After is a failure.
func probeDuringCut(ctx context.Context, pays []*proc.Process, key, run string, rep *report) string {
	c := newClient(nil, key)
	var parts []string
	for i, pr := range pays {
		body := fmt.Appendf(nil, `{"amount": 1, "currency": "BRL", "payer_id": "probe", "merchant_id": "probe", "description": "%s probe %d"}`, run, i)
		start := time.Now()
		status, header, resBody, err := c.do(ctx, pr.Addr(), "/payments", fmt.Sprintf("%s-probe-%d", run, i), body)
		took := time.Since(start).Round(10 * time.Millisecond)
		switch {
		case err != nil:
			rep.fail("%s during the Postgres cut: %v after %s", pr.Name(), err, took)
			parts = append(parts, "error")
		case status != 503 || header.Get("Retry-After") == "":
			rep.fail("%s during the Postgres cut: %d Retry-After=%q after %s: %s", pr.Name(), status, header.Get("Retry-After"), took, resBody)
			parts = append(parts, strconv.Itoa(status))
		default:
			parts = append(parts, fmt.Sprintf("503 in %s", took))
		}
	}
	return strings.Join(parts, ", ")
}

func setVisibility(ctx context.Context, t testing.TB, client *awssqs.Client, queueURL string, d time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, awsCallTimeout)
	defer cancel()
	_, err := client.SetQueueAttributes(ctx, &awssqs.SetQueueAttributesInput{
		QueueUrl:   aws.String(queueURL),
		Attributes: map[string]string{string(sqstypes.QueueAttributeNameVisibilityTimeout): strconv.Itoa(int(d / time.Second))},
	})
	if err != nil {
		t.Fatalf("set visibility timeout: %v", err)
	}
}

func queueCounts(ctx context.Context, client *awssqs.Client, queueURL string) (visible, invisible int, err error) {
	ctx, cancel := context.WithTimeout(ctx, awsCallTimeout)
	defer cancel()
	out, err := client.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{
		QueueUrl: aws.String(queueURL),
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	if err != nil {
		return 0, 0, err
	}
	visible, _ = strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)])
	invisible, _ = strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
	return visible, invisible, nil
}

func inFlight(ctx context.Context, client *awssqs.Client, queueURL string) int {
	_, n, err := queueCounts(ctx, client, queueURL)
	if err != nil {
		return 0
	}
	return n
}

type drainState struct {
	events, notPublished int // outbox rows, and those not PUBLISHED
	facts, posted        int // money-moving ledger_facts (payment, capture, refund); ledger transactions
	// Manual payments in the payments database, and those no longer
	// authorized; holds the ledger placed, and released.
	manual, settled, held, released int
	authorized                      int // manual payments still waiting for a capture or their expiry
	queued, inflight, dlq           int
	err                             error
}

// String shows the error's text: fmt prints an unexported error field as a
// pointer.
func (s drainState) String() string {
	return fmt.Sprintf("{events:%d notPublished:%d facts:%d posted:%d manual:%d settled:%d held:%d released:%d authorized:%d queued:%d inflight:%d dlq:%d err:%v}",
		s.events, s.notPublished, s.facts, s.posted, s.manual, s.settled, s.held, s.released, s.authorized, s.queued, s.inflight, s.dlq, s.err)
}

// drained says whether nothing is left to do: every authorization expired
// or settled, and the ledger holds as many holds, and released as many, as
// the payments database has manual payments and settled ones. The DLQ holding more than the
// poison does not keep the run waiting: with the queue empty nothing more can
// reach it, and the DLQ's contents are judged message by message afterwards.
func (s drainState) drained(poison int) bool {
	return s.err == nil && s.notPublished == 0 && s.facts == s.posted &&
		s.authorized == 0 && s.manual == s.held && s.settled == s.released &&
		s.queued == 0 && s.inflight == 0 && s.dlq >= poison
}

func readState(ctx context.Context, pay, led *pgx.Conn, client *awssqs.Client, queueURL, dlqURL string) (s drainState) {
	if s.err = pay.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status <> 'PUBLISHED'),
		(SELECT count(*) FROM ledger_facts WHERE kind IN ('payment', 'capture', 'refund')) FROM outbox`).Scan(&s.events, &s.notPublished, &s.facts); s.err != nil {
		return s
	}
	if s.err = pay.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status <> 'authorized'), count(*) FILTER (WHERE status = 'authorized')
		FROM payments WHERE capture_method = 'manual'`).Scan(&s.manual, &s.settled, &s.authorized); s.err != nil {
		return s
	}
	if s.err = led.QueryRow(ctx, `SELECT (SELECT count(*) FROM ledger_transactions),
		count(*) FILTER (WHERE placed_at IS NOT NULL), count(*) FILTER (WHERE released_at IS NOT NULL) FROM ledger_payments`).Scan(&s.posted, &s.held, &s.released); s.err != nil {
		return s
	}
	if s.queued, s.inflight, s.err = queueCounts(ctx, client, queueURL); s.err != nil {
		return s
	}
	v, i, err := queueCounts(ctx, client, dlqURL)
	s.dlq, s.err = v+i, err
	return s
}

// check asserts the guarantees once the system drained.
func check(ctx context.Context, t testing.TB, rep *report, bins binaries, acc *accepted, cl *client,
	pay, led *pgx.Conn, payDB, ledDB string) {
	// Every payment and refund in the payments database has exactly one
	// ledger transaction with the same amount, and none lacks its payment.
	cmd := exec.CommandContext(ctx, bins.ledger, "reconcile", "--grace", "0s")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+ledDB, "PAYMENTS_DATABASE_URL="+payDB, "LEDGER_QUEUE_URL=unused", "LEDGER_DLQ_URL=unused")
	if out, err := cmd.CombinedOutput(); err != nil {
		rep.fail("ledger reconcile: %v\n%s", err, firstLines(string(out), 20))
	}

	// What the clients were told happened, happened once in the ledger.
	type posted struct {
		n      int
		amount int64
	}
	pays, refs := map[string]*posted{}, map[string]*posted{}
	rows, err := led.Query(ctx, `SELECT payment_id::text, kind, coalesce(fact_id::text, ''), amount FROM ledger_transactions`)
	if err != nil {
		t.Fatalf("read ledger: %v", err)
	}
	for rows.Next() {
		var pid, kind, rid string
		var amount int64
		if err := rows.Scan(&pid, &kind, &rid, &amount); err != nil {
			t.Fatalf("read ledger: %v", err)
		}
		m, key := pays, pid
		if kind == "refund" {
			m, key = refs, rid
		}
		if m[key] == nil {
			m[key] = &posted{}
		}
		m[key].n++
		m[key].amount = amount
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read ledger: %v", err)
	}
	for what, pair := range map[string][2]any{"payment": {acc.payments, pays}, "capture": {acc.captures, pays}, "refund": {acc.refunds, refs}} {
		want, got := pair[0].(map[string]int64), pair[1].(map[string]*posted)
		bad := 0
		for id, amount := range want {
			if g := got[id]; g == nil || g.n != 1 || g.amount != amount {
				if bad++; bad <= 5 {
					rep.fail("accepted %s %s of %d: ledger has %+v", what, id, amount, g)
				}
			}
		}
		if bad > 5 {
			rep.fail("… %d accepted %ss wrong in the ledger in all", bad, what)
		}
	}

	// Nothing left behind in the outbox.
	var pending, dead int
	if err := pay.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'PENDING'), count(*) FILTER (WHERE status = 'DEAD') FROM outbox`).Scan(&pending, &dead); err != nil {
		t.Fatalf("read outbox: %v", err)
	}
	if pending != 0 || dead != 0 {
		rep.fail("outbox: %d PENDING and %d DEAD rows after the drain", pending, dead)
	}

	// Nothing left behind in the inbox: every row of a type the ledger
	// applies was applied, in either mode (async: by the processor), and
	// none was parked. Rows of a type it does not apply stay, by design.
	var inboxPending, inboxParked int
	if err := led.QueryRow(ctx, `SELECT count(*) FILTER (WHERE parked_at IS NULL), count(*) FILTER (WHERE parked_at IS NOT NULL)
		FROM inbox_messages WHERE processed_at IS NULL AND type = ANY($1)`, ledgers.AppliedTypes()).Scan(&inboxPending, &inboxParked); err != nil {
		t.Fatalf("read inbox: %v", err)
	}
	if inboxPending != 0 || inboxParked != 0 {
		rep.fail("inbox: %d pending and %d parked rows of applied types after the drain", inboxPending, inboxParked)
	}

	// Each currency's entries sum to zero.
	rows, err = led.Query(ctx, `SELECT currency, sum(amount)::bigint FROM ledger_entries GROUP BY currency HAVING sum(amount) <> 0`)
	if err != nil {
		t.Fatalf("read entries: %v", err)
	}
	for rows.Next() {
		var cur string
		var sum int64
		if err := rows.Scan(&cur, &sum); err != nil {
			t.Fatalf("read entries: %v", err)
		}
		rep.fail("entries in %s sum to %d, want 0", cur, sum)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read entries: %v", err)
	}

	// Every account's balance is what the accepted payments, captures and
	// refunds add up to on it (a balance row only a hold made has posted 0), named by the chart of accounts (the merchant's
	// account, and the payer's as that merchant knows it), and is the sum
	// of its entries: the balance rows the postings keep lost nothing and
	// counted nothing twice, whatever the faults did to the postings.
	rows, err = led.Query(ctx, `
		SELECT coalesce(b.account_id, e.account_id) || ' ' || coalesce(b.currency, e.currency), coalesce(b.posted, 0), coalesce(b.posted, 0) = coalesce(e.total, 0)
		FROM ledger_balances b FULL JOIN
		     (SELECT account_id, currency, sum(amount) AS total FROM ledger_entries GROUP BY account_id, currency) e
		     USING (account_id, currency)`)
	if err != nil {
		t.Fatalf("read balances: %v", err)
	}
	balances := map[string]int64{}
	for rows.Next() {
		var key string
		var posted int64
		var isSum bool
		if err := rows.Scan(&key, &posted, &isSum); err != nil {
			t.Fatalf("read balances: %v", err)
		}
		if !isSum {
			rep.fail("balance %s: %d is not the sum of its entries", key, posted)
		}
		balances[key] = posted
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read balances: %v", err)
	}
	acc.mu.Lock()
	bad := 0
	for key, want := range acc.balances {
		if got, ok := balances[key]; !ok || got != want {
			if bad++; bad <= 5 {
				rep.fail("balance %s: ledger has %d (present: %v), the accepted requests add up to %d", key, got, ok, want)
			}
		}
	}
	for key, got := range balances {
		if _, ok := acc.balances[key]; !ok && got != 0 {
			if bad++; bad <= 5 {
				rep.fail("balance %s: no accepted request moved this account", key)
			}
		}
	}
	acc.mu.Unlock()
	if bad > 5 {
		rep.fail("… %d balances wrong in all", bad)
	}

	checkHolds(ctx, t, rep, acc, pay, led)

	// The clients: never a hang, never a 5xx but 503, never a refusal of a
	// correct request, nothing given up.
	if n := cl.hangs.Load(); n > 0 {
		rep.fail("%d requests hung past %s", n, clientTimeout)
	}
	if n := cl.serverErrs.Load() + cl.unexpected.Load() + cl.noRetryAft.Load(); n > 0 {
		cl.mu.Lock()
		rep.fail("%d wrong answers: %s", n, strings.Join(cl.problems, "; "))
		cl.mu.Unlock()
	}
	if acc.gaveUp > 0 {
		rep.fail("%d requests never got a 201", acc.gaveUp)
	}
}

// checkHolds compares the payments database's payments with what the
// ledger holds of each, and each merchant's balances with what its
// payments add up to: every hold placed once and released once (open, of
// the whole amount, only while the payment is authorized), captured never
// above authorized, and per merchant and currency available = the sum of
// amount_captured − refunded_amount and pending = the sum of the authorized
// payments' amounts. A capture or cancel refused with 409 must have met a
// payment its expiry canceled.
func checkHolds(ctx context.Context, t testing.TB, rep *report, acc *accepted, pay, led *pgx.Conn) {
	type ledgerPayment struct {
		authorized                 *int64
		held, captured, refunded   int64
		placed, released, merchant string
		currency                   string
	}
	ledgerPays := map[string]ledgerPayment{}
	rows, err := led.Query(ctx, `SELECT payment_id::text, amount_authorized, held, amount_captured, amount_refunded,
		coalesce(placed_at::text, ''), coalesce(released_at::text, ''), merchant_account, currency FROM ledger_payments`)
	if err != nil {
		t.Fatalf("read ledger payments: %v", err)
	}
	for rows.Next() {
		var id string
		var p ledgerPayment
		if err := rows.Scan(&id, &p.authorized, &p.held, &p.captured, &p.refunded, &p.placed, &p.released, &p.merchant, &p.currency); err != nil {
			t.Fatalf("read ledger payments: %v", err)
		}
		ledgerPays[id] = p
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read ledger payments: %v", err)
	}

	type sums struct{ available, pending int64 }
	want := map[string]*sums{} // merchant account + " " + currency
	bad := 0
	failf := func(format string, args ...any) {
		if bad++; bad <= 10 {
			rep.fail(format, args...)
		}
	}
	rows, err = pay.Query(ctx, `SELECT id::text, capture_method, status, amount, amount_captured, refunded_amount,
		currency, merchant_id, payer_id, coalesce(cancellation_reason, '') FROM payments`)
	if err != nil {
		t.Fatalf("read payments: %v", err)
	}
	seen := map[string]bool{}
	for rows.Next() {
		var id, method, status, currency, merchantID, payerID, reason string
		var amount, captured, refunded int64
		if err := rows.Scan(&id, &method, &status, &amount, &captured, &refunded, &currency, &merchantID, &payerID, &reason); err != nil {
			t.Fatalf("read payments: %v", err)
		}
		seen[id] = true
		merchant, _ := accountNames(paymentView{MerchantID: merchantID, PayerID: payerID, Currency: currency})
		if want[merchant] == nil {
			want[merchant] = &sums{}
		}
		want[merchant].available += captured - refunded
		if status == "authorized" {
			want[merchant].pending += amount
		}
		if reason == "expired" {
			rep.Expired++
		}
		acc.mu.Lock()
		refused, canceled := acc.refused[id], acc.canceled[id]
		acc.mu.Unlock()
		if refused && reason != "expired" {
			failf("payment %s: its capture or cancel was refused with 409, and it is %s (cancellation reason %q), not expired", id, status, reason)
		}
		if canceled && status != "canceled" {
			failf("payment %s: canceled by a request, and it is %s", id, status)
		}

		l, ok := ledgerPays[id]
		switch {
		case !ok:
			failf("payment %s (%s, %s): the ledger has no record of it", id, method, status)
			continue
		case l.merchant+" "+l.currency != merchant:
			failf("payment %s: the ledger holds it for %s %s, the payments database for %s", id, l.merchant, l.currency, merchant)
		case l.captured != captured || l.refunded != refunded:
			failf("payment %s: captured %d refunded %d, the ledger has captured %d refunded %d", id, captured, refunded, l.captured, l.refunded)
		}
		if method == "automatic" {
			if l.authorized != nil || l.held != 0 || l.placed != "" {
				failf("payment %s: automatic, and the ledger holds %d of it (authorized %v)", id, l.held, l.authorized)
			}
			continue
		}
		switch {
		case l.authorized == nil || *l.authorized != amount:
			failf("payment %s: authorized %d, the ledger's hold was placed for %v", id, amount, l.authorized)
		case l.captured > *l.authorized:
			failf("payment %s: the ledger captured %d of %d authorized", id, l.captured, *l.authorized)
		case status == "authorized" && (l.held != amount || l.released != ""):
			failf("payment %s: authorized %d, the ledger holds %d (released %q)", id, amount, l.held, l.released)
		case status != "authorized" && (l.held != 0 || l.released == ""):
			failf("payment %s: %s, and the ledger still holds %d of it (released %q)", id, status, l.held, l.released)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read payments: %v", err)
	}
	for id := range ledgerPays {
		if !seen[id] {
			failf("ledger payment %s: no such payment in the payments database", id)
		}
	}

	// The merchants' balances the postings and the holds keep.
	rows, err = led.Query(ctx, `SELECT account_id || ' ' || currency, posted, pending FROM ledger_balances WHERE account_id LIKE 'merchant:%'`)
	if err != nil {
		t.Fatalf("read balances: %v", err)
	}
	got := map[string]sums{}
	for rows.Next() {
		var key string
		var s sums
		if err := rows.Scan(&key, &s.available, &s.pending); err != nil {
			t.Fatalf("read balances: %v", err)
		}
		got[key] = s
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read balances: %v", err)
	}
	for key, w := range want {
		if g := got[key]; g != *w {
			failf("merchant %s: available %d pending %d, the payments database adds up to available %d pending %d", key, g.available, g.pending, w.available, w.pending)
		}
	}
	for key, g := range got {
		if want[key] == nil && g != (sums{}) {
			failf("merchant %s: available %d pending %d, and no payment of it in the payments database", key, g.available, g.pending)
		}
	}
	if bad > 10 {
		rep.fail("… %d payments and balances wrong in all", bad)
	}
}

func connect(ctx context.Context, t testing.TB, dbURL string) *pgx.Conn {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func hostPort(t testing.TB, raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		t.Fatalf("no host in %q", raw)
	}
	if u.Port() == "" {
		t.Fatalf("no port in %q", raw)
	}
	return u.Host
}

// viaProxy points dbURL at px instead of the server.
func viaProxy(t testing.TB, dbURL string, px *proxy) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("parse %q: %v", dbURL, err)
	}
	u.Host = px.Addr()
	return u.String()
}

func firstLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = append(lines[:n], fmt.Sprintf("… %d more lines", len(lines)-n))
	}
	return strings.Join(lines, "\n")
}

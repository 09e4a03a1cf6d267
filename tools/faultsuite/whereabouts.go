package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/jackc/pgx/v5"
)

// When a run ends with a fact the ledger never posted, or a message in the
// DLQ that is not poison, a count says that something went wrong but not
// what. The functions here follow each such event through every place it
// can be — the outbox, the broker's queue and DLQ, the ledger's inbox — so
// that the failure names the event and the last place it was seen.

// dlqMessage is one message read from the DLQ.
type dlqMessage struct {
	body     string
	eventID  string // the CloudEvents id, "" when the body has none
	typ      string
	receives string // ApproximateReceiveCount, this read included
}

// readDLQ receives and deletes every message of the DLQ: until want
// arrived, then until a receive comes back empty, so that a DLQ holding
// more than it should shows all of it.
func readDLQ(ctx context.Context, client *awssqs.Client, dlqURL string, want int, timeout time.Duration) ([]dlqMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var got []dlqMessage
	for ctx.Err() == nil {
		out, err := client.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(dlqURL),
			MaxNumberOfMessages:         10,
			WaitTimeSeconds:             1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameApproximateReceiveCount},
		})
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return got, fmt.Errorf("receive from the DLQ: %w", err)
		}
		if len(out.Messages) == 0 {
			if len(got) >= want {
				break
			}
			continue
		}
		entries := make([]sqstypes.DeleteMessageBatchRequestEntry, len(out.Messages))
		for i, m := range out.Messages {
			got = append(got, newDLQMessage(m))
			entries[i] = sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle}
		}
		if _, err := client.DeleteMessageBatch(ctx, &awssqs.DeleteMessageBatchInput{QueueUrl: aws.String(dlqURL), Entries: entries}); err != nil {
			return got, fmt.Errorf("delete from the DLQ: %w", err)
		}
	}
	return got, nil
}

func newDLQMessage(m sqstypes.Message) dlqMessage {
	d := dlqMessage{body: aws.ToString(m.Body), receives: m.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)]}
	var doc struct {
		ID   string `json:"id"`
		Type string `json:"type"`
	}
	if json.Unmarshal([]byte(d.body), &doc) == nil {
		d.eventID, d.typ = doc.ID, doc.Type
	}
	return d
}

func (d dlqMessage) String() string {
	if d.eventID == "" && d.typ == "" {
		return fmt.Sprintf("%q, %s receives", d.body[:min(len(d.body), 40)], d.receives)
	}
	return fmt.Sprintf("%s %s, %s receives", d.typ, d.eventID, d.receives)
}

// judgeDLQ compares what the DLQ held with the poison sent: it describes
// the contents, and names every message that should not be there — a good
// event dead-lettered, or a poison message delivered to the DLQ twice.
func judgeDLQ(dlq []dlqMessage, poison []string, events map[string]outboxEvent) (summary string, failures []string) {
	sent := map[string]int{}
	for _, p := range poison {
		sent[p]++
	}
	seen := map[string]int{}
	var good, other, parts []string
	for _, m := range dlq {
		switch {
		case sent[m.body] > 0:
			seen[m.body]++
			if seen[m.body] > sent[m.body] {
				failures = append(failures, fmt.Sprintf("a poison message reached the DLQ %d times, sent %d: %s", seen[m.body], sent[m.body], m))
			}
			parts = append(parts, "poison "+m.String())
		case events[m.eventID].id != "":
			good = append(good, m.eventID)
			failures = append(failures, fmt.Sprintf("a good message was dead-lettered: %s type %s receives %s", m.eventID, m.typ, m.receives))
			parts = append(parts, "GOOD "+m.String())
		default:
			other = append(other, m.String())
			failures = append(failures, "a message the suite never sent is in the DLQ: "+m.String())
			parts = append(parts, "UNKNOWN "+m.String())
		}
	}
	for _, p := range poison {
		if seen[p] < sent[p] {
			failures = append(failures, fmt.Sprintf("a poison message is missing from the DLQ: %q", firstLines(p, 1)))
			seen[p] = sent[p] // named once
		}
	}
	sort.Strings(parts)
	summary = fmt.Sprintf("DLQ held %d messages (%d poison sent, %d good events, %d unknown):\n  %s",
		len(dlq), len(poison), len(good), len(other), strings.Join(parts, "\n  "))
	return summary, failures
}

// outboxEvent is one outbox row and the fact it carries.
type outboxEvent struct {
	id, typ, status string
	attempts        int
	paymentID       string
	refundID        string // "" for payment.created
}

func readOutbox(ctx context.Context, pay *pgx.Conn) (map[string]outboxEvent, error) {
	rows, err := pay.Query(ctx, `SELECT id::text, type, status, attempts, aggregate_id::text,
		coalesce(payload->'data'->>'refund_id', '') FROM outbox`)
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	events := map[string]outboxEvent{}
	for rows.Next() {
		var e outboxEvent
		if err := rows.Scan(&e.id, &e.typ, &e.status, &e.attempts, &e.paymentID, &e.refundID); err != nil {
			return nil, fmt.Errorf("read outbox: %w", err)
		}
		events[e.id] = e
	}
	return events, rows.Err()
}

// unposted follows each fact that moved money (an automatic payment, a
// capture, a refund) and has no ledger transaction to where its event is
// (check compares the holds), and returns one line each (at most limit).
func unposted(ctx context.Context, pay, led *pgx.Conn, events map[string]outboxEvent, dlq []dlqMessage, delivered *deliveries, state drainState, limit int) ([]string, error) {
	posted := map[string]bool{} // payment id + "/" + fact id (a refund's id)
	rows, err := led.Query(ctx, `SELECT payment_id::text, coalesce(fact_id::text, '') FROM ledger_transactions`)
	if err != nil {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	for rows.Next() {
		var pid, rid string
		if err := rows.Scan(&pid, &rid); err != nil {
			return nil, fmt.Errorf("read ledger: %w", err)
		}
		posted[pid+"/"+rid] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read ledger: %w", err)
	}

	type fact struct{ kind, paymentID, refundID string }
	var missing []fact
	rows, err = pay.Query(ctx, `SELECT kind, payment_id::text, coalesce(fact_id::text, '') FROM ledger_facts
		WHERE kind IN ('payment', 'capture', 'refund') ORDER BY occurred_at`)
	if err != nil {
		return nil, fmt.Errorf("read facts: %w", err)
	}
	for rows.Next() {
		var f fact
		if err := rows.Scan(&f.kind, &f.paymentID, &f.refundID); err != nil {
			return nil, fmt.Errorf("read facts: %w", err)
		}
		if !posted[f.paymentID+"/"+f.refundID] {
			missing = append(missing, f)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read facts: %w", err)
	}

	byFact := map[string][]outboxEvent{}
	for _, e := range events {
		byFact[e.paymentID+"/"+e.refundID] = append(byFact[e.paymentID+"/"+e.refundID], e)
	}
	inDLQ := map[string]dlqMessage{}
	for _, m := range dlq {
		inDLQ[m.eventID] = m
	}
	var lines []string
	for i, f := range missing {
		if i == limit {
			lines = append(lines, fmt.Sprintf("… %d facts not posted in all", len(missing)))
			break
		}
		what := "payment " + f.paymentID
		if f.kind == "refund" {
			what = fmt.Sprintf("refund %s of payment %s", f.refundID, f.paymentID)
		}
		evs := byFact[f.paymentID+"/"+f.refundID]
		if len(evs) == 0 {
			lines = append(lines, what+" not posted: no outbox row carries it")
			continue
		}
		for _, e := range evs {
			lines = append(lines, fmt.Sprintf("%s not posted: event %s %s: %s", what, e.typ, e.id, whereIs(ctx, led, e, inDLQ, delivered, state)))
		}
	}
	return lines, nil
}

// whereIs says where the event e of a fact that was not posted is.
func whereIs(ctx context.Context, led *pgx.Conn, e outboxEvent, inDLQ map[string]dlqMessage, delivered *deliveries, state drainState) string {
	if e.status != "PUBLISHED" {
		return fmt.Sprintf("in the outbox, %s, attempts=%d", e.status, e.attempts)
	}
	where := fmt.Sprintf("outbox PUBLISHED (failed attempts=%d)", e.attempts)
	var processed bool
	var inboxErr string
	err := led.QueryRow(ctx, `SELECT processed_at IS NOT NULL, coalesce(error, '') FROM inbox_messages WHERE id = $1`, e.id).Scan(&processed, &inboxErr)
	switch {
	case err == pgx.ErrNoRows:
		where += "; not in the ledger inbox"
	case err != nil:
		where += fmt.Sprintf("; ledger inbox unreadable: %v", err)
	default:
		where += fmt.Sprintf("; in the ledger inbox, processed=%t error=%q", processed, inboxErr)
	}
	n, known := delivered.of(e.id), delivered.all() > 0
	if known {
		where += fmt.Sprintf("; delivered to the ledger %d times", n)
	} else {
		where += "; deliveries unknown (no event id was read in the queue's replies)"
	}
	switch m, ok := inDLQ[e.id]; {
	case ok:
		return where + "; in the DLQ after " + m.receives + " receives"
	case state.queued+state.inflight > 0:
		return where + fmt.Sprintf("; not in the DLQ; the queue still holds %d visible and %d in flight", state.queued, state.inflight)
	case !known:
		return where + "; not in the DLQ and the queue is empty"
	case n == 0:
		return where + "; not in the DLQ and the queue is empty: LOST BY THE BROKER, which acknowledged its publish and never delivered it"
	default:
		return where + "; not in the DLQ and the queue is empty: deleted without being posted"
	}
}

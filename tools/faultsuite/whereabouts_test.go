package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// TestJudgeDLQ: exactly the poison passes; a good event, a poison message
// dead-lettered twice, a missing poison message and a stranger each fail,
// named.
func TestJudgeDLQ(t *testing.T) {
	poison := []string{"not json at all 1", `{"specversion":"1.0","type":"payment.created"}`}
	good := outboxEvent{id: "0192f0d2-6a3b-7c4d-8e5f-000000000001", typ: "payment.created", status: "PUBLISHED"}
	events := map[string]outboxEvent{good.id: good}
	goodBody := fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":"payment.created"}`, good.id)
	msg := func(body, receives string) dlqMessage {
		return newDLQMessage(sqstypes.Message{
			Body:       aws.String(body),
			Attributes: map[string]string{string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount): receives},
		})
	}

	for _, c := range []struct {
		name string
		dlq  []dlqMessage
		want []string // one substring per failure, in order
	}{
		{"exactly the poison", []dlqMessage{msg(poison[0], "11"), msg(poison[1], "11")}, nil},
		{"a good event", []dlqMessage{msg(poison[0], "11"), msg(goodBody, "10"), msg(poison[1], "11")},
			[]string{"a good message was dead-lettered: " + good.id + " type payment.created receives 10"}},
		{"poison twice", []dlqMessage{msg(poison[0], "11"), msg(poison[0], "11"), msg(poison[1], "11")},
			[]string{"a poison message reached the DLQ 2 times, sent 1"}},
		{"poison missing", []dlqMessage{msg(poison[1], "11")},
			[]string{"a poison message is missing from the DLQ"}},
		{"a stranger", []dlqMessage{msg(poison[0], "11"), msg(poison[1], "11"), msg("hello", "1")},
			[]string{"a message the suite never sent is in the DLQ"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			summary, failures := judgeDLQ(c.dlq, poison, events)
			if len(failures) != len(c.want) {
				t.Fatalf("got failures %q, want %d\n%s", failures, len(c.want), summary)
			}
			for i, w := range c.want {
				if !strings.Contains(failures[i], w) {
					t.Errorf("failure %d: got %q, want it to contain %q", i, failures[i], w)
				}
			}
			if !strings.Contains(summary, fmt.Sprintf("DLQ held %d messages", len(c.dlq))) {
				t.Errorf("summary %q does not count the DLQ", summary)
			}
		})
	}
}

// TestDeliveriesFindIDsSplitAcrossReads feeds a ReceiveMessage reply in
// pieces, cut inside an id: each event id is counted once per reply, per
// connection, in compact JSON and as Postgres renders jsonb, and an id in
// the event's data is no event id.
func TestDeliveriesFindIDsSplitAcrossReads(t *testing.T) {
	const a, b = "0192f0d2-6a3b-7c4d-8e5f-00000000000a", "0192f0d2-6a3b-7c4d-8e5f-00000000000b"
	reply := `{"Messages":[{"Body":"{\"specversion\":\"1.0\",\"id\":\"` + a + `\",\"type\":\"payment.created\"}"},` +
		`{"Body":"{\"id\": \"` + b + `\", \"data\": {\"payment_id\": \"` + a + `\"}, \"type\": \"payment.refunded\"}"}]}` // as jsonb renders it
	d := newDeliveries()
	for _, size := range []int{1, 7, 40, len(reply)} {
		read := d.reader() // one connection
		for i := 0; i < len(reply); i += size {
			read([]byte(reply[i:min(i+size, len(reply))]))
		}
	}
	if got := d.of(a); got != 4 {
		t.Errorf("event a delivered %d times, want 4", got)
	}
	if got := d.of(b); got != 4 {
		t.Errorf("event b delivered %d times, want 4", got)
	}
	if got := d.of("0192f0d2-6a3b-7c4d-8e5f-00000000000c"); got != 0 {
		t.Errorf("an event never delivered counted %d times", got)
	}
}

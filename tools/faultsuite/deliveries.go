package main

import (
	"bytes"
	"regexp"
	"sync"
)

// deliveries counts, per event id, the messages the broker handed to the
// ledger: it reads the replies that come back through the ledger's SQS
// proxy. A fact the ledger never posted is then told apart: an event the
// broker never delivered was lost by the broker, one it delivered was
// dropped by the ledger.
//
// It reads the AWS JSON protocol the SDK speaks to SQS, where a message's
// body is a JSON string, so the CloudEvents id of an event appears as
// \"id\":\"<uuid>\", or with a space after the colon in a body an encoder
// spaced. Only ReceiveMessage replies carry bodies.
type deliveries struct {
	mu     sync.Mutex
	counts map[string]int
	total  int
}

var eventIDInReply = regexp.MustCompile(`\\"id\\":\s*\\"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\\"`)

// tailKeep is longer than one match, so that an id split between two reads
// is found in the second.
const tailKeep = 64

func newDeliveries() *deliveries { return &deliveries{counts: map[string]int{}} }

// reader returns the reader of one connection's replies.
func (d *deliveries) reader() func([]byte) {
	var tail []byte
	return func(chunk []byte) {
		buf := append(tail, chunk...)
		var found []string
		for _, m := range eventIDInReply.FindAllSubmatchIndex(buf, -1) {
			if m[1] <= len(tail) {
				continue // wholly in the tail: counted with the read before
			}
			found = append(found, string(buf[m[2]:m[3]]))
		}
		tail = bytes.Clone(buf[max(0, len(buf)-tailKeep):])
		if len(found) == 0 {
			return
		}
		d.mu.Lock()
		for _, id := range found {
			d.counts[id]++
		}
		d.total += len(found)
		d.mu.Unlock()
	}
}

// of returns how many times the event was delivered to the ledger.
func (d *deliveries) of(eventID string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.counts[eventID]
}

// all returns how many deliveries were seen in all. None at all, while the
// ledger posted, means the replies could not be read (another protocol):
// then no count of one event says anything.
func (d *deliveries) all() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.total
}

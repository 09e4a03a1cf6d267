// Package sns publishes outbox messages to an Amazon SNS topic: the relay's
// Publisher on AWS.
//
// Each message goes out exactly as the write side stored it (the CloudEvents JSON
// document is the SNS message body; with raw message delivery it is also the SQS
// body) with the message attributes id and type, so subscriptions can filter on
// them without parsing the body, and, when the write that committed it was
// traced, with the attributes traceparent and tracestate, which the consumer
// continues its trace from.
package sns

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"
	"golang.org/x/sync/errgroup"

	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/provenance"
)

const (
	// maxBatchEntries is SNS's limit of messages per PublishBatch call.
	maxBatchEntries = 10
	// maxBatchBytes is SNS's limit on one message and on a whole PublishBatch
	// request: bodies plus attribute names, types and values.
	maxBatchBytes = 256 * 1024
)

// The message attributes every message carries, of data type String: its
// CloudEvent id and type, so that a subscription can filter without parsing
// bodies. api/events.asyncapi.yaml documents them as each message's headers;
// a test holds the two together.
const (
	attrID   = "id"
	attrType = "type"
)

// The optional message attributes of the W3C trace context stored with the
// outbox row (the same values as the event's CloudEvents extension
// attributes of those names), sent only when not empty: SNS refuses an
// attribute with an empty value.
const (
	attrTraceParent = "traceparent"
	attrTraceState  = "tracestate"
)

// ErrTooLarge is the error for a message SNS would reject for its size. Retrying
// it cannot succeed, so it is reported as outbox.ErrPermanent: the row goes DEAD on
// its first attempt, where an operator sees it.
var ErrTooLarge = errors.New("message exceeds the SNS size limit of 256 KiB")

// Publisher sends relay batches to one topic with PublishBatch.
type Publisher struct {
	client   *awssns.Client
	topicARN string
	inFlight int
	fifo     bool
}

// IsFIFO reports whether topicARN names a FIFO topic: SNS requires their
// names to end in .fifo.
func IsFIFO(topicARN string) bool { return strings.HasSuffix(topicARN, ".fifo") }

var (
	_ outbox.Publisher  = (*Publisher)(nil)
	_ provenance.Broker = (*Publisher)(nil)
)

// Config tunes a Publisher. The zero value makes one call at a time.
type Config struct {
	// InFlight is how many PublishBatch calls of one relay batch run at once
	// (0: one). A relay batch becomes several calls of at most 10 messages;
	// running them at once is what makes a 100-message batch cost one round
	// trip instead of ten.
	InFlight int
}

// NewPublisher returns a Publisher to topicARN, its calls tuned by cfg.
//
// To a FIFO topic each message goes with MessageGroupId = its aggregate id,
// so SNS and the FIFO queues behind it keep each payment's events in the
// order they were published, and MessageDeduplicationId = its event id, so a
// message published again inside the at-least-once window within SNS's
// five-minute deduplication interval is dropped there. The calls of one batch
// still run at once: the relay's ordered mode puts at most one message of an
// aggregate in a batch, and publishes the next only after this one is
// acknowledged.
func NewPublisher(client *awssns.Client, topicARN string, cfg Config) *Publisher {
	return &Publisher{client: client, topicARN: topicARN, inFlight: max(cfg.InFlight, 1), fifo: IsFIFO(topicARN)}
}

// Publish implements outbox.Publisher. Every entry of each response is looked at:
// only an id in Successful counts as acknowledged; an id in Failed gets its code
// and message, wrapped in outbox.ErrPermanent when SNS refused the entry's content; an id in neither (it should not happen) gets an error too, so a row
// is never marked PUBLISHED on a guess.
func (p *Publisher) Publish(ctx context.Context, msgs []outbox.Message) []error {
	return p.PublishSigned(ctx, msgs, nil)
}

// PublishSigned implements provenance.Broker: Publish, with sigs[i] sent
// as message i's signature attributes (provenance.KeyIDAttribute and
// provenance.SignatureAttribute). sigs is nil or as long as msgs.
func (p *Publisher) PublishSigned(ctx context.Context, msgs []outbox.Message, sigs []provenance.Signature) []error {
	errs := make([]error, len(msgs))
	if sigs != nil && len(sigs) != len(msgs) {
		err := fmt.Errorf("sns: %d signatures for %d messages", len(sigs), len(msgs))
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	var g errgroup.Group
	g.SetLimit(p.inFlight)
	for _, call := range chunk(msgs, sigs, errs) {
		g.Go(func() error {
			p.publishBatch(ctx, msgs, sigs, call, errs)
			return nil
		})
	}
	_ = g.Wait() // errors are per message, in errs
	return errs
}

// signatureOf is message i's signature, the zero one when sigs is nil.
func signatureOf(sigs []provenance.Signature, i int) provenance.Signature {
	if sigs == nil {
		return provenance.Signature{}
	}
	return sigs[i]
}

// chunk splits msgs into PublishBatch calls, as index lists, within both SNS
// limits. A message too large on its own gets ErrTooLarge in errs and no call.
func chunk(msgs []outbox.Message, sigs []provenance.Signature, errs []error) [][]int {
	var (
		calls [][]int
		cur   []int
		bytes int
	)
	for i, m := range msgs {
		size := messageSize(m, signatureOf(sigs, i))
		if size > maxBatchBytes {
			errs[i] = fmt.Errorf("%w: %w: %d bytes", outbox.ErrPermanent, ErrTooLarge, size)
			continue
		}
		if len(cur) == maxBatchEntries || bytes+size > maxBatchBytes {
			calls, cur, bytes = append(calls, cur), nil, 0
		}
		cur = append(cur, i)
		bytes += size
	}
	if len(cur) > 0 {
		calls = append(calls, cur)
	}
	return calls
}

// messageSize is what SNS counts against its limit: body plus each attribute's
// name, data type and value.
func messageSize(m outbox.Message, sig provenance.Signature) int {
	const idLen = 36 // a UUID in text form
	n := len(m.Payload) + len(attrID) + len("String") + idLen + len(attrType) + len("String") + len(m.Type)
	if m.TraceParent != "" {
		n += len(attrTraceParent) + len("String") + len(m.TraceParent)
	}
	if m.TraceState != "" {
		n += len(attrTraceState) + len("String") + len(m.TraceState)
	}
	if sig.KeyID != "" {
		n += len(provenance.KeyIDAttribute) + len("String") + len(sig.KeyID)
	}
	if sig.Value != "" {
		n += len(provenance.SignatureAttribute) + len("String") + len(sig.Value)
	}
	return n
}

func (p *Publisher) publishBatch(ctx context.Context, msgs []outbox.Message, sigs []provenance.Signature, idx []int, errs []error) {
	entries := make([]types.PublishBatchRequestEntry, len(idx))
	for j, i := range idx {
		m := msgs[i]
		entries[j] = types.PublishBatchRequestEntry{
			// Entry ids only need to be unique within the call; the position
			// maps answers back to messages without a lookup table.
			Id:                aws.String(strconv.Itoa(j)),
			Message:           aws.String(string(m.Payload)),
			MessageAttributes: messageAttributes(m, signatureOf(sigs, i)),
		}
		if p.fifo {
			entries[j].MessageGroupId = aws.String(m.AggregateID.String())
			entries[j].MessageDeduplicationId = aws.String(m.ID.String())
		}
	}
	out, err := p.client.PublishBatch(ctx, &awssns.PublishBatchInput{
		TopicArn:                   aws.String(p.topicARN),
		PublishBatchRequestEntries: entries,
	})
	if err != nil {
		err = fmt.Errorf("sns publish batch: %w", err)
		for _, i := range idx {
			errs[i] = err
		}
		return
	}
	answered := make([]bool, len(idx))
	for _, s := range out.Successful {
		if j, ok := entryIndex(s.Id, len(idx)); ok {
			answered[j] = true
		}
	}
	for _, f := range out.Failed {
		if j, ok := entryIndex(f.Id, len(idx)); ok {
			answered[j] = true
			err := fmt.Errorf("sns rejected message: %s: %s (sender fault: %t)",
				aws.ToString(f.Code), aws.ToString(f.Message), f.SenderFault)
			if refusesTheEntry(f) {
				err = fmt.Errorf("%w: %w", outbox.ErrPermanent, err)
			}
			errs[idx[j]] = err
		}
	}
	for j, ok := range answered {
		if !ok {
			errs[idx[j]] = errors.New("sns returned no result for message")
		}
	}
}

// messageAttributes returns the SNS message attributes of m, signed with sig
// (none when sig is the zero Signature).
func messageAttributes(m outbox.Message, sig provenance.Signature) map[string]types.MessageAttributeValue {
	attrs := map[string]types.MessageAttributeValue{
		attrID:   {DataType: aws.String("String"), StringValue: aws.String(m.ID.String())},
		attrType: {DataType: aws.String("String"), StringValue: aws.String(m.Type)},
	}
	if m.TraceParent != "" {
		attrs[attrTraceParent] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(m.TraceParent)}
	}
	if m.TraceState != "" {
		attrs[attrTraceState] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(m.TraceState)}
	}
	if sig.KeyID != "" {
		attrs[provenance.KeyIDAttribute] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(sig.KeyID)}
	}
	if sig.Value != "" {
		attrs[provenance.SignatureAttribute] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(sig.Value)}
	}
	return attrs
}

// refusesTheEntry reports whether SNS refused an entry for its content, so that
// the same entry would be refused again: a sender fault with a validation code.
// Other sender faults (KMS access, a missing topic, security) are the
// deployment's and go away once it is fixed, so they are retried.
func refusesTheEntry(f types.BatchResultErrorEntry) bool {
	switch aws.ToString(f.Code) {
	case "InvalidParameter", "InvalidParameterValue", "ParameterValueInvalid", "ValidationException":
		return f.SenderFault
	}
	return false
}

func entryIndex(id *string, n int) (int, bool) {
	j, err := strconv.Atoi(aws.ToString(id))
	return j, err == nil && j >= 0 && j < n
}

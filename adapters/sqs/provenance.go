package sqs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/payments-outbox/payments-outbox/adapters/tracing"
	"github.com/payments-outbox/payments-outbox/application/provenance"
)

// A consumer acts only on what the payments service published: before a
// message reaches the handler — before the inbox records anything — its
// signature (application/provenance) is verified against the body SQS
// delivered. A message that fails is never handed on: it is copied to the
// DLQ at once with the reason beside it, then deleted from the queue, and
// counted in <service>_messages_unverified_total by reason. Copying it
// there, rather than letting it fail maxReceiveCount times, keeps the reason
// with the message for whoever reads the DLQ, counts it once, and spends no
// receive of the queue's budget on it. If the copy fails, the message takes
// the poison path instead (made visible again, it reaches the DLQ by the
// queue's redrive policy), without its reason.

// The attributes a message moved to the DLQ for failing verification
// carries besides its own: why, and who sent it.
const (
	// AttrRejected is the reason: a provenance.Reasons label, a colon and
	// the detail ("unknown_key: key id …").
	AttrRejected = "rejected"
	// AttrSenderID is the SenderId SQS recorded for the message: the IAM
	// user or role that sent it straight to the queue, or SNS's own id when
	// the topic delivered it.
	AttrSenderID = "rejected-sender-id"
)

// attrID is the message attribute of the CloudEvent id the producer sets.
const attrID = "id"

// keptAttributes are the attributes of a rejected message copied to the DLQ:
// those a producer sets. Naming them bounds the copy within SQS's ten
// attributes a message whatever the sender added.
var keptAttributes = []string{attrID, attrType, tracing.TraceParent, tracing.TraceState, provenance.KeyIDAttribute, provenance.SignatureAttribute}

// receivedAttributes are the message attributes a receive asks for: those
// the consumer reads and those it keeps on a rejected message; and
// receivedSystemAttributes the system attributes: the receive count, which
// the logs show, the sender and, on a FIFO queue, the message group, which
// a rejected message keeps.
var (
	receivedAttributes       = keptAttributes
	receivedSystemAttributes = []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount,
		types.MessageSystemAttributeNameSenderId, types.MessageSystemAttributeNameMessageGroupId}
)

// checkOrigin verifies m's signature. ok means hand it to the handler;
// otherwise v is what becomes of it: ack once its copy is in the DLQ,
// poison when the copy failed.
func (c *Consumer) checkOrigin(ctx context.Context, m types.Message) (v verdict, ok bool) {
	if c.cfg.Verifier == nil {
		return 0, true
	}
	sig := provenance.Signature{KeyID: messageAttr(m, provenance.KeyIDAttribute), Value: messageAttr(m, provenance.SignatureAttribute)}
	outcome, err := c.cfg.Verifier.Verify([]byte(aws.ToString(m.Body)), sig)
	if err == nil {
		if outcome == provenance.Unsigned {
			c.metrics.unsignedAccepted.Inc()
		}
		return 0, true
	}
	reason := provenance.Reason(err)
	c.metrics.unverified.WithLabelValues(reason).Inc()
	log := c.log.With("sqs_message_id", aws.ToString(m.MessageId), "reason", reason,
		"sender_id", m.Attributes[string(types.MessageSystemAttributeNameSenderId)])
	if moveErr := c.moveToDLQ(ctx, m, reason+": "+err.Error()); moveErr != nil {
		log.ErrorContext(ctx, "message failed verification and could not be copied to the DLQ; left for the queue's redrive policy, unapplied",
			"err", err, "copy_err", moveErr)
		c.makeVisible(context.WithoutCancel(ctx), m)
		return poison, false
	}
	log.WarnContext(ctx, "message failed verification: moved to the DLQ, unapplied", "err", err)
	return ack, false
}

// moveToDLQ sends a copy of m to the DLQ with why beside it; the caller
// deletes m from the queue once it returns nil. To a FIFO DLQ the copy goes
// in m's message group, with a deduplication id of its own: a second copy
// (the delete failed and m came back) within five minutes is dropped.
func (c *Consumer) moveToDLQ(ctx context.Context, m types.Message, why string) error {
	if c.cfg.DLQURL == "" {
		return errors.New("no DLQ configured")
	}
	attrs := make(map[string]types.MessageAttributeValue, len(keptAttributes)+2)
	for _, name := range keptAttributes {
		if a, ok := m.MessageAttributes[name]; ok {
			attrs[name] = types.MessageAttributeValue{DataType: a.DataType, StringValue: a.StringValue, BinaryValue: a.BinaryValue}
		}
	}
	attrs[AttrRejected] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(why)}
	if sender := m.Attributes[string(types.MessageSystemAttributeNameSenderId)]; sender != "" {
		attrs[AttrSenderID] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(sender)}
	}
	entry := types.SendMessageBatchRequestEntry{Id: aws.String("0"), MessageBody: m.Body, MessageAttributes: attrs}
	if strings.HasSuffix(c.cfg.DLQURL, ".fifo") {
		group := m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
		if group == "" {
			group = "rejected"
		}
		entry.MessageGroupId = aws.String(group)
		entry.MessageDeduplicationId = aws.String("rejected-" + aws.ToString(m.MessageId))
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.AckTimeout)
	defer cancel()
	out, err := c.api.SendMessageBatch(ctx, &awssqs.SendMessageBatchInput{QueueUrl: aws.String(c.cfg.DLQURL), Entries: []types.SendMessageBatchRequestEntry{entry}})
	switch {
	case err != nil:
		return fmt.Errorf("send to the DLQ: %w", err)
	case len(out.Failed) > 0:
		return fmt.Errorf("send to the DLQ: %s: %s", aws.ToString(out.Failed[0].Code), aws.ToString(out.Failed[0].Message))
	case len(out.Successful) != 1:
		return errors.New("send to the DLQ: no result")
	}
	return nil
}

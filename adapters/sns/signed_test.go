package sns_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/provenance"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// TestSignatureReachesTheQueue: a relay that publishes through the signing
// decorator delivers, after raw delivery, each body with its key id and
// signature as SQS message attributes, and the signature verifies on the
// body the queue holds — the bytes SNS and SQS hand on are the bytes signed.
func TestSignatureReachesTheQueue(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const rows = 3
	f.insertEvents(t, rows, 10)
	signer, err := provenance.GenerateSigner("k1")
	if err != nil {
		t.Fatal(err)
	}
	run(t, outbox.NewRelay(f.store, provenance.NewPublisher(f.publisher(), signer), logtest.Discard(), nil, time.Now,
		outbox.Config{PollInterval: 20 * time.Millisecond}))

	msgs := f.tq.Drain(t, f.tq.QueueURL, rows, 30*time.Second)
	if len(msgs) != rows {
		t.Fatalf("got %d messages, want %d", len(msgs), rows)
	}
	keys, err := provenance.NewKeySet(signer.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	v := provenance.NewVerifier(keys, provenance.VerifierConfig{})
	for _, m := range msgs {
		sig := provenance.Signature{
			KeyID: aws.ToString(m.MessageAttributes[provenance.KeyIDAttribute].StringValue),
			Value: aws.ToString(m.MessageAttributes[provenance.SignatureAttribute].StringValue),
		}
		if sig.KeyID != "k1" {
			t.Errorf("message %s: key id attribute %q, want k1", aws.ToString(m.MessageId), sig.KeyID)
		}
		if _, err := v.Verify([]byte(aws.ToString(m.Body)), sig); err != nil {
			t.Errorf("message %s: %v", aws.ToString(m.MessageId), err)
		}
	}
	idsOf(t, msgs)
}

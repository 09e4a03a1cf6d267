package awstest

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/payments-outbox/payments-outbox/application/provenance"
)

// SNSAttributes are the message attributes that carry sig, as the payments
// service's relay publishes them (adapters/sns): for a test that publishes
// an event of its own to a topic in the payments service's place, with
// provenance.Signer.Sign of the exact message body. The zero Signature has
// none.
func SNSAttributes(sig provenance.Signature) map[string]snstypes.MessageAttributeValue {
	attrs := map[string]snstypes.MessageAttributeValue{}
	for name, v := range signatureAttributes(sig) {
		attrs[name] = snstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	return attrs
}

// SQSAttributes are the same attributes for a message sent straight to a
// queue, as raw delivery hands them on.
func SQSAttributes(sig provenance.Signature) map[string]sqstypes.MessageAttributeValue {
	attrs := map[string]sqstypes.MessageAttributeValue{}
	for name, v := range signatureAttributes(sig) {
		attrs[name] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	return attrs
}

func signatureAttributes(sig provenance.Signature) map[string]string {
	attrs := map[string]string{}
	if sig.KeyID != "" {
		attrs[provenance.KeyIDAttribute] = sig.KeyID
	}
	if sig.Value != "" {
		attrs[provenance.SignatureAttribute] = sig.Value
	}
	return attrs
}

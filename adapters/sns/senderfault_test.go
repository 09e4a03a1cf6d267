package sns_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/payments-outbox/payments-outbox/adapters/sns"
	"github.com/payments-outbox/payments-outbox/application/outbox"
)

// publishBatchAnswer is an SNS PublishBatch response (query protocol) with one
// entry accepted, one refused for its content, one failed on SNS's side and one
// refused for the deployment's fault (a KMS key the topic cannot use).
const publishBatchAnswer = `<PublishBatchResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/">
  <PublishBatchResult>
    <Successful><member><Id>0</Id><MessageId>m-0</MessageId></member></Successful>
    <Failed>
      <member><Id>1</Id><Code>InvalidParameter</Code><Message>bad attribute</Message><SenderFault>true</SenderFault></member>
      <member><Id>2</Id><Code>InternalError</Code><Message>try again</Message><SenderFault>false</SenderFault></member>
      <member><Id>3</Id><Code>KMSAccessDenied</Code><Message>no key access</Message><SenderFault>true</SenderFault></member>
    </Failed>
  </PublishBatchResult>
  <ResponseMetadata><RequestId>r-1</RequestId></ResponseMetadata>
</PublishBatchResponse>`

// TestSenderFaultIsPermanent: an entry SNS refuses for its content is reported
// as outbox.ErrPermanent (the relay makes it DEAD at once); a failure on SNS's side,
// or a sender fault of the deployment's, stays retryable; the accepted entry is
// acknowledged. A stand-in
// server gives the mixed answer, which moto never does.
func TestSenderFaultIsPermanent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.Form.Get("Action") != "PublishBatch" {
			http.Error(w, "want PublishBatch", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/xml")
		_, _ = w.Write([]byte(publishBatchAnswer))
	}))
	defer srv.Close()
	client := awssns.New(awssns.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  aws.AnonymousCredentials{},
	})
	pub := sns.NewPublisher(client, "arn:aws:sns:us-east-1:000000000000:t", sns.Config{InFlight: 1})

	errs := pub.Publish(context.Background(), []outbox.Message{
		{Type: "payment.created", Payload: []byte(`{}`)},
		{Type: "payment.created", Payload: []byte(`{}`)},
		{Type: "payment.created", Payload: []byte(`{}`)},
		{Type: "payment.created", Payload: []byte(`{}`)},
	})
	if len(errs) != 4 || errs[0] != nil {
		t.Fatalf("got %v, want the first entry acknowledged", errs)
	}
	if !errors.Is(errs[1], outbox.ErrPermanent) || !strings.Contains(errs[1].Error(), "InvalidParameter") {
		t.Errorf("sender fault: got %v (permanent %t), want a permanent error naming the code", errs[1], errors.Is(errs[1], outbox.ErrPermanent))
	}
	for _, i := range []int{2, 3} {
		if errs[i] == nil || errors.Is(errs[i], outbox.ErrPermanent) {
			t.Errorf("entry %d: got %v, want a retryable error", i, errs[i])
		}
	}
}

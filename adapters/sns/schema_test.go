package sns_test

import (
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/payments-outbox/payments-outbox/adapters/eventschema"
)

// validator compiles the published schemas once for the package's tests.
var validator = sync.OnceValues(eventschema.New)

// checkEvent fails t unless m, a message the relay published, is an event
// that matches the schemas it is published under (api/events): the ledger
// refuses what does not.
func checkEvent(t *testing.T, m sqstypes.Message) {
	t.Helper()
	v, err := validator()
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Check([]byte(aws.ToString(m.Body))); err != nil {
		t.Errorf("event %s does not match its schema: %v", aws.ToString(m.MessageAttributes["id"].StringValue), err)
	}
}

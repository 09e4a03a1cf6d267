package kubernetes

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/payments-outbox/payments-outbox/tools/internal/awspolicy"
)

// The aws overlay's names (docs/SECURITY.md's, localstack/init-aws.sh's).
const (
	awsTopic       = "arn:aws:sns:us-east-1:000000000000:payments-events"
	awsRedriveRole = "arn:aws:iam::000000000000:role/payments-outbox-redrive"
)

func readPolicy(t *testing.T, name string) awspolicy.Document {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "deploy/kubernetes/overlays/aws/iam", name))
	if err != nil {
		t.Fatal(err)
	}
	d, err := awspolicy.Parse(b)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return d
}

// TestOnlyTheTopicSendsToTheQueues evaluates the aws overlay's queue
// policies (iam/<consumer>-queue-policy.json) with the roles' own policies
// of iam/: only the topic, and the operator's redrive role, may put a
// message on a consumer's queue. No service role can — not the consumer's
// own, not payments' — and no principal of another account, whatever its
// own policies allow; the consumers still receive, and move what fails
// verification to their DLQs. The evaluator is IAM's logic for the
// elements these documents use (tools/internal/awspolicy), since no local
// SNS/SQS enforces a queue's policy.
func TestOnlyTheTopicSendsToTheQueues(t *testing.T) {
	t.Parallel()
	allowEverything := awspolicy.Document{Version: "2012-10-17", Statement: awspolicy.Statements{
		{Effect: "Allow", Action: awspolicy.Strings{"*"}, Resource: awspolicy.Strings{"*"}}}}
	roles := map[string][]awspolicy.Document{
		"ledger":   {readPolicy(t, "ledger.json")},
		"webhooks": {readPolicy(t, "webhooks.json")},
		"payments": {readPolicy(t, "payments.json")},
		"redrive":  {readPolicy(t, "dlq-redrive.json")},
		// An administrator of the account, and a principal of another
		// account that its own account allows everything.
		"admin":    {allowEverything},
		"stranger": {allowEverything},
	}
	role := func(name string) awspolicy.Caller {
		switch name {
		case "redrive":
			return awspolicy.Caller{ARN: awsRedriveRole}
		case "stranger":
			return awspolicy.Caller{ARN: "arn:aws:iam::999999999999:role/stranger"}
		}
		return awspolicy.Caller{ARN: "arn:aws:iam::000000000000:role/payments-outbox-" + name}
	}
	for _, consumer := range []string{"ledger", "webhooks"} {
		policy := readPolicy(t, consumer+"-queue-policy.json")
		queue := "arn:aws:sqs:us-east-1:000000000000:" + consumer + "-queue"
		dlq := "arn:aws:sqs:us-east-1:000000000000:" + consumer + "-dlq"
		tests := []struct {
			name     string
			caller   string // a key of roles, or "" for the topic
			source   string // aws:SourceArn, when the request carries one
			action   string
			resource string
			want     awspolicy.Decision
		}{
			{"the topic delivers", "", awsTopic, "sqs:SendMessage", queue, awspolicy.Allow},
			{"another topic does not", "", "arn:aws:sns:us-east-1:000000000000:other-events", "sqs:SendMessage", queue, awspolicy.ExplicitDeny},
			{"the redrive role puts the DLQ's messages back", "redrive", "", "sqs:SendMessage", queue, awspolicy.Allow},
			{"the consumer's own role cannot send", consumer, "", "sqs:SendMessage", queue, awspolicy.ExplicitDeny},
			{"the consumer receives", consumer, "", "sqs:ReceiveMessage", queue, awspolicy.Allow},
			{"the consumer moves an unverified event to its DLQ", consumer, "", "sqs:SendMessage", dlq, awspolicy.Allow},
			{"payments cannot send to the queue", "payments", "", "sqs:SendMessage", queue, awspolicy.ExplicitDeny},
			{"nor an administrator of the account", "admin", "", "sqs:SendMessage", queue, awspolicy.ExplicitDeny},
			{"nor another account", "stranger", "", "sqs:SendMessage", queue, awspolicy.ExplicitDeny},
			{"another account, were its request to carry the topic as source (only SNS sets it)", "stranger", awsTopic, "sqs:SendMessage", queue, awspolicy.ImplicitDeny},
		}
		for _, tt := range tests {
			t.Run(consumer+": "+tt.name, func(t *testing.T) {
				req := awspolicy.Request{Action: tt.action, Resource: tt.resource, Context: map[string]string{}}
				var identity []awspolicy.Document
				if tt.caller == "" {
					req.Caller = awspolicy.Caller{Service: "sns.amazonaws.com"}
				} else {
					req.Caller, identity = role(tt.caller), roles[tt.caller]
					req.Context["aws:PrincipalArn"] = req.Caller.ARN
				}
				if tt.source != "" {
					req.Context["aws:SourceArn"] = tt.source
				}
				resource := &policy
				if tt.resource != queue {
					resource = nil // the DLQ has no policy of its own
				}
				got, err := awspolicy.Decide(resource, identity, req)
				if err != nil {
					t.Fatal(err)
				}
				if got != tt.want {
					t.Errorf("%s %s on %s: %s, want %s", tt.caller, tt.action, tt.resource, got, tt.want)
				}
			})
		}
	}
}

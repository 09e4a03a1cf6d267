package stack

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/payments-outbox/payments-outbox/tools/internal/awspolicy"
)

// checkQueuePolicy evaluates the access policy localstack/init-aws.sh gave
// a consumer's queue, as SNS/SQS returned it (neither moto nor LocalStack
// enforces it, so the test decides what it allows with IAM's logic:
// tools/internal/awspolicy): the topic may deliver; another topic, the
// consumer's own role, any other principal of the account and every
// principal of another account may not send, whatever their own policies
// allow; the operator's redrive role may, to put the DLQ's messages back;
// the consumer may still receive. The policy is also the aws overlay's
// document for that queue (deploy/kubernetes/overlays/aws/iam), with this
// run's ARNs: what the script writes is what the docs give AWS.
func checkQueuePolicy(t *testing.T, queueName, policy, queueARN, topicARN string) {
	t.Helper()
	doc, err := awspolicy.Parse([]byte(policy))
	if err != nil {
		t.Fatalf("%s: the queue's policy %s: %v", queueName, policy, err)
	}
	f := strings.Split(queueARN, ":")
	partition, account := f[1], f[4]
	role := func(name string) string { return "arn:" + partition + ":iam::" + account + ":role/" + name }
	consumer := strings.ToLower(strings.SplitN(queueName, "_", 2)[0]) // LEDGER_QUEUE_NAME → ledger
	allowOnQueue := func(actions ...string) []awspolicy.Document {
		return []awspolicy.Document{{Version: "2012-10-17", Statement: awspolicy.Statements{
			{Effect: "Allow", Action: actions, Resource: awspolicy.Strings{queueARN}}}}}
	}
	tests := []struct {
		name     string
		caller   awspolicy.Caller
		identity []awspolicy.Document
		source   string
		action   string
		want     awspolicy.Decision
	}{
		{"the topic", awspolicy.Caller{Service: "sns.amazonaws.com"}, nil, topicARN, "sqs:SendMessage", awspolicy.Allow},
		{"another topic", awspolicy.Caller{Service: "sns.amazonaws.com"}, nil, topicARN + "-other", "sqs:SendMessage", awspolicy.ExplicitDeny},
		{"the redrive role", awspolicy.Caller{ARN: role("payments-outbox-redrive")}, allowOnQueue("sqs:SendMessage"), "", "sqs:SendMessage", awspolicy.Allow},
		{"the consumer's own role", awspolicy.Caller{ARN: role("payments-outbox-" + consumer)}, allowOnQueue("sqs:*"), "", "sqs:SendMessage", awspolicy.ExplicitDeny},
		{"the consumer receiving", awspolicy.Caller{ARN: role("payments-outbox-" + consumer)}, allowOnQueue("sqs:*"), "", "sqs:ReceiveMessage", awspolicy.Allow},
		{"an administrator of the account", awspolicy.Caller{ARN: role("admin")}, allowOnQueue("*"), "", "sqs:SendMessage", awspolicy.ExplicitDeny},
		{"another account", awspolicy.Caller{ARN: "arn:" + partition + ":iam::999999999999:role/stranger"}, allowOnQueue("*"), "", "sqs:SendMessage", awspolicy.ExplicitDeny},
	}
	for _, tt := range tests {
		ctx := map[string]string{}
		if tt.caller.ARN != "" {
			ctx["aws:PrincipalArn"] = tt.caller.ARN
		}
		if tt.source != "" {
			ctx["aws:SourceArn"] = tt.source
		}
		got, err := awspolicy.Decide(&doc, tt.identity, awspolicy.Request{Caller: tt.caller, Action: tt.action, Resource: queueARN, Context: ctx})
		if err != nil {
			t.Fatalf("%s: %v", queueName, err)
		}
		if got != tt.want {
			t.Errorf("%s: %s, %s: %s, want %s (the policy: %s)", queueName, tt.name, tt.action, got, tt.want, policy)
		}
	}

	b, err := os.ReadFile("../../deploy/kubernetes/overlays/aws/iam/" + consumer + "-queue-policy.json")
	if err != nil {
		t.Fatal(err)
	}
	documented := strings.NewReplacer(
		"arn:aws:sqs:us-east-1:000000000000:"+consumer+"-queue", queueARN,
		"arn:aws:sns:us-east-1:000000000000:payments-events", topicARN,
		"arn:aws:iam::000000000000:role/payments-outbox-redrive", role("payments-outbox-redrive"),
	).Replace(string(b))
	var want, got any
	if err := json.Unmarshal([]byte(documented), &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(policy), &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: init-aws.sh wrote the policy\n%s\nwant deploy/kubernetes/overlays/aws/iam/%s-queue-policy.json with this run's ARNs:\n%s", queueName, policy, consumer, documented)
	}
}

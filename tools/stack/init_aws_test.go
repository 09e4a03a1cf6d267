package stack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
)

// initAWSEndpoint returns the SNS/SQS endpoint localstack/init-aws.sh is run
// against here (AWS_ENDPOINT_URL, as .ci/run sets it), skipping without it
// or without the aws CLI the script calls, and failing instead under CI.
func initAWSEndpoint(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: runs localstack/init-aws.sh against an SNS/SQS endpoint")
	}
	endpoint := os.Getenv("AWS_ENDPOINT_URL")
	_, cliErr := exec.LookPath("aws")
	if endpoint != "" && cliErr == nil {
		return endpoint
	}
	why := "AWS_ENDPOINT_URL is unset"
	if cliErr != nil {
		why = "the aws CLI is not installed"
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set but %s: localstack/init-aws.sh cannot be tested", why)
	}
	t.Skipf("%s: localstack/init-aws.sh is not tested here", why)
	return ""
}

// runInitAWS runs the script with --print-env and returns what it exports.
func runInitAWS(t *testing.T, endpoint string, env ...string) map[string]string {
	t.Helper()
	cmd := exec.Command("bash", "../../localstack/init-aws.sh", "--print-env")
	cmd.Env = append(os.Environ(), append([]string{"AWS_ENDPOINT_URL=" + endpoint}, env...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("init-aws.sh %v: %v\n%s", env, err, stderr.String())
	}
	exports := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		kv, ok := strings.CutPrefix(line, "export ")
		name, value, ok2 := strings.Cut(kv, "=")
		if !ok || !ok2 {
			t.Fatalf("init-aws.sh --print-env printed %q, want only export NAME=value lines", line)
		}
		exports[name] = value
	}
	return exports
}

// consumerQueues are the queue and DLQ variables --print-env prints for each
// consumer of the topic, with the variables that name them.
var consumerQueues = []struct{ queueURL, dlqURL, queueName, dlqName string }{
	{"LEDGER_QUEUE_URL", "LEDGER_DLQ_URL", "LEDGER_QUEUE_NAME", "LEDGER_DLQ_NAME"},
	{"WEBHOOKS_QUEUE_URL", "WEBHOOKS_DLQ_URL", "WEBHOOKS_QUEUE_NAME", "WEBHOOKS_DLQ_NAME"},
}

// localstack/init-aws.sh gives every consumer of the topic, the ledger and
// the webhooks service, a queue of its own subscribed with raw delivery and
// the same redrive budget, visibility and retention, in standard and FIFO
// mode; a second run changes nothing (one subscription per queue). Each run
// is some twenty aws CLI calls, so the FIFO case runs the script once.
func TestInitAWSGivesEachConsumerItsQueue(t *testing.T) {
	endpoint := initAWSEndpoint(t)
	for _, fifo := range []bool{false, true} {
		t.Run(map[bool]string{false: "standard", true: "FIFO"}[fifo], func(t *testing.T) {
			t.Parallel()
			suffix := randomSuffix(t)
			env := []string{"PAYMENTS_TOPIC_NAME=topic-" + suffix, "PAYMENTS_FIFO=" + map[bool]string{false: "false", true: "true"}[fifo]}
			for _, c := range consumerQueues {
				prefix := strings.ToLower(strings.SplitN(c.queueName, "_", 2)[0])
				env = append(env, c.queueName+"="+prefix+"-q-"+suffix, c.dlqName+"="+prefix+"-dlq-"+suffix)
			}
			first := runInitAWS(t, endpoint, env...)
			if len(first) != 5 {
				t.Errorf("--print-env exported %v, want PAYMENTS_TOPIC_ARN and each consumer's queue and DLQ URLs", first)
			}
			if !fifo {
				second := runInitAWS(t, endpoint, env...)
				for k, v := range first {
					if second[k] != v {
						t.Errorf("the second run exported %s=%s, the first %s", k, second[k], v)
					}
				}
			}
			checkConsumerQueues(t, first, fifo)
		})
	}
}

func checkConsumerQueues(t *testing.T, exports map[string]string, fifo bool) {
	t.Helper()
	ctx := context.Background()
	cfg := awstest.Config(t) // aimed at AWS_ENDPOINT_URL, as the script was
	sqsc, snsc := sqs.NewFromConfig(cfg), sns.NewFromConfig(cfg)
	topic := exports["PAYMENTS_TOPIC_ARN"]
	subs, err := snsc.ListSubscriptionsByTopic(ctx, &sns.ListSubscriptionsByTopicInput{TopicArn: aws.String(topic)})
	if err != nil {
		t.Fatal(err)
	}
	subscribed := map[string]int{}
	for _, s := range subs.Subscriptions {
		subscribed[aws.ToString(s.Endpoint)]++
		attrs, err := snsc.GetSubscriptionAttributes(ctx, &sns.GetSubscriptionAttributesInput{SubscriptionArn: s.SubscriptionArn})
		if err != nil {
			t.Fatal(err)
		}
		if attrs.Attributes["RawMessageDelivery"] != "true" {
			t.Errorf("subscription of %s: RawMessageDelivery %q, want true", aws.ToString(s.Endpoint), attrs.Attributes["RawMessageDelivery"])
		}
	}
	attributes := func(url string) map[string]string {
		out, err := sqsc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
		if err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		return out.Attributes
	}
	for _, c := range consumerQueues {
		queue, dlq := attributes(exports[c.queueURL]), attributes(exports[c.dlqURL])
		if n := subscribed[queue["QueueArn"]]; n != 1 {
			t.Errorf("%s is subscribed to the topic %d times, want once", c.queueURL, n)
		}
		var redrive struct {
			DeadLetterTargetArn string          `json:"deadLetterTargetArn"`
			MaxReceiveCount     json.RawMessage `json:"maxReceiveCount"`
		}
		if err := json.Unmarshal([]byte(queue["RedrivePolicy"]), &redrive); err != nil {
			t.Errorf("%s: RedrivePolicy %q: %v", c.queueURL, queue["RedrivePolicy"], err)
		}
		if redrive.DeadLetterTargetArn != dlq["QueueArn"] || strings.Trim(string(redrive.MaxReceiveCount), `"`) != "10" {
			t.Errorf("%s: RedrivePolicy %s, want %s's DLQ %s after 10 receives", c.queueURL, queue["RedrivePolicy"], c.queueURL, dlq["QueueArn"])
		}
		for name, want := range map[string]string{"VisibilityTimeout": "30", "MessageRetentionPeriod": "345600"} {
			if queue[name] != want {
				t.Errorf("%s: %s %q, want %s as the ledger's", c.queueURL, name, queue[name], want)
			}
		}
		if dlq["MessageRetentionPeriod"] != "1209600" {
			t.Errorf("%s: MessageRetentionPeriod %q, want 1209600 (14 days)", c.dlqURL, dlq["MessageRetentionPeriod"])
		}
		for _, url := range []string{exports[c.queueURL], exports[c.dlqURL]} {
			if strings.HasSuffix(url, ".fifo") != fifo {
				t.Errorf("%s: FIFO mode %v, but the name says otherwise", url, fifo)
			}
		}
		if fifo && (queue["FifoQueue"] != "true" || dlq["FifoQueue"] != "true") {
			t.Errorf("%s: FifoQueue %q, its DLQ %q, want both true", c.queueURL, queue["FifoQueue"], dlq["FifoQueue"])
		}
		checkQueuePolicy(t, c.queueName, queue["Policy"], queue["QueueArn"], topic)
	}
}

func randomSuffix(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

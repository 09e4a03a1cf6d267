package awstest_test

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
)

func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }

// TestTopicQueue checks the fixture's wiring: a message published to the topic
// arrives in the queue unwrapped (raw delivery) with its attributes.
func TestTopicQueue(t *testing.T) {
	t.Parallel()
	tq := awstest.NewTopicQueue(t, awstest.QueueConfig{})
	body := `{"hello":"world"}`
	_, err := tq.SNS.Publish(context.Background(), &sns.PublishInput{
		TopicArn: aws.String(tq.TopicARN),
		Message:  aws.String(body),
		MessageAttributes: map[string]snstypes.MessageAttributeValue{
			"type": {DataType: aws.String("String"), StringValue: aws.String("greeting")},
		},
	})
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	msgs := tq.Drain(t, tq.QueueURL, 1, 30*time.Second)
	if len(msgs) != 1 {
		t.Fatalf("got %d messages, want 1", len(msgs))
	}
	if got := aws.ToString(msgs[0].Body); got != body {
		t.Errorf("got body %q, want %q", got, body)
	}
	if got := aws.ToString(msgs[0].MessageAttributes["type"].StringValue); got != "greeting" {
		t.Errorf("got attribute type %q, want %q", got, "greeting")
	}
}

// TestSettingsMatchInitScript keeps the queue settings tests take by default
// equal to the ones localstack/init-aws.sh gives every real environment.
func TestSettingsMatchInitScript(t *testing.T) {
	script, err := os.ReadFile("../../localstack/init-aws.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		variable string
		want     int
	}{
		{"max_receive_count", awstest.MaxReceiveCount},
		{"visibility_timeout", int(awstest.VisibilityTimeout / time.Second)},
	} {
		m := regexp.MustCompile(c.variable + `="\$\{[A-Z_]+:-([0-9]+)\}"`).FindSubmatch(script)
		if m == nil {
			t.Errorf("localstack/init-aws.sh: no default for %s found", c.variable)
			continue
		}
		if got, _ := strconv.Atoi(string(m[1])); got != c.want {
			t.Errorf("localstack/init-aws.sh sets %s to %d, awstest to %d: change both", c.variable, got, c.want)
		}
	}
}

// TestDrainSeesWhatItsLastReceiveTook: a message that arrives while Drain's
// timeout passes in the middle of a long poll reaches the test, from that
// Drain or the next one. A receive cut off in flight would still take it on
// the server and hide it for the visibility timeout (30 s here), and the
// next Drain would find nothing.
func TestDrainSeesWhatItsLastReceiveTook(t *testing.T) {
	t.Parallel()
	tq := awstest.NewTopicQueue(t, awstest.QueueConfig{})
	sent := make(chan error, 1)
	// Publish a little after the Drain's timeout, inside its one-second long
	// poll (pacing: on a slow machine it may land later, which passes too).
	time.AfterFunc(500*time.Millisecond, func() {
		_, err := tq.SNS.Publish(context.Background(), &sns.PublishInput{TopicArn: aws.String(tq.TopicARN), Message: aws.String("late")})
		sent <- err
	})
	got := tq.Drain(t, tq.QueueURL, 1, 200*time.Millisecond)
	if err := <-sent; err != nil {
		t.Fatalf("publish: %v", err)
	}
	got = append(got, tq.Drain(t, tq.QueueURL, 1-len(got), 5*time.Second)...)
	if len(got) != 1 {
		t.Fatalf("got %d messages, want the one published: a receive was abandoned with it", len(got))
	}
}

// Package awstest gives integration tests a real SNS/SQS endpoint and resources
// of their own, the way pgtest gives them a database.
//
// The endpoint comes from AWS_ENDPOINT_URL when it is set: CI starts
// moto_server, and `make test` starts one LocalStack container for the whole
// run (tools/testrun, with StartServer) when Docker is up. Otherwise, for a
// package tested on its own, a testcontainers-go LocalStack is started once per
// test binary when Docker is up; otherwise the tests skip, saying why and how
// to run them. When CI is set, a missing endpoint fails the run instead: CI
// must never go green by skipping. Under go test -short they always skip:
// -short runs the unit tests alone.
//
// Tests share the endpoint, so NewTopicQueue names every resource uniquely and
// deletes it when the test ends: each test owns its topic and queues.
package awstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	dockercontainer "github.com/moby/moby/api/types/container"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/modules/localstack"

	"github.com/payments-outbox/payments-outbox/adapters/internal/containertest"
)

// Image is the LocalStack image started when no endpoint is configured,
// unless ImageVariable names another: the last tag that runs without an auth
// token, the one docker-compose.yml runs (tools/stack keeps them equal).
const Image = "localstack/localstack:4.14.0@sha256:3ebc37595918b8accb852f8048fef2aff047d465167edd655528065b07bc364a"

// ImageVariable names the environment variable that replaces Image with
// another reference (a full one: name, and tag or digest), for an engine
// that cannot pull Image: one with no registry in reach runs a stand-in that
// answers as LocalStack does.
const ImageVariable = "TESTCONTAINERS_LOCALSTACK_IMAGE"

var (
	once      sync.Once
	endpoint  string
	skipWhy   string
	container testcontainers.Container
)

// Main wraps testing.M.Run for a package whose tests use Config: it stops the
// LocalStack container (if one was started) after the tests. Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }
//
// A package that also uses pgtest runs pgtest.Main and then Terminate instead.
func Main(m *testing.M) int {
	code := m.Run()
	Terminate()
	return code
}

// Terminate stops the LocalStack container, if this test binary started one.
func Terminate() {
	if container != nil {
		_ = container.Terminate(context.Background())
	}
}

// Endpoint returns the SNS/SQS endpoint URL, starting a container if need be. It
// skips t under -short, and skips (or fails under CI) when no endpoint can be had.
func Endpoint(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		// -short is the unit tests alone: no server, no container, CI or not.
		t.Skip("awstest: -short: skipping an integration test")
	}
	once.Do(start)
	if endpoint == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("awstest: CI is set but no SNS/SQS endpoint is available: %s", skipWhy)
		}
		t.Skipf("integration test skipped, no SNS/SQS endpoint: %s; set AWS_ENDPOINT_URL, or let Docker start one (docs/TESTING.md)", skipWhy)
	}
	return endpoint
}

func start() {
	if u := os.Getenv("AWS_ENDPOINT_URL"); u != "" {
		endpoint = u
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ep, c, err := startContainer(ctx)
	if err != nil {
		skipWhy = "AWS_ENDPOINT_URL is unset, and no LocalStack container: " + err.Error()
		fmt.Fprintln(os.Stderr, "awstest: "+skipWhy)
		return
	}
	container, endpoint = c, ep
}

// StartServer starts a LocalStack container (of Image, or of the image
// ImageVariable names) with SNS and SQS and
// returns its endpoint (for AWS_ENDPOINT_URL) and a function that removes
// it. tools/testrun calls it once, so that every package of a run shares one.
func StartServer(ctx context.Context) (endpointURL string, stop func(), err error) {
	ep, c, err := startContainer(ctx)
	if err != nil {
		return "", nil, err
	}
	return ep, func() { _ = c.Terminate(context.Background()) }, nil
}

func startContainer(ctx context.Context) (endpointURL string, c testcontainers.Container, err error) {
	// testcontainers panics rather than erroring when no Docker is found on
	// some code paths; turn that into an error.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	image, err := containertest.Ready(ctx, ImageVariable, Image)
	if err != nil {
		return "", nil, err
	}
	lc, err := localstack.Run(ctx, image,
		testcontainers.WithEnv(map[string]string{"SERVICES": "sns,sqs"}),
		withoutDockerSocket())
	if err != nil {
		if lc != nil {
			_ = lc.Terminate(context.Background())
		}
		return "", nil, fmt.Errorf("a container of %s did not start: %w", image, err)
	}
	host, err := lc.Host(ctx)
	if err == nil {
		port, perr := lc.MappedPort(ctx, "4566/tcp")
		if perr == nil {
			return "http://" + net.JoinHostPort(host, port.Port()), lc, nil
		}
		err = perr
	}
	_ = lc.Terminate(context.Background())
	return "", nil, fmt.Errorf("LocalStack container address: %w", err)
}

// withoutDockerSocket undoes the LocalStack module's mount of the Docker
// socket: LocalStack wants it to run Lambda functions and other services in
// containers of their own, and SNS and SQS need none. A test container should
// not hold the keys to the host's Docker.
func withoutDockerSocket() testcontainers.CustomizeRequestOption {
	return testcontainers.WithHostConfigModifier(func(hc *dockercontainer.HostConfig) {
		hc.Binds = slices.DeleteFunc(hc.Binds, func(bind string) bool {
			return strings.Contains(bind, "docker.sock")
		})
	})
}

// Config returns an SDK configuration aimed at the test endpoint, with static
// "test" credentials (local endpoints accept any) and the region from AWS_REGION,
// defaulting to us-east-1. It leaves the SDK's HTTP client alone, so settings such
// as AWS_CA_BUNDLE keep working.
func Config(t testing.TB) aws.Config {
	t.Helper()
	ep := Endpoint(t)
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = "us-east-1"
	}
	cfg, err := config.LoadDefaultConfig(context.Background(),
		config.WithRegion(region),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
		config.WithBaseEndpoint(ep),
	)
	if err != nil {
		t.Fatalf("awstest: load aws config: %v", err)
	}
	return cfg
}

// TopicQueue is a topic with a queue subscribed to it by raw delivery and that
// queue's dead-letter queue: the production wiring of localstack/init-aws.sh in
// miniature, owned by one test.
type TopicQueue struct {
	Config   aws.Config
	SNS      *sns.Client
	SQS      *sqs.Client
	TopicARN string
	QueueURL string
	QueueARN string
	DLQURL   string
	DLQARN   string
}

// MaxReceiveCount and VisibilityTimeout are every consuming service's queue
// settings in every environment, those localstack/init-aws.sh applies; NewTopicQueue uses
// them unless told otherwise, so a test or the fault suite that takes the
// defaults runs against the receive budget production has.
// TestSettingsMatchInitScript fails when the script and these drift apart.
const (
	MaxReceiveCount   = 10
	VisibilityTimeout = 30 * time.Second
)

// QueueConfig tunes what NewTopicQueue creates. The zero value is
// production's queue: standard (not FIFO), MaxReceiveCount and
// VisibilityTimeout.
type QueueConfig struct {
	// FIFO makes the topic, the queue and the DLQ FIFO (names ending in
	// .fifo), as localstack/init-aws.sh does with PAYMENTS_FIFO=true: the
	// queue receives each message group in the order the topic was
	// published to. Deduplication is by MessageDeduplicationId, which the
	// publisher sets.
	FIFO bool
	// MaxReceiveCount is how many receives a message survives before SQS
	// moves it to the DLQ (0: MaxReceiveCount, as in production). Tests of
	// poison messages and of the receive budget lower it.
	MaxReceiveCount int
	// VisibilityTimeout is the queue's visibility timeout (0:
	// VisibilityTimeout, as in production; whole seconds). Tests that wait
	// for a redelivery shorten it.
	VisibilityTimeout time.Duration
}

func (c QueueConfig) withDefaults() QueueConfig {
	if c.MaxReceiveCount <= 0 {
		c.MaxReceiveCount = MaxReceiveCount
	}
	if c.VisibilityTimeout <= 0 {
		c.VisibilityTimeout = VisibilityTimeout
	}
	return c
}

// NewTopicQueue creates a uniquely named topic, queue and DLQ, subscribes the queue
// to the topic with raw message delivery, and deletes all three when t ends.
func NewTopicQueue(t testing.TB, queue QueueConfig) *TopicQueue {
	t.Helper()
	o := queue.withDefaults()
	cfg := Config(t)
	ctx := context.Background()
	tq := &TopicQueue{Config: cfg, SNS: sns.NewFromConfig(cfg), SQS: sqs.NewFromConfig(cfg)}
	name, suffix := "t-"+randomHex(6), ""
	var topicAttrs, queueAttrs map[string]string
	if o.FIFO {
		suffix = ".fifo"
		topicAttrs = map[string]string{"FifoTopic": "true"}
		queueAttrs = map[string]string{string(sqstypes.QueueAttributeNameFifoQueue): "true"}
	}

	topic, err := tq.SNS.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(name + suffix), Attributes: topicAttrs})
	if err != nil {
		t.Fatalf("awstest: create topic: %v", err)
	}
	tq.TopicARN = aws.ToString(topic.TopicArn)
	t.Cleanup(func() {
		_, _ = tq.SNS.DeleteTopic(context.Background(), &sns.DeleteTopicInput{TopicArn: topic.TopicArn})
	})

	tq.DLQURL, tq.DLQARN = createQueue(t, tq.SQS, name+"-dlq"+suffix, queueAttrs)
	redrive := fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"%d"}`, tq.DLQARN, o.MaxReceiveCount)
	attrs := map[string]string{
		string(sqstypes.QueueAttributeNameRedrivePolicy):     redrive,
		string(sqstypes.QueueAttributeNameVisibilityTimeout): strconv.Itoa(int(o.VisibilityTimeout / time.Second)),
	}
	maps.Copy(attrs, queueAttrs)
	tq.QueueURL, tq.QueueARN = createQueue(t, tq.SQS, name+suffix, attrs)

	_, err = tq.SNS.Subscribe(ctx, &sns.SubscribeInput{
		TopicArn:   topic.TopicArn,
		Protocol:   aws.String("sqs"),
		Endpoint:   aws.String(tq.QueueARN),
		Attributes: map[string]string{"RawMessageDelivery": "true"},
	})
	if err != nil {
		t.Fatalf("awstest: subscribe queue: %v", err)
	}
	return tq
}

func createQueue(t testing.TB, client *sqs.Client, name string, attrs map[string]string) (url, arn string) {
	t.Helper()
	ctx := context.Background()
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("awstest: create queue %s: %v", name, err)
	}
	t.Cleanup(func() {
		_, _ = client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl})
	})
	a, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       q.QueueUrl,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		t.Fatalf("awstest: queue arn %s: %v", name, err)
	}
	return aws.ToString(q.QueueUrl), a.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
}

// Drain receives and deletes messages from queueURL until it has want of them or
// timeout passes, and returns what it got (possibly fewer, or more if duplicates
// arrived). It polls with a deadline instead of sleeping, so tests finish as soon as
// the messages are there.
//
// The timeout is looked at between receives, never in the middle of one: the
// server does not learn that a caller went away, so a receive cut off in flight
// would still take messages and hide them for the visibility timeout, out of the
// test's sight — on a FIFO queue with their groups, whose order the test would then
// see only as the server redelivers them. Each receive is bounded by its long poll
// instead (plus receiveSlack), and a delete the server refuses fails the test, as
// that message would come back.
func (tq *TopicQueue) Drain(t testing.TB, queueURL string, want int, timeout time.Duration) []sqstypes.Message {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var got []sqstypes.Message
	for len(got) < want && time.Now().Before(deadline) {
		msgs := tq.receive(t, queueURL)
		if len(msgs) == 0 {
			continue
		}
		got = append(got, msgs...)
		tq.delete(t, queueURL, msgs)
	}
	return got
}

// receiveWait is Drain's long poll; receiveSlack bounds how much longer one
// receive (or delete) may take on a loaded machine before the test fails.
const (
	receiveWait  = time.Second
	receiveSlack = 30 * time.Second
)

func (tq *TopicQueue) receive(t testing.TB, queueURL string) []sqstypes.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), receiveWait+receiveSlack)
	defer cancel()
	out, err := tq.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(queueURL),
		MaxNumberOfMessages:         10,
		WaitTimeSeconds:             int32(receiveWait / time.Second),
		MessageAttributeNames:       []string{"All"},
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
	})
	if err != nil {
		t.Fatalf("awstest: receive: %v", err)
	}
	return out.Messages
}

func (tq *TopicQueue) delete(t testing.TB, queueURL string, msgs []sqstypes.Message) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), receiveSlack)
	defer cancel()
	entries := make([]sqstypes.DeleteMessageBatchRequestEntry, len(msgs))
	for i, m := range msgs {
		entries[i] = sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
	}
	out, err := tq.SQS.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
	if err != nil {
		t.Fatalf("awstest: delete: %v", err)
	}
	for _, f := range out.Failed {
		id := aws.ToString(f.Id)
		if i, err := strconv.Atoi(id); err == nil && i >= 0 && i < len(msgs) {
			id = aws.ToString(msgs[i].MessageId)
		}
		t.Fatalf("awstest: delete of message %s refused: %s: %s", id, aws.ToString(f.Code), aws.ToString(f.Message))
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

package sns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/smithy-go"
)

// ErrTopicNotFound is the error for a topic SNS says does not exist, or whose
// ARN it refuses as invalid. Waiting cannot fix either: every event published
// to it would fail until it went DEAD.
var ErrTopicNotFound = errors.New("SNS topic does not exist")

// TopicAPI is the part of the SNS client CheckTopic uses.
type TopicAPI interface {
	GetTopicAttributes(ctx context.Context, in *awssns.GetTopicAttributesInput, opts ...func(*awssns.Options)) (*awssns.GetTopicAttributesOutput, error)
}

// CheckTopic asks SNS whether topicARN exists (GetTopicAttributes), once,
// without the SDK's retries: a caller that wants another answer asks again.
// It returns nil when it does; an error wrapping ErrTopicNotFound when SNS
// answers that it does not or that the ARN is invalid; and any other error
// (no answer, throttling, a fault on SNS's side, access denied) as it came:
// the topic could not be checked, which says nothing about whether it exists.
func CheckTopic(ctx context.Context, api TopicAPI, topicARN string) error {
	_, err := api.GetTopicAttributes(ctx, &awssns.GetTopicAttributesInput{TopicArn: aws.String(topicARN)},
		func(o *awssns.Options) { o.RetryMaxAttempts = 1 })
	if err == nil {
		return nil
	}
	var notFound *types.NotFoundException
	var invalid *types.InvalidParameterException
	if errors.As(err, &notFound) || errors.As(err, &invalid) {
		return fmt.Errorf("%w: %s (%w)", ErrTopicNotFound, topicARN, err)
	}
	return fmt.Errorf("check SNS topic %s: %w", topicARN, err)
}

// TopicWatch remembers the answer of the last CheckTopic, so that /readyz can
// report the broker without calling it on every probe, and logs each change.
type TopicWatch struct {
	api      TopicAPI
	topicARN string
	log      *slog.Logger

	mu      sync.Mutex
	status  string
	checked bool
}

// NewTopicWatch returns a watch on topicARN that has not checked it yet.
func NewTopicWatch(api TopicAPI, topicARN string, log *slog.Logger) *TopicWatch {
	return &TopicWatch{api: api, topicARN: topicARN, log: log, status: "not checked yet"}
}

// Check runs CheckTopic, records its answer for Status, logs it when it
// differs from the last one, and returns it.
func (w *TopicWatch) Check(ctx context.Context) error {
	err := CheckTopic(ctx, w.api, w.topicARN)
	status := describe(err)
	w.mu.Lock()
	changed := !w.checked || status != w.status
	w.status, w.checked = status, true
	w.mu.Unlock()
	if changed {
		if err != nil {
			w.log.WarnContext(ctx, "SNS topic check failed",
				"topic", w.topicARN, "status", status, "err", err)
		} else {
			w.log.InfoContext(ctx, "SNS topic check passed", "topic", w.topicARN)
		}
	}
	return err
}

// Run checks the topic every interval until ctx is cancelled. A failed check
// is logged (once per change) and tried again at the next tick.
func (w *TopicWatch) Run(ctx context.Context, every time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			cctx, cancel := context.WithTimeout(ctx, every)
			_ = w.Check(cctx) // recorded and logged by Check
			cancel()
		}
	}
}

// Status is the last check's answer in a few words fit for a public endpoint:
// "ok", "not found", the error code SNS answered with, or "unreachable"; never
// the error chain, which holds endpoints and request ids.
func (w *TopicWatch) Status() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.status
}

func describe(err error) string {
	var apiErr smithy.APIError
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrTopicNotFound):
		return "not found"
	case errors.As(err, &apiErr):
		return "error: " + apiErr.ErrorCode()
	default:
		return "unreachable"
	}
}

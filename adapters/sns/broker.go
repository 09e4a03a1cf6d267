package sns

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"
)

// topicCheckTimeout bounds the check of the topic at start-up (OpenBroker).
const topicCheckTimeout = 5 * time.Second

// Broker is what the outbox relay publishes with, and the watch on its topic
// that /readyz reports.
type Broker struct {
	Publisher *Publisher
	Topic     *TopicWatch
}

// OpenBroker builds the SNS client for region (endpoint "" is real AWS), a
// Publisher to topicARN tuned by cfg, and a watch on the
// topic, and checks the topic once, before anything serves. A topic SNS says
// does not exist is an error wrapping ErrTopicNotFound, which should stop
// start-up: every event would be retried until DEAD while the service looked
// healthy. A broker that does not answer is no error: the producer keeps
// taking writes while the broker is away (the outbox holds the events), and
// the watch keeps checking.
func OpenBroker(ctx context.Context, region, endpoint, topicARN string, log *slog.Logger, cfg Config) (Broker, error) {
	client, err := NewClient(ctx, region, endpoint)
	if err != nil {
		return Broker{}, err
	}
	b := Broker{Publisher: NewPublisher(client, topicARN, cfg), Topic: NewTopicWatch(client, topicARN, log)}
	cctx, cancel := context.WithTimeout(ctx, topicCheckTimeout)
	defer cancel()
	if err := b.Topic.Check(cctx); errors.Is(err, ErrTopicNotFound) {
		return Broker{}, err
	}
	return b, nil
}

// Status is what /readyz reports of the broker: the last check of the topic.
func (b Broker) Status() map[string]string {
	return map[string]string{"sns_topic": b.Topic.Status()}
}

// TopicName is the name part of an SNS topic ARN
// (arn:aws:sns:region:account:name).
func TopicName(arn string) string {
	return arn[strings.LastIndex(arn, ":")+1:]
}

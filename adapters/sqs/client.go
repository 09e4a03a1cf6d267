package sqs

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
)

// NewClient returns an SQS client for region, talking to endpoint when it is
// not empty (LocalStack, moto) and to real AWS otherwise. Credentials come
// from the SDK's default chain. The consuming service's cmd passes the values
// it read from its configuration, so this package never reads the
// environment itself.
func NewClient(ctx context.Context, region, endpoint string) (*awssqs.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(region))
	if err != nil {
		return nil, fmt.Errorf("load aws config: %w", err)
	}
	return awssqs.NewFromConfig(cfg, func(o *awssqs.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	}), nil
}

package sns

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
)

// NewClient returns an SNS client for region, talking to endpoint when it is not
// empty (LocalStack, moto) and to real AWS otherwise. Credentials come from the
// SDK's default chain. cmd/payments passes the values it read from its
// configuration, so this package never reads the environment itself.
func NewClient(ctx context.Context, region, endpoint string) (*awssns.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(region))
	if err != nil {
		return nil, fmt.Errorf("load aws config: %w", err)
	}
	return awssns.NewFromConfig(cfg, func(o *awssns.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	}), nil
}

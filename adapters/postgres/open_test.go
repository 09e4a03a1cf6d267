package postgres_test

import (
	"context"
	neturl "net/url"
	"testing"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
)

func TestOpenSizesThePoolUnlessTheURLDoes(t *testing.T) {
	url := pgtest.NewDatabase(t)
	withMax, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	q := withMax.Query()
	q.Set("pool_max_conns", "3")
	withMax.RawQuery = q.Encode()
	ctx := context.Background()
	tests := []struct {
		name string
		url  string
		want int32
	}{
		{"default applies", url, 17},
		{"the URL wins", withMax.String(), 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool, err := postgres.Open(ctx, tt.url, postgres.Config{DefaultMaxConns: 17})
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			if got := pool.Config().MaxConns; got != tt.want {
				t.Errorf("MaxConns = %d, want %d", got, tt.want)
			}
		})
	}
}

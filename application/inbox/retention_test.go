package inbox_test

import (
	"errors"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/inbox"
)

func TestCheckRetention(t *testing.T) {
	tests := []struct {
		inbox  time.Duration
		queues []time.Duration
		ok     bool
	}{
		{360 * time.Hour, []time.Duration{336 * time.Hour}, true}, // defaults vs SQS maximum
		{359 * time.Hour, []time.Duration{336 * time.Hour}, false},
		{120 * time.Hour, []time.Duration{96 * time.Hour, 24 * time.Hour}, true},
		{100 * time.Hour, []time.Duration{24 * time.Hour, 96 * time.Hour}, false}, // the longest counts
	}
	for _, tt := range tests {
		err := inbox.CheckRetention(tt.inbox, tt.queues...)
		if got := err == nil; got != tt.ok {
			t.Errorf("CheckRetention(%s, %v): got %v, want ok=%v", tt.inbox, tt.queues, err, tt.ok)
		}
		if err != nil && !errors.Is(err, inbox.ErrRetentionTooShort) {
			t.Errorf("got %v, want ErrRetentionTooShort", err)
		}
	}
}

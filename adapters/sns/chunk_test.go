package sns

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/payments-outbox/payments-outbox/application/outbox"
)

func TestChunk(t *testing.T) {
	t.Parallel()
	msg := func(bytes int) outbox.Message {
		return outbox.Message{Type: "payment.created", Payload: []byte(strings.Repeat("x", bytes))}
	}
	small, third, tooBig := msg(100), msg(maxBatchBytes/3), msg(maxBatchBytes)
	repeat := func(m outbox.Message, n int) []outbox.Message { return slices.Repeat([]outbox.Message{m}, n) }
	tests := []struct {
		name       string
		msgs       []outbox.Message
		wantCalls  [][]int
		wantTooBig []int
	}{
		{name: "empty", msgs: nil, wantCalls: nil},
		{name: "one", msgs: repeat(small, 1), wantCalls: [][]int{{0}}},
		{name: "ten per call", msgs: repeat(small, 21), wantCalls: [][]int{
			{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {10, 11, 12, 13, 14, 15, 16, 17, 18, 19}, {20}}},
		{name: "bytes split calls", msgs: repeat(third, 4), wantCalls: [][]int{{0, 1}, {2, 3}}},
		{name: "too big alone is skipped, neighbours flow", msgs: []outbox.Message{small, tooBig, small},
			wantCalls: [][]int{{0, 2}}, wantTooBig: []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := make([]error, len(tt.msgs))
			got := chunk(tt.msgs, errs)
			if !slices.EqualFunc(got, tt.wantCalls, slices.Equal) {
				t.Errorf("got calls %v, want %v", got, tt.wantCalls)
			}
			for i, err := range errs {
				want := slices.Contains(tt.wantTooBig, i)
				if errors.Is(err, ErrTooLarge) != want || outbox.IsPermanent(err) != want {
					t.Errorf("message %d: got error %v, want a permanent ErrTooLarge=%v", i, err, want)
				}
			}
		})
	}
}

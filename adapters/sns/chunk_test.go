package sns

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/provenance"
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
			got := chunk(tt.msgs, nil, errs)
			if !slices.EqualFunc(got, tt.wantCalls, slices.Equal) {
				t.Errorf("got calls %v, want %v", got, tt.wantCalls)
			}
			for i, err := range errs {
				want := slices.Contains(tt.wantTooBig, i)
				if errors.Is(err, ErrTooLarge) != want || errors.Is(err, outbox.ErrPermanent) != want {
					t.Errorf("message %d: got error %v, want a permanent ErrTooLarge=%v", i, err, want)
				}
			}
		})
	}
}

// TestChunkCountsTheSignature: the signature's attributes count against SNS's
// limit, so a message that fits only unsigned is refused before SNS sees it.
func TestChunkCountsTheSignature(t *testing.T) {
	t.Parallel()
	m := outbox.Message{Type: "payment.created"}
	m.Payload = []byte(strings.Repeat("x", maxBatchBytes-messageSize(m, provenance.Signature{})))
	sig := provenance.Signature{KeyID: "k1", Value: "v1a," + strings.Repeat("A", 88)}
	errs := make([]error, 1)
	if calls := chunk([]outbox.Message{m}, nil, errs); len(calls) != 1 || errs[0] != nil {
		t.Fatalf("unsigned, at the limit: calls %v, error %v; want one call", calls, errs[0])
	}
	if calls := chunk([]outbox.Message{m}, []provenance.Signature{sig}, errs); len(calls) != 0 || !errors.Is(errs[0], ErrTooLarge) {
		t.Errorf("signed, past the limit: calls %v, error %v; want ErrTooLarge", calls, errs[0])
	}
}

package ledger_test

import (
	"errors"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

var holdAt = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func authorized(t *testing.T, amount int64) ledger.Payment {
	t.Helper()
	p, err := ledger.Authorize("p1", "mer_1", "BRL", amount, holdAt)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCaptureReleasesTheWholeHold(t *testing.T) {
	p := authorized(t, 2500)
	if p.Held() != 2500 || p.Authorized() != 2500 || p.Captured() != 0 || p.Merchant().String() != "merchant:mer_1" {
		t.Fatalf("authorized: got held %d authorized %d captured %d of %s, want 2500 2500 0 of merchant:mer_1", p.Held(), p.Authorized(), p.Captured(), p.Merchant())
	}
	if err := p.Capture(2000, "BRL", holdAt.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if p.Held() != 0 || p.Captured() != 2000 || !p.ReleasedAt().Equal(holdAt.Add(time.Hour)) {
		t.Errorf("captured: got held %d captured %d released %v, want 0 2000 at the capture", p.Held(), p.Captured(), p.ReleasedAt())
	}
}

func TestHoldRules(t *testing.T) {
	tests := []struct {
		name string
		do   func(p *ledger.Payment) error
		want error
	}{
		{"capture more than the hold", func(p *ledger.Payment) error { return p.Capture(2501, "BRL", holdAt) }, ledger.ErrCaptureExceedsHold},
		{"capture nothing", func(p *ledger.Payment) error { return p.Capture(0, "BRL", holdAt) }, ledger.ErrCaptureExceedsHold},
		{"capture in another currency", func(p *ledger.Payment) error { return p.Capture(10, "USD", holdAt) }, ledger.ErrCurrencyMismatch},
		{"capture twice", func(p *ledger.Payment) error {
			_ = p.Capture(10, "BRL", holdAt)
			return p.Capture(10, "BRL", holdAt)
		}, ledger.ErrHoldReleased},
		{"capture after a cancellation", func(p *ledger.Payment) error {
			_ = p.Release("BRL", holdAt)
			return p.Capture(10, "BRL", holdAt)
		}, ledger.ErrHoldReleased},
		{"cancel after a capture", func(p *ledger.Payment) error {
			_ = p.Capture(10, "BRL", holdAt)
			return p.Release("BRL", holdAt)
		}, ledger.ErrHoldReleased},
		{"refund before the capture", func(p *ledger.Payment) error { return p.Refund(1, "BRL") }, ledger.ErrRefundExceedsCaptured},
		{"refund past the capture", func(p *ledger.Payment) error {
			_ = p.Capture(1000, "BRL", holdAt)
			_ = p.Refund(600, "BRL")
			return p.Refund(401, "BRL")
		}, ledger.ErrRefundExceedsCaptured},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := authorized(t, 2500)
			if err := tt.do(&p); !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestRefusedChangesChangeNothing(t *testing.T) {
	p := authorized(t, 2500)
	before := p
	_ = p.Capture(9999, "BRL", holdAt)
	_ = p.Capture(10, "USD", holdAt)
	_ = p.Refund(1, "BRL")
	if p != before {
		t.Errorf("got %+v after refused changes, want %+v", p, before)
	}
}

func TestCapturedAtOnceHasNoHold(t *testing.T) {
	p, err := ledger.CapturedAtOnce("p1", "mer_1", "BRL", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Capture(10, "BRL", holdAt); !errors.Is(err, ledger.ErrNoHold) {
		t.Errorf("capture: got %v, want ErrNoHold", err)
	}
	if err := p.Release("BRL", holdAt); !errors.Is(err, ledger.ErrNoHold) {
		t.Errorf("release: got %v, want ErrNoHold", err)
	}
	if err := p.Refund(1000, "BRL"); err != nil || p.Refunded() != 1000 {
		t.Errorf("refund of the whole amount: got %v, refunded %d", err, p.Refunded())
	}
}

func TestInvalidHolds(t *testing.T) {
	for name, f := range map[string]func() (ledger.Payment, error){
		"zero amount":  func() (ledger.Payment, error) { return ledger.Authorize("p1", "mer_1", "BRL", 0, holdAt) },
		"no merchant":  func() (ledger.Payment, error) { return ledger.Authorize("p1", "", "BRL", 1, holdAt) },
		"no payment":   func() (ledger.Payment, error) { return ledger.Authorize("", "mer_1", "BRL", 1, holdAt) },
		"bad currency": func() (ledger.Payment, error) { return ledger.Authorize("p1", "mer_1", "brl", 1, holdAt) },
		"no time":      func() (ledger.Payment, error) { return ledger.Authorize("p1", "mer_1", "BRL", 1, time.Time{}) },
	} {
		if _, err := f(); !errors.Is(err, ledger.ErrInvalidTransaction) {
			t.Errorf("%s: got %v, want ErrInvalidTransaction", name, err)
		}
	}
}

// TestReleaseNeverPrecedesItsPlacement: a capture or cancellation applied
// with an earlier clock reading than its authorization's (two consumers, one
// whose transaction waited for the other's commit) records the release at
// the placement, never before it.
func TestReleaseNeverPrecedesItsPlacement(t *testing.T) {
	early := holdAt.Add(-time.Second)
	for name, release := range map[string]func(p *ledger.Payment) error{
		"capture": func(p *ledger.Payment) error { return p.Capture(100, "BRL", early) },
		"cancel":  func(p *ledger.Payment) error { return p.Release("BRL", early) },
	} {
		p := authorized(t, 100)
		if err := release(&p); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !p.ReleasedAt().Equal(holdAt) {
			t.Errorf("%s applied at %v: released at %v, want the placement %v", name, early, p.ReleasedAt(), holdAt)
		}
	}
}

package payment

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

const ttl = 7 * 24 * time.Hour

func authorized(t *testing.T) *Payment {
	t.Helper()
	p, err := Authorize(pid, 2500, "BRL", "cus_1", "mer_1", "", ttl, now)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAuthorizeRecordsAuthorizedNotCreated(t *testing.T) {
	p := authorized(t)
	if p.Status() != StatusAuthorized || p.CaptureMethod() != CaptureManual || p.CapturedMinor() != 0 {
		t.Errorf("got status %q method %q captured %d, want authorized manual 0", p.Status(), p.CaptureMethod(), p.CapturedMinor())
	}
	if got, want := p.CaptureBefore(), now.Add(ttl); !got.Equal(want) {
		t.Errorf("capture_before = %s, want %s", got, want)
	}
	want := []Event{Authorized{PaymentID: pid, Amount: mustMoney(t, 2500, "BRL"), PayerID: "cus_1", MerchantID: "mer_1", CaptureBefore: now.Add(ttl), At: now}}
	if got := p.PullEvents(); !reflect.DeepEqual(got, want) {
		t.Errorf("events = %+v, want %+v", got, want)
	}
	if _, err := Authorize(pid, 2500, "BRL", "cus_1", "mer_1", "", 0, now); err == nil {
		t.Error("Authorize with a zero time to live: got no error")
	}
	if _, err := Authorize(pid, 0, "BRL", "", "mer_1", "", ttl, now); !errors.Is(err, ErrInvalid) {
		t.Errorf("Authorize of an invalid payment: got %v, want ErrInvalid", err)
	}
}

func TestNewIsAutomatic(t *testing.T) {
	p, err := New(pid, 1050, "BRL", "cus_1", "mer_1", "", now)
	if err != nil {
		t.Fatal(err)
	}
	if p.CaptureMethod() != CaptureAutomatic || p.CapturedMinor() != 1050 || !p.CaptureBefore().IsZero() {
		t.Errorf("got method %q captured %d capture_before %s, want automatic, all of it, none", p.CaptureMethod(), p.CapturedMinor(), p.CaptureBefore())
	}
	if err := p.Capture(mustMoney(t, 1050, "BRL"), now); !errors.Is(err, ErrInvalidTransition) {
		t.Errorf("capture of an automatic payment: got %v, want ErrInvalidTransition", err)
	}
	if err := p.Cancel(CancelDuplicate, now); !errors.Is(err, ErrInvalidTransition) {
		t.Errorf("cancel of an automatic payment: got %v, want ErrInvalidTransition", err)
	}
}

func TestCapture(t *testing.T) {
	later := now.Add(time.Hour)
	tests := []struct {
		name    string
		amount  Money
		at      time.Time
		wantErr error
	}{
		{"the whole amount", mustMoney(t, 2500, "BRL"), later, nil},
		{"part of it", mustMoney(t, 2000, "BRL"), later, nil},
		{"more than authorized", mustMoney(t, 2501, "BRL"), later, ErrCaptureExceedsAmount},
		{"another currency", mustMoney(t, 100, "USD"), later, ErrCurrencyMismatch},
		{"no amount", Money{}, later, ErrInvalidAmount},
		{"at capture_before", mustMoney(t, 100, "BRL"), now.Add(ttl), ErrAuthorizationExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := authorized(t)
			p.PullEvents()
			before := p.Snapshot()
			err := p.Capture(tt.amount, tt.at)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				if got := p.Snapshot(); !reflect.DeepEqual(got, before) || len(p.PullEvents()) != 0 {
					t.Errorf("a refused capture changed the payment: got %+v, want %+v", got, before)
				}
				return
			}
			if p.Status() != StatusCaptured || p.CapturedMinor() != tt.amount.Minor() || !p.CapturedAt().Equal(later) {
				t.Errorf("got status %q captured %d at %s, want captured %d at %s", p.Status(), p.CapturedMinor(), p.CapturedAt(), tt.amount.Minor(), later)
			}
			want := []Event{Captured{PaymentID: pid, Amount: tt.amount, Authorized: mustMoney(t, 2500, "BRL"), PayerID: "cus_1", MerchantID: "mer_1", At: later}}
			if got := p.PullEvents(); !reflect.DeepEqual(got, want) {
				t.Errorf("events = %+v, want %+v", got, want)
			}
			if err := p.Capture(tt.amount, later); !errors.Is(err, ErrInvalidTransition) {
				t.Errorf("a second capture: got %v, want ErrInvalidTransition", err)
			}
			if err := p.Cancel(CancelDuplicate, later); !errors.Is(err, ErrInvalidTransition) {
				t.Errorf("cancel after capture: got %v, want ErrInvalidTransition", err)
			}
		})
	}
}

func TestRefundsOnlyWhatWasCaptured(t *testing.T) {
	p := authorized(t)
	if _, err := p.Refund(rid1, mustMoney(t, 100, "BRL"), now); !errors.Is(err, ErrInvalidTransition) {
		t.Errorf("refund before capture: got %v, want ErrInvalidTransition", err)
	}
	if err := p.Capture(mustMoney(t, 2000, "BRL"), now); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Refund(rid1, mustMoney(t, 2001, "BRL"), now); !errors.Is(err, ErrRefundExceedsAmount) {
		t.Errorf("refund of more than was captured: got %v, want ErrRefundExceedsAmount", err)
	}
	if _, err := p.Refund(rid1, mustMoney(t, 1500, "BRL"), now); err != nil || p.Status() != StatusPartiallyRefunded {
		t.Fatalf("refund of part of the capture: err %v status %q, want partially_refunded", err, p.Status())
	}
	if _, err := p.Refund(rid2, mustMoney(t, 500, "BRL"), now); err != nil || p.Status() != StatusRefunded {
		t.Fatalf("refund of the rest of the capture: err %v status %q, want refunded", err, p.Status())
	}
	back, err := Rehydrate(p.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Snapshot(), p.Snapshot()) {
		t.Errorf("round trip: got %+v, want %+v", back.Snapshot(), p.Snapshot())
	}
}

func TestCancel(t *testing.T) {
	p := authorized(t)
	p.PullEvents()
	if err := p.Cancel("bored", now); !errors.Is(err, ErrInvalid) {
		t.Errorf("an unknown reason: got %v, want ErrInvalid", err)
	}
	if err := p.Cancel(CancelExpired, now.Add(ttl-time.Microsecond)); !errors.Is(err, ErrInvalidTransition) {
		t.Errorf("expired before capture_before: got %v, want ErrInvalidTransition", err)
	}
	if p.Expired(now.Add(ttl-time.Microsecond)) || !p.Expired(now.Add(ttl)) {
		t.Errorf("Expired: want false before capture_before and true at it")
	}
	at := now.Add(time.Minute)
	if err := p.Cancel(CancelFraudulent, at); err != nil {
		t.Fatal(err)
	}
	if p.Status() != StatusCanceled || !p.CanceledAt().Equal(at) || p.CancellationReason() != CancelFraudulent {
		t.Errorf("got %q at %s for %q, want canceled at %s for fraudulent", p.Status(), p.CanceledAt(), p.CancellationReason(), at)
	}
	want := []Event{Canceled{PaymentID: pid, Amount: mustMoney(t, 2500, "BRL"), PayerID: "cus_1", MerchantID: "mer_1", Reason: CancelFraudulent, At: at}}
	if got := p.PullEvents(); !reflect.DeepEqual(got, want) {
		t.Errorf("events = %+v, want %+v", got, want)
	}
	for name, err := range map[string]error{
		"cancel twice":         p.Cancel(CancelDuplicate, at),
		"capture after cancel": p.Capture(mustMoney(t, 100, "BRL"), at),
	} {
		if !errors.Is(err, ErrInvalidTransition) {
			t.Errorf("%s: got %v, want ErrInvalidTransition", name, err)
		}
	}
	if _, err := p.Refund(rid1, mustMoney(t, 100, "BRL"), at); !errors.Is(err, ErrInvalidTransition) {
		t.Errorf("refund after cancel: got %v, want ErrInvalidTransition", err)
	}
	if p.Expired(now.Add(ttl)) {
		t.Error("a canceled payment is not expired: nothing is left to cancel")
	}
	if _, err := Rehydrate(p.Snapshot()); err != nil {
		t.Errorf("rehydrate a canceled payment: %v", err)
	}
}

func TestRehydrateRefusesBrokenLifecycles(t *testing.T) {
	p := authorized(t)
	base := p.Snapshot()
	tests := map[string]func(*Snapshot){
		"manual without capture_before":   func(s *Snapshot) { s.CaptureBefore = time.Time{} },
		"authorized with a capture":       func(s *Snapshot) { s.CapturedMinor = 1 },
		"captured without captured_at":    func(s *Snapshot) { s.Status, s.CapturedMinor = StatusCaptured, 1 },
		"canceled without a reason":       func(s *Snapshot) { s.Status, s.CanceledAt = StatusCanceled, now },
		"automatic authorized":            func(s *Snapshot) { s.CaptureMethod, s.CaptureBefore = CaptureAutomatic, time.Time{} },
		"unknown capture method":          func(s *Snapshot) { s.CaptureMethod = "later" },
		"refunded more than was captured": func(s *Snapshot) { s.Status, s.RefundedMinor = StatusRefunded, 1 },
	}
	for name, breakIt := range tests {
		t.Run(name, func(t *testing.T) {
			s := base
			breakIt(&s)
			if _, err := Rehydrate(s); err == nil {
				t.Errorf("Rehydrate(%+v): got no error", s)
			}
		})
	}
}

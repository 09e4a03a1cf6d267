package payment

import (
	"errors"
	"math"
	"testing"
)

func TestNewMoney(t *testing.T) {
	tests := []struct {
		name     string
		minor    int64
		currency string
		want     Money
		wantErr  error
	}{
		{"valid", 1050, "BRL", Money{1050, "BRL"}, nil},
		{"lower-case code is upper-cased", 1, "usd", Money{1, "USD"}, nil},
		{"zero-decimal currency", 500, "JPY", Money{500, "JPY"}, nil},
		{"max int64", math.MaxInt64, "EUR", Money{math.MaxInt64, "EUR"}, nil},
		{"zero", 0, "BRL", Money{}, ErrInvalidAmount},
		{"negative", -1, "BRL", Money{}, ErrInvalidAmount},
		{"unknown currency", 100, "XXX", Money{}, ErrInvalidAmount},
		{"empty currency", 100, "", Money{}, ErrInvalidAmount},
		{"not a code", 100, "BRLX", Money{}, ErrInvalidAmount},
		// strings.ToUpper makes these "IDR" and "USD".
		{"dotless i", 100, "ıdr", Money{}, ErrInvalidAmount},
		{"long s", 100, "uſd", Money{}, ErrInvalidAmount},
		{"punctuation", 100, "BR@", Money{}, ErrInvalidAmount},
		{"digits", 100, "986", Money{}, ErrInvalidAmount},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewMoney(tt.minor, tt.currency)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestMoneyZeroValueIsInvalid(t *testing.T) {
	var m Money
	if !m.IsZero() {
		t.Fatal("zero Money: IsZero() = false, want true")
	}
}

func TestMoneyAdd(t *testing.T) {
	brl := func(n int64) Money { return Money{n, "BRL"} }
	tests := []struct {
		name    string
		a, b    Money
		want    Money
		wantErr error
	}{
		{"sum", brl(1000), brl(50), brl(1050), nil},
		{"up to max", brl(math.MaxInt64 - 1), brl(1), brl(math.MaxInt64), nil},
		{"overflow", brl(math.MaxInt64), brl(1), Money{}, ErrInvalidAmount},
		{"currency mismatch", brl(1), Money{1, "USD"}, Money{}, ErrCurrencyMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.a.Add(tt.b)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

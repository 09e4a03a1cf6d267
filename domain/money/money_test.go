package money_test

import (
	"testing"

	"github.com/payments-outbox/payments-outbox/domain/money"
)

func TestParseCurrency(t *testing.T) {
	tests := []struct {
		name, in, want string
		ok             bool
	}{
		{"upper-case", "BRL", "BRL", true},
		{"lower-case is upper-cased", "usd", "USD", true},
		{"mixed case", "jPy", "JPY", true},
		{"unknown", "XXX", "", false},
		{"empty", "", "", false},
		{"four letters", "BRLX", "", false},
		// strings.ToUpper makes these "IDR" and "USD".
		{"dotless i", "ıdr", "", false},
		{"long s", "uſd", "", false},
		{"punctuation", "BR@", "", false},
		{"digits", "986", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := money.ParseCurrency(tt.in)
			if got != tt.want || ok != tt.ok {
				t.Errorf("ParseCurrency(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestIsCurrencyTakesTheCodeAsCarried(t *testing.T) {
	for in, want := range map[string]bool{"BRL": true, "KWD": true, "brl": false, "XXX": false, "": false, "BR": false} {
		if got := money.IsCurrency(in); got != want {
			t.Errorf("IsCurrency(%q) = %v, want %v", in, got, want)
		}
	}
}

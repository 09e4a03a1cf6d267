package main

import "testing"

func TestPoolURLSizesThePoolUnlessTheURLDoes(t *testing.T) {
	tests := []struct{ url, want string }{
		{"postgres://h/db", "postgres://h/db?pool_max_conns=32"},
		{"postgres://h/db?sslmode=disable", "postgres://h/db?sslmode=disable&pool_max_conns=32"},
		{"postgres://h/db?pool_max_conns=7", "postgres://h/db?pool_max_conns=7"},
	}
	for _, tt := range tests {
		if got := (config{DatabaseURL: tt.url}).poolURL(); got != tt.want {
			t.Errorf("poolURL(%q) = %q, want %q", tt.url, got, tt.want)
		}
	}
}

package httpserver_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/payments-outbox/payments-outbox/adapters/httpserver"
)

func TestParseBearer(t *testing.T) {
	tests := []struct {
		header, token string
		err           error
	}{
		{"", "", httpserver.ErrNoCredentials},
		{"Bearer abc", "abc", nil},
		{"bearer abc", "abc", nil},
		{"BEARER   abc", "abc", nil},
		{"Bearer a-b.c_d~e+f/g==", "a-b.c_d~e+f/g==", nil},
		{"Bearer", "", httpserver.ErrMalformedCredentials},
		{"Bearer ", "", httpserver.ErrMalformedCredentials},
		{"Bearer ==", "", httpserver.ErrMalformedCredentials},
		{"Bearer a=b", "", httpserver.ErrMalformedCredentials},
		{"Bearer a b", "", httpserver.ErrMalformedCredentials},
		{"Bearer abc ", "", httpserver.ErrMalformedCredentials},
		{"Bearer\tabc", "", httpserver.ErrMalformedCredentials},
		{"Basic YWxhZGRpbjpvcGVuc2VzYW1l", "", httpserver.ErrMalformedCredentials},
		{"Bearerabc", "", httpserver.ErrMalformedCredentials},
		{" Bearer abc", "", httpserver.ErrMalformedCredentials},
		{"Bearer ab\x00c", "", httpserver.ErrMalformedCredentials},
		{"Bearer clé", "", httpserver.ErrMalformedCredentials},
	}
	for _, tt := range tests {
		token, err := httpserver.ParseBearer(tt.header)
		if token != tt.token || !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
			t.Errorf("ParseBearer(%q) = %q, %v; want %q, %v", tt.header, token, err, tt.token, tt.err)
		}
	}
}

// FuzzParseBearer: whatever the header, the parser returns a token of the
// b64token form that the header ends with, or one of its two errors, and an
// error never quotes the header.
func FuzzParseBearer(f *testing.F) {
	for _, s := range []string{"", "Bearer abc", "bearer pk_test_x_y", "Basic x", "Bearer  a==", "Bearer a b", "Bearer \x00", "Bearer é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		token, err := httpserver.ParseBearer(header)
		if err != nil {
			if !errors.Is(err, httpserver.ErrNoCredentials) && !errors.Is(err, httpserver.ErrMalformedCredentials) {
				t.Fatalf("ParseBearer(%q): unexpected error %v", header, err)
			}
			// (A short header may be a word of the message by chance.)
			if token != "" || (len(header) >= 8 && strings.Contains(err.Error(), header)) {
				t.Fatalf("ParseBearer(%q) = %q, %v: a token with an error, or the header in the error", header, token, err)
			}
			return
		}
		if token == "" || !strings.HasSuffix(header, token) || !strings.EqualFold(header[:6], "Bearer") {
			t.Fatalf("ParseBearer(%q) = %q: not the header's Bearer token", header, token)
		}
		for _, c := range strings.TrimRight(token, "=") {
			if !strings.ContainsRune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~+/", c) {
				t.Fatalf("ParseBearer(%q) = %q: %q is not a b64token character", header, token, c)
			}
		}
	})
}

// TestRequireBearer: the middleware hands the token to the verifier and the
// verifier's context to the handler, and every refusal to onError.
func TestRequireBearer(t *testing.T) {
	type key struct{}
	verify := func(ctx context.Context, token string) (context.Context, error) {
		if token != "good" {
			return ctx, httpserver.ErrInvalidCredentials
		}
		return context.WithValue(ctx, key{}, "who"), nil
	}
	var got []error
	h := httpserver.RequireBearer(verify, func(w http.ResponseWriter, r *http.Request, err error) {
		got = append(got, err)
		w.WriteHeader(http.StatusUnauthorized)
	})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Context().Value(key{}) != "who" {
			t.Error("the handler did not get the verifier's context")
		}
	}))
	tests := []struct {
		headers []string
		want    int
		err     error
	}{
		{nil, 401, httpserver.ErrNoCredentials},
		{[]string{"Bearer bad"}, 401, httpserver.ErrInvalidCredentials},
		{[]string{"Basic x"}, 401, httpserver.ErrMalformedCredentials},
		{[]string{"Bearer good"}, 200, nil},
		// Never read as the first: which one a proxy before the service
		// read is anyone's guess.
		{[]string{"Bearer good", "Bearer bad"}, 401, httpserver.ErrMalformedCredentials},
		{[]string{"Bearer good", "Bearer good"}, 401, httpserver.ErrMalformedCredentials},
	}
	for _, tt := range tests {
		got = nil
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		for _, h := range tt.headers {
			req.Header.Add("Authorization", h)
		}
		h.ServeHTTP(rec, req)
		if rec.Code != tt.want {
			t.Errorf("%q: %d, want %d", tt.headers, rec.Code, tt.want)
		}
		if tt.err != nil && (len(got) != 1 || !errors.Is(got[0], tt.err)) {
			t.Errorf("%q: onError got %v, want once %v", tt.headers, got, tt.err)
		}
	}
}

// BenchmarkBearerAndRateLimit is the HTTP side of authentication on every
// request: parsing the header, the verifier's context, and the per-key rate
// limiter (never limiting here), around a handler that does nothing.
func BenchmarkBearerAndRateLimit(b *testing.B) {
	type key struct{}
	verify := func(ctx context.Context, token string) (context.Context, error) {
		return context.WithValue(ctx, key{}, token[:8]), nil
	}
	h := httpserver.RequireBearer(verify, func(w http.ResponseWriter, r *http.Request, err error) { b.Fatal(err) })(
		httpserver.RateLimit(1_000_000_000, func(r *http.Request) string { return r.Context().Value(key{}).(string) }, nil)(
			http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	req := httptest.NewRequest(http.MethodPost, "/payments", nil)
	req.Header.Set("Authorization", "Bearer pk_test_abcdefghijklmnop_"+strings.Repeat("a", 52))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		w := httptest.NewRecorder()
		for pb.Next() {
			h.ServeHTTP(w, req)
		}
	})
}

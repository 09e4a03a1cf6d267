// Package apikeyclient verifies a payments API key for another service by
// asking the payments service whom it acts as: GET {base}/api_key with the
// key as its bearer credential (adapters/paymentsapi). The webhooks service
// authenticates its merchants this way (webhooksapi.Authenticator).
//
// It keeps no answer: the payments service's Authenticator, whose cache
// (access.CacheTTL) is the one bound on how long a revoked key keeps
// working, decides every time, so a key revoked there stops working here
// within the same bound, and a second cache could only lengthen it. When
// the payments service cannot answer, the key is not trusted: the error is
// dependency.ErrUnavailable, which the APIs answer 503 (docs/SECURITY.md).
//
// The key goes in one request's Authorization header to the configured
// service and nowhere else: no redirect is followed, and no error, log line
// or metric of this package holds it.
package apikeyclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/dependency"
)

// DefaultTimeout bounds a call when Config.Timeout is 0: the payments
// service answers a key from its cache or one indexed lookup, and a request
// that waits on it must still get its 503 before the client gives up.
const DefaultTimeout = 2 * time.Second

// maxAnswer bounds what is read of an answer: an api_key object is a few
// dozen bytes.
const maxAnswer = 4 << 10

// Config tunes New; the zero value is DefaultTimeout over a transport of
// its own.
type Config struct {
	// Timeout bounds each call, connection included (0: DefaultTimeout).
	Timeout time.Duration
	// Transport carries the calls (nil: a clone of http.DefaultTransport),
	// so cmd may wrap it to trace them.
	Transport http.RoundTripper
}

// Client is an Authenticator of payments API keys that asks the payments
// service. Safe for concurrent use.
type Client struct {
	endpoint string
	http     *http.Client
}

// New returns a Client of the payments API at baseURL (WEBHOOKS_PAYMENTS_URL,
// e.g. http://payments:8080): an absolute http or https URL without query,
// fragment or user information.
func New(baseURL string, cfg Config) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("the payments API's URL %q: want an absolute http or https URL, without query or user information", baseURL)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Transport == nil {
		cfg.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	return &Client{
		endpoint: strings.TrimSuffix(u.String(), "/") + "/api_key",
		http: &http.Client{
			Transport: cfg.Transport,
			Timeout:   cfg.Timeout,
			// A redirect would send the key on to wherever it points.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}, nil
}

// apiKey is GET /api_key's answer (paymentsapi's apiKeyResponse). Fields
// the payments service may add later are ignored, so that adding one does
// not shut every merchant out.
type apiKey struct {
	Object     string  `json:"object"`
	ID         string  `json:"id"`
	MerchantID *string `json:"merchant_id"`
	Platform   bool    `json:"platform"`
}

// Authenticate returns whom key acts as, as the payments service says now.
// Errors: access.ErrMalformedKey (not of a key's form: nothing is sent),
// access.ErrUnknownKey (payments answered 401: unknown or revoked),
// access.ErrRateLimited (payments answered 429: the key's verifications are
// over their limit), dependency.ErrUnavailable (no answer in time, or any other answer), or
// ctx's own error when the caller gave up first. None holds the key.
func (c *Client) Authenticate(ctx context.Context, key string) (access.Principal, error) {
	if _, err := access.ParseKey(key); err != nil {
		return access.Principal{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.endpoint, nil)
	if err != nil {
		return access.Principal{}, fmt.Errorf("%w: %w", dependency.ErrUnavailable, err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Accept", "application/json")
	res, err := c.http.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			return access.Principal{}, ctx.Err() // the caller went away: no outage
		}
		// A *url.Error: the method, this client's URL and the cause.
		return access.Principal{}, fmt.Errorf("%w: verify an API key with the payments service: %w", dependency.ErrUnavailable, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxAnswer+1))
	if err != nil {
		return access.Principal{}, fmt.Errorf("%w: read the payments service's answer about an API key: %w", dependency.ErrUnavailable, err)
	}
	switch res.StatusCode {
	case http.StatusOK:
		return principal(body)
	case http.StatusUnauthorized:
		var p struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(body, &p)
		if p.Type == "/problems/malformed-credentials" {
			return access.Principal{}, access.ErrMalformedKey
		}
		return access.Principal{}, access.ErrUnknownKey
	case http.StatusTooManyRequests:
		// The key's verifications are over their limit on payments: no
		// verdict, so it is not let through; its holder slows down.
		return access.Principal{}, access.ErrRateLimited
	default:
		// 5xx, a redirect: no verdict on the key, so it is not let
		// through.
		return access.Principal{}, fmt.Errorf("%w: the payments service answered an API key's verification %d", dependency.ErrUnavailable, res.StatusCode)
	}
}

// principal reads a 200's api_key; one that does not read as a merchant's
// key or the platform's is no verdict either.
func principal(body []byte) (access.Principal, error) {
	var k apiKey
	if len(body) > maxAnswer || json.Unmarshal(body, &k) != nil || k.Object != "api_key" || k.ID == "" {
		return access.Principal{}, fmt.Errorf("%w: the payments service's answer about an API key is not an api_key", dependency.ErrUnavailable)
	}
	switch {
	case k.Platform && k.MerchantID == nil:
		return access.PlatformPrincipal(k.ID), nil
	case !k.Platform && k.MerchantID != nil && *k.MerchantID != "":
		return access.MerchantPrincipal(k.ID, *k.MerchantID), nil
	}
	return access.Principal{}, fmt.Errorf("%w: the payments service's api_key is neither a merchant's nor the platform's", dependency.ErrUnavailable)
}

package httpserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/payments-outbox/payments-outbox/application/access"
)

// The ways a request fails to authenticate. WriteError answers each 401 with
// a WWW-Authenticate challenge (RFC 6750) and its own problem type; a
// service's verifier wraps its own errors in them.
var (
	// ErrNoCredentials: the request has no Authorization header.
	ErrNoCredentials = errors.New("no credentials")
	// ErrMalformedCredentials: the header is not "Bearer <token>", or the
	// token is not of the service's form.
	ErrMalformedCredentials = errors.New("malformed credentials")
	// ErrInvalidCredentials: the token is of the right form, but unknown
	// or revoked.
	ErrInvalidCredentials = errors.New("invalid credentials")
)

// errManyCredentials is a request with more than one Authorization header:
// which one a server, or a proxy before it, reads is anyone's guess, so
// neither is.
var errManyCredentials = fmt.Errorf("%w: more than one Authorization header", ErrMalformedCredentials)

// ParseBearer returns the token of an Authorization header of the Bearer
// scheme (RFC 6750 section 2.1): the scheme, case-insensitive, one or more
// spaces, and a b64token — letters, digits and -._~+/, then any "="
// (access.IsB64Token: one definition, which the ledger's start-up checks its
// configured tokens with too). Errors: ErrNoCredentials for an empty header,
// ErrMalformedCredentials for anything else that is not that form. The error
// never holds the header.
func ParseBearer(header string) (string, error) {
	if header == "" {
		return "", ErrNoCredentials
	}
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", ErrMalformedCredentials
	}
	token = strings.TrimLeft(token, " ")
	if !access.IsB64Token(token) {
		return "", ErrMalformedCredentials
	}
	return token, nil
}

// RequireBearer returns middleware that lets a request through only with an
// Authorization: Bearer token that verify accepts. verify returns the
// context the request goes on with (carrying who it is) or an error, which
// onError answers — the API's writeError, which hands the three errors above
// to WriteError: verify wraps its "malformed" and "unknown" in
// ErrMalformedCredentials and ErrInvalidCredentials, and returns an outage
// as dependency.ErrUnavailable, answered 503. The middleware parses
// the header and nothing more: the decision is verify's. A request with two
// Authorization headers is malformed, never read as its first.
func RequireBearer(verify func(ctx context.Context, token string) (context.Context, error), onError func(http.ResponseWriter, *http.Request, error)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var header string
			switch vs := r.Header.Values("Authorization"); len(vs) {
			case 0:
			case 1:
				header = vs[0]
			default:
				onError(w, r, errManyCredentials)
				return
			}
			token, err := ParseBearer(header)
			if err != nil {
				onError(w, r, err)
				return
			}
			ctx, err := verify(r.Context(), token)
			if err != nil {
				onError(w, r, err)
				return
			}
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

type principalKey struct{}

// RequireKey is RequireBearer for an API that takes the payments API keys:
// authenticate (an Authenticator's method: access.Authenticator on the
// payments service, the introspection client on the webhooks service) says
// whom the key acts as, and the principal goes on in the request's context,
// from which Principal hands it to the use cases. authenticate's
// access.ErrMalformedKey and access.ErrUnknownKey are wrapped in
// ErrMalformedCredentials and ErrInvalidCredentials; any other error, an
// outage among them, goes to onError as it is.
func RequireKey(authenticate func(ctx context.Context, key string) (access.Principal, error), onError func(http.ResponseWriter, *http.Request, error)) func(http.Handler) http.Handler {
	return RequireBearer(func(ctx context.Context, key string) (context.Context, error) {
		p, err := authenticate(ctx, key)
		switch {
		case errors.Is(err, access.ErrMalformedKey):
			return ctx, fmt.Errorf("%w: %w", ErrMalformedCredentials, err)
		case errors.Is(err, access.ErrUnknownKey):
			return ctx, fmt.Errorf("%w: %w", ErrInvalidCredentials, err)
		case err != nil:
			return ctx, err
		}
		return context.WithValue(ctx, principalKey{}, p), nil
	}, onError)
}

// Principal is the principal RequireKey authenticated the request as; the
// zero Principal, which acts for no one, if it did not.
func Principal(r *http.Request) access.Principal {
	p, _ := r.Context().Value(principalKey{}).(access.Principal)
	return p
}

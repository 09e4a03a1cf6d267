// Package apitest checks every HTTP exchange of a test against the service's
// OpenAPI document, so that the document is enforced rather than decorative:
// a response with a status, a field or a header the document does not give
// that route, a route it does not list, or a request it refuses that the
// service accepts, fails the test that made it.
//
// A test wraps what it already uses: the handler it serves
// (Validator.Handler) or its client's transport (Validator.Transport). The
// rules, beyond what openapi3filter checks of each request and response:
//
//   - A request the document refuses (a body, header or parameter it does
//     not allow) must be answered 4xx: the tests send bad input on purpose,
//     and the service must refuse at least what its document refuses.
//   - A path the document does not list must be answered as its
//     components.responses.RouteNotFound describes (404), a method a listed
//     path does not list as components.responses.MethodNotAllowed (405), and
//     a request whose body is framed by Transfer-Encoding, on any route, as
//     components.responses.TransferEncodingRefused (400): those are the only
//     answers a client can get off the document.
//   - Every status must be documented for its route (no `default`), and
//     every response header must be documented for its response, except the
//     few that describe the transfer itself (transferHeaders).
//   - A HEAD request is checked against its path's GET operation, without
//     the body (RFC 9110, 9.3.2: the answer a GET would get, headers only):
//     the services serve HEAD wherever they serve GET, and a document that
//     listed each HEAD would repeat each GET.
//
// Validation uses kin-openapi's openapi3filter, which validates OpenAPI 3.1
// documents' schemas as JSON Schema 2020-12.
package apitest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/go-chi/chi/v5"
)

// Validator checks exchanges against one OpenAPI document. It is safe for
// concurrent use, as the servers it wraps are.
type Validator struct {
	doc    *openapi3.T
	router routers.Router
}

// New loads doc, validates it as an OpenAPI document, and returns its
// Validator; a document that does not load or validate fails t at once.
func New(t testing.TB, doc []byte) *Validator {
	t.Helper()
	v, err := load(doc)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func load(doc []byte) (*Validator, error) {
	loader := openapi3.NewLoader()
	d, err := loader.LoadFromData(doc)
	if err != nil {
		return nil, fmt.Errorf("load the OpenAPI document: %w", err)
	}
	if err := d.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("the OpenAPI document is invalid: %w", err)
	}
	for _, name := range []string{routeNotFound, methodNotAllowed, transferEncodingRefused} {
		if d.Components == nil || d.Components.Responses[name] == nil {
			return nil, fmt.Errorf("the OpenAPI document has no components.responses.%s: what does the service answer off the document?", name)
		}
	}
	// Match paths alone: the servers name where the service runs, and a test
	// server runs elsewhere.
	d.Servers = nil
	r, err := gorillamux.NewRouter(d)
	if err != nil {
		return nil, fmt.Errorf("route the OpenAPI document: %w", err)
	}
	return &Validator{doc: d, router: r}, nil
}

// The responses of the document that describe what the service answers off
// the document: a path it does not list, a method a listed path does not
// list, a body framed by Transfer-Encoding.
const (
	routeNotFound           = "RouteNotFound"
	methodNotAllowed        = "MethodNotAllowed"
	transferEncodingRefused = "TransferEncodingRefused"
)

var offRouteStatus = map[string]int{
	routeNotFound:           http.StatusNotFound,
	methodNotAllowed:        http.StatusMethodNotAllowed,
	transferEncodingRefused: http.StatusBadRequest,
}

// transferHeaders are the response headers about the transfer and handling
// of a response rather than about the API, which no operation needs to
// document: the document's description says once what every answer carries
// (Cache-Control, X-Content-Type-Options).
var transferHeaders = []string{
	"Cache-Control", "Connection", "Content-Encoding", "Content-Length", "Content-Type", "Date",
	"Keep-Alive", "Transfer-Encoding", "Vary", "X-Content-Type-Options",
}

// Check validates one exchange: the request with its body, and the response
// the service gave it. It returns every way the exchange departs from the
// document, or nil.
func (v *Validator) Check(req *http.Request, reqBody []byte, status int, header http.Header, body []byte) error {
	ctx := context.Background()
	// The validators read and may change what they are given: give them copies.
	req = req.Clone(ctx)
	req.Body = io.NopCloser(bytes.NewReader(reqBody))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(reqBody)), nil }

	method := req.Method
	head := method == http.MethodHead
	if head {
		req.Method = http.MethodGet // req is a copy
	}
	route, params, err := v.router.FindRoute(req)
	var (
		reqErr   error
		offRoute string
	)
	switch {
	case len(req.TransferEncoding) > 0:
		offRoute = transferEncodingRefused
	case errors.Is(err, routers.ErrPathNotFound):
		offRoute = routeNotFound
	case errors.Is(err, routers.ErrMethodNotAllowed):
		offRoute = methodNotAllowed
	case err != nil:
		return fmt.Errorf("find the route: %w", err)
	}
	if offRoute != "" {
		// Off the document, the one answer is the response that stands for it.
		ref := v.doc.Components.Responses[offRoute]
		want := offRouteStatus[offRoute]
		if status != want {
			if offRoute == transferEncodingRefused {
				return fmt.Errorf("%s %s with Transfer-Encoding %q answered %d, not %d (%s)", method, req.URL.Path, req.TransferEncoding, status, want, offRoute)
			}
			return fmt.Errorf("the document lists no %s %s (%s), but the service answered %d: an undocumented route", method, req.URL.Path, offRoute, status)
		}
		op := openapi3.NewOperation()
		op.Responses = openapi3.NewResponses(openapi3.WithStatus(want, ref))
		route = &routers.Route{Spec: v.doc, Path: req.URL.Path, PathItem: &openapi3.PathItem{}, Method: req.Method, Operation: op}
	} else {
		reqErr = openapi3filter.ValidateRequest(ctx, &openapi3filter.RequestValidationInput{
			Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{MultiError: true, AuthenticationFunc: bearerPresent},
		})
	}

	var errs []error
	if reqErr != nil && (status < 400 || status > 499) {
		errs = append(errs, fmt.Errorf("the document refuses the request, but the service answered %d, not a 4xx: %w", status, reqErr))
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, ExcludeResponseBody: head},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(ctx, in); err != nil {
		errs = append(errs, fmt.Errorf("response: %w", err))
	}
	if res := route.Operation.Responses.Status(status); res != nil && res.Value != nil {
		if extra := undocumentedHeaders(res.Value, header); len(extra) > 0 {
			errs = append(errs, fmt.Errorf("response headers the document does not give a %d: %s", status, strings.Join(extra, ", ")))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s %s answered %d does not follow the OpenAPI document: %w", method, req.URL.RequestURI(), status, errors.Join(errs...))
	}
	return nil
}

// bearerPresent checks a request against the document's security
// requirements as far as a document can: an http bearer scheme needs an
// Authorization: Bearer header with a credential. Whether the credential is
// valid only the service knows; a request without one that the service
// answers 2xx fails the exchange.
func bearerPresent(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	s := in.SecurityScheme
	if s.Type != "http" || !strings.EqualFold(s.Scheme, "bearer") {
		return fmt.Errorf("apitest checks http bearer schemes only, not %s %s", s.Type, s.Scheme)
	}
	scheme, token, ok := strings.Cut(in.RequestValidationInput.Request.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return errors.New("no Authorization: Bearer credential")
	}
	return nil
}

func undocumentedHeaders(res *openapi3.Response, header http.Header) []string {
	var extra []string
	for name := range header {
		if slices.Contains(transferHeaders, name) {
			continue
		}
		documented := false
		for doc := range res.Headers {
			if http.CanonicalHeaderKey(doc) == name {
				documented = true
				break
			}
		}
		if !documented {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	return extra
}

// Handler returns h with every exchange checked: a departure from the
// document fails t. It answers the client exactly what h answered, once the
// check is done, so a test never sees a response its check has not seen.
func (v *Validator) Handler(t testing.TB, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqBody, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("apitest: read the request body: %v", err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(reqBody))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		res := rec.Result()
		body := rec.Body.Bytes()
		if r.Method == http.MethodHead {
			body = nil // what net/http sends of it, writing it below
		}
		if err := v.Check(r, reqBody, res.StatusCode, res.Header, body); err != nil {
			t.Error(err)
		}
		for k, vs := range res.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(res.StatusCode)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

// Transport returns next (http.DefaultTransport when nil) with every exchange
// checked: a departure from the document fails t. For tests that talk to a
// running service whose handler they cannot wrap.
func (v *Validator) Transport(t testing.TB, next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		var reqBody []byte
		if req.Body != nil {
			b, err := io.ReadAll(req.Body)
			req.Body.Close()
			if err != nil {
				return nil, err
			}
			reqBody = b
			req = req.Clone(req.Context())
			req.Body = io.NopCloser(bytes.NewReader(b))
			req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
		}
		res, err := next.RoundTrip(req)
		if err != nil {
			return res, err
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			return nil, err
		}
		res.Body = io.NopCloser(bytes.NewReader(body))
		if err := v.Check(req, reqBody, res.StatusCode, res.Header, body); err != nil {
			t.Error(err)
		}
		return res, nil
	})
}

// Client returns an HTTP client whose every exchange is checked (Transport).
func (v *Validator) Client(t testing.TB) *http.Client {
	return &http.Client{Transport: v.Transport(t, nil)}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// CheckRoutes fails t unless the routes registered on r and the operations
// of the document are the same set: a route served but undocumented, or
// documented but not served, is drift either way.
func (v *Validator) CheckRoutes(t testing.TB, r chi.Routes) {
	t.Helper()
	served := map[string]bool{}
	err := chi.Walk(r, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		served[method+" "+route] = true
		return nil
	})
	if err != nil {
		t.Fatalf("walk the router: %v", err)
	}
	documented := map[string]bool{}
	for path, item := range v.doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+path] = true
		}
	}
	for route := range served {
		if !documented[route] {
			t.Errorf("%s is served but not in the OpenAPI document", route)
		}
	}
	for route := range documented {
		if !served[route] {
			t.Errorf("%s is in the OpenAPI document but not served", route)
		}
	}
}

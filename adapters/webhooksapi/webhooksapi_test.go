package webhooksapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/payments-outbox/payments-outbox/adapters/httpserver"
	"github.com/payments-outbox/payments-outbox/adapters/webhooksapi"
	apidoc "github.com/payments-outbox/payments-outbox/api"
	"github.com/payments-outbox/payments-outbox/api/apitest"
	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/webhooks"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// testKeys are the API keys the fake Authenticator knows: two merchants'
// and the platform's; unknown is of a key's form and known to no one.
type testKeys struct{ mer1, mer2, platform, unknown string }

type server struct {
	*httptest.Server
	svc  *fakeService
	auth *fakeAuth
	keys testKeys
}

func newKey(t testing.TB, platform bool) string {
	t.Helper()
	key, _, err := access.NewKey(access.EnvTest, platform, nil)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// newServer is the API on the fake service and Authenticator, every
// exchange checked against the OpenAPI document.
func newServer(t *testing.T, log *slog.Logger, metrics *httpserver.Metrics, cfg webhooksapi.Config) *server {
	t.Helper()
	keys := testKeys{mer1: newKey(t, false), mer2: newKey(t, false), platform: newKey(t, true), unknown: newKey(t, false)}
	auth := &fakeAuth{keys: map[string]access.Principal{
		keys.mer1:     access.MerchantPrincipal("kmer1", "mer_1"),
		keys.mer2:     access.MerchantPrincipal("kmer2", "mer_2"),
		keys.platform: access.PlatformPrincipal("kplat"),
	}}
	svc := newFakeService()
	h := webhooksapi.NewHandler(svc, auth, log, metrics, cfg)
	srv := httptest.NewServer(apitest.New(t, apidoc.Webhooks()).Handler(t, h))
	t.Cleanup(srv.Close)
	return &server{srv, svc, auth, keys}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
	return m
}

// do sends a request as key ("" sends no Authorization); header holds
// more name, value pairs. A body is sent as application/json unless a
// Content-Type is among them.
func (s *server) do(t *testing.T, key, method, path, body string, header ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(header); i += 2 {
		if seen[header[i]] { // named twice: sent twice
			req.Header.Add(header[i], header[i+1])
			continue
		}
		seen[header[i]] = true
		req.Header.Set(header[i], header[i+1])
	}
	res, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{res.StatusCode, res.Header, b}
}

func assertProblem(t *testing.T, res response, status int, typ string) {
	t.Helper()
	var p struct {
		Type   string `json:"type"`
		Status int    `json:"status"`
	}
	if res.status != status || !strings.HasPrefix(res.header.Get("Content-Type"), "application/problem+json") {
		t.Fatalf("got %d %q, want %d problem+json %s; body %s", res.status, res.header.Get("Content-Type"), status, typ, res.body)
	}
	if err := json.Unmarshal(res.body, &p); err != nil || p.Type != typ || p.Status != status {
		t.Fatalf("problem %s, want type %s status %d (%v)", res.body, typ, status, err)
	}
}

const endpointBody = `{"url": "https://shop.example/hooks", "enabled_events": ["payment.created", "payment.refunded"], "description": "orders"}`

// create makes an endpoint as key and returns its answer's fields.
func (s *server) create(t *testing.T, key, body string, header ...string) map[string]any {
	t.Helper()
	res := s.do(t, key, http.MethodPost, "/webhook_endpoints", body, header...)
	if res.status != http.StatusCreated {
		t.Fatalf("create: %d %s", res.status, res.body)
	}
	return res.json(t)
}

// TestRoutesAreDocumented: the router serves exactly the operations of the
// OpenAPI document.
func TestRoutesAreDocumented(t *testing.T) {
	h := webhooksapi.NewHandler(nil, nil, logtest.Discard(), nil, webhooksapi.Config{})
	apitest.New(t, apidoc.Webhooks()).CheckRoutes(t, h.(chi.Routes))
}

// TestServesItsOpenAPIDocument: GET /openapi.yaml is the document in api/.
func TestServesItsOpenAPIDocument(t *testing.T) {
	s := newServer(t, logtest.Discard(), nil, webhooksapi.Config{})
	res := s.do(t, "", http.MethodGet, "/openapi.yaml", "")
	if res.status != http.StatusOK || res.header.Get("Content-Type") != "application/yaml" || !bytes.Equal(res.body, apidoc.Webhooks()) {
		t.Errorf("GET /openapi.yaml: %d %q; want 200 application/yaml with api/%s", res.status, res.header.Get("Content-Type"), apidoc.WebhooksFile)
	}
}

// TestEveryRouteNeedsAKey: every route the router serves (chi.Walk) against
// every kind of credential, and against the payments service being down.
// mer_1 owns the endpoint; mer_2's key is another merchant's, which finds
// nothing of it. A route added without an entry here fails.
func TestEveryRouteNeedsAKey(t *testing.T) {
	t.Parallel()
	s := newServer(t, logtest.Discard(), nil, webhooksapi.Config{})

	type want struct {
		status int
		typ    string
	}
	notFound := want{404, "/problems/endpoint-not-found"}
	cases := map[string]struct {
		body              string
		otherMerchant, ok want
	}{
		"POST /webhook_endpoints":                                      {endpointBody, want{201, ""}, want{201, ""}},
		"GET /webhook_endpoints":                                       {"", want{200, ""}, want{200, ""}},
		"GET /webhook_endpoints/{id}":                                  {"", notFound, want{200, ""}},
		"DELETE /webhook_endpoints/{id}":                               {"", notFound, want{200, ""}},
		"POST /webhook_endpoints/{id}/rotate_secret":                   {"", notFound, want{200, ""}},
		"GET /webhook_endpoints/{id}/deliveries":                       {"", notFound, want{200, ""}},
		"POST /webhook_endpoints/{id}/deliveries/{event_id}/redeliver": {"", notFound, want{202, ""}},
		"POST /webhook_endpoints/{id}/recover":                         {`{"since": "2026-11-29T00:00:00Z"}`, notFound, want{202, ""}},
	}
	var served []string
	h := webhooksapi.NewHandler(nil, nil, logtest.Discard(), nil, webhooksapi.Config{})
	_ = chi.Walk(h.(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if route != "/openapi.yaml" {
			served = append(served, method+" "+route)
		}
		return nil
	})
	for r := range cases {
		if !slices.Contains(served, r) {
			t.Errorf("cases exercises %s, which the router does not serve", r)
		}
	}
	slices.Sort(served)
	for _, r := range served {
		c, ok := cases[r]
		if !ok {
			t.Errorf("the router serves %s, which this test does not exercise: add it to cases", r)
			continue
		}
		// Each route its own endpoint of mer_1's, so that a DELETE leaves
		// the others something to act on.
		owned := s.create(t, s.keys.mer1, endpointBody)["id"].(string)
		s.svc.attempted(owned, webhooks.Attempt{ID: "wa_" + owned, EndpointID: owned, EventID: "evt_1", EventType: "payment.created",
			AttemptedAt: time.Now(), StatusCode: 500, Latency: 120 * time.Millisecond, Error: "answered 500", Outcome: webhooks.Failed})
		method, pattern, _ := strings.Cut(r, " ")
		path := strings.NewReplacer("{id}", owned, "{event_id}", "evt_1").Replace(pattern)
		if method == http.MethodPost && pattern == "/webhook_endpoints" {
			c.body = strings.Replace(endpointBody, `"description"`, `"merchant_id": "mer_1", "description"`, 1)
		}
		creds := []struct {
			name, key string
			want      want
		}{
			{"no key", "", want{401, "/problems/authentication-required"}},
			{"not a key", "letmein", want{401, "/problems/malformed-credentials"}},
			{"unknown key", s.keys.unknown, want{401, "/problems/invalid-credentials"}},
			{"payments down", s.keys.mer1, want{503, "/problems/unavailable"}},
			{"the platform's key", s.keys.platform, c.ok},
			{"another merchant's key", s.keys.mer2, c.otherMerchant},
			// Last: the owner's DELETE deletes it.
			{"the owner's key", s.keys.mer1, c.ok},
		}
		for _, cr := range creds {
			t.Run(r+"/"+cr.name, func(t *testing.T) {
				s.auth.setDown(cr.name == "payments down")
				defer s.auth.setDown(false)
				body := c.body
				if cr.key == s.keys.mer2 && strings.Contains(body, "mer_1") {
					body = endpointBody // mer_2 creates its own
				}
				if cr.key == s.keys.platform && method == http.MethodDelete {
					return // the owner's deletes it below
				}
				res := s.do(t, cr.key, method, path, body)
				if cr.want.typ == "" {
					if res.status != cr.want.status {
						t.Fatalf("status %d, want %d; body %s", res.status, cr.want.status, res.body)
					}
					return
				}
				assertProblem(t, res, cr.want.status, cr.want.typ)
				if www := res.header.Get("WWW-Authenticate"); (cr.want.status == 401) != strings.HasPrefix(www, "Bearer") {
					t.Errorf("%d with WWW-Authenticate %q", res.status, www)
				}
			})
		}
	}
}

// TestEndpointLifecycle: create shows the secret once, read never shows
// it, rotate shows the new one, delete answers the endpoint deleted (a
// second delete the same), and a deleted endpoint takes no other action.
func TestEndpointLifecycle(t *testing.T) {
	t.Parallel()
	s := newServer(t, logtest.Discard(), nil, webhooksapi.Config{})
	res := s.do(t, s.keys.mer1, http.MethodPost, "/webhook_endpoints", endpointBody)
	if res.status != http.StatusCreated {
		t.Fatalf("create: %d %s", res.status, res.body)
	}
	e := res.json(t)
	id, secret := e["id"].(string), e["secret"].(string)
	if res.header.Get("Location") != "/webhook_endpoints/"+id || !strings.HasPrefix(secret, "whsec_") {
		t.Errorf("create: Location %q, secret %q", res.header.Get("Location"), secret)
	}
	for field, want := range map[string]any{
		"object": "webhook_endpoint", "merchant_id": "mer_1", "url": "https://shop.example/hooks", "status": "enabled",
		"disabled_reason": nil, "description": "orders",
	} {
		if e[field] != want {
			t.Errorf("create: %s = %v, want %v", field, e[field], want)
		}
	}
	if _, ok := e["deleted"]; ok {
		t.Errorf("a new endpoint answered with deleted: %s", res.body)
	}

	got := s.do(t, s.keys.mer1, http.MethodGet, "/webhook_endpoints/"+id, "")
	if got.status != http.StatusOK || bytes.Contains(got.body, []byte(secret)) || bytes.Contains(got.body, []byte(`"secret"`)) {
		t.Errorf("GET: %d %s; want 200 without the secret", got.status, got.body)
	}
	if list := s.do(t, s.keys.mer1, http.MethodGet, "/webhook_endpoints", ""); bytes.Contains(list.body, []byte(`"secret"`)) {
		t.Errorf("the list shows a secret: %s", list.body)
	}

	rot := s.do(t, s.keys.mer1, http.MethodPost, "/webhook_endpoints/"+id+"/rotate_secret", `{"expire_current_in_seconds": 3600}`)
	if rot.status != http.StatusOK {
		t.Fatalf("rotate: %d %s", rot.status, rot.body)
	}
	if s2 := rot.json(t)["secret"].(string); s2 == secret || !strings.HasPrefix(s2, "whsec_") {
		t.Errorf("rotate answered the secret %q, want a new one", s2)
	}
	if r := s.svc.rotated[0]; r.ExpireCurrentIn != time.Hour || r.EndpointID != id {
		t.Errorf("rotate asked %+v, want the endpoint and an hour", r)
	}
	if rot := s.do(t, s.keys.mer1, http.MethodPost, "/webhook_endpoints/"+id+"/rotate_secret", ""); rot.status != http.StatusOK || s.svc.rotated[1].ExpireCurrentIn != 0 {
		t.Errorf("rotate without a body: %d, expire in %s; want 200 and the grace (0)", rot.status, s.svc.rotated[1].ExpireCurrentIn)
	}
	for _, bad := range []string{`{"expire_current_in_seconds": 0}`, `{"expire_current_in_seconds": -5}`, `{"expire_current_in_seconds": 604801}`} {
		res := s.do(t, s.keys.mer1, http.MethodPost, "/webhook_endpoints/"+id+"/rotate_secret", bad)
		assertProblem(t, res, 422, "/problems/validation-failed")
	}
	if len(s.svc.rotated) != 2 {
		t.Errorf("%d rotations, want the 2 valid ones", len(s.svc.rotated))
	}

	del := s.do(t, s.keys.mer1, http.MethodDelete, "/webhook_endpoints/"+id, "")
	if del.status != http.StatusOK || del.json(t)["deleted"] != true || bytes.Contains(del.body, []byte(`"secret"`)) {
		t.Errorf("DELETE: %d %s; want 200 with deleted: true and no secret", del.status, del.body)
	}
	if again := s.do(t, s.keys.mer1, http.MethodDelete, "/webhook_endpoints/"+id, ""); again.status != http.StatusOK || !bytes.Equal(again.body, del.body) {
		t.Errorf("DELETE again: %d %s; want the first answer, 200 %s", again.status, again.body, del.body)
	}
	assertProblem(t, s.do(t, s.keys.mer1, http.MethodPost, "/webhook_endpoints/"+id+"/rotate_secret", ""), 409, "/problems/endpoint-deleted")
	if list := s.do(t, s.keys.mer1, http.MethodGet, "/webhook_endpoints", "").json(t); len(list["data"].([]any)) != 0 {
		t.Errorf("the list after the delete: %v", list)
	}
	assertProblem(t, s.do(t, s.keys.mer1, http.MethodGet, "/webhook_endpoints/"+strings.Repeat("x", 300), ""), 404, "/problems/endpoint-not-found")
}

// TestCreateIsRefusedAsTheServiceSays: the use case's refusals reach the
// client as problems with their detail.
func TestCreateIsRefusedAsTheServiceSays(t *testing.T) {
	t.Parallel()
	s := newServer(t, logtest.Discard(), nil, webhooksapi.Config{})
	for name, c := range map[string]struct{ key, body string }{
		"http":                  {s.keys.mer1, `{"url": "http://shop.example/hooks", "enabled_events": ["*"]}`},
		"no events":             {s.keys.mer1, `{"url": "https://shop.example/hooks", "enabled_events": []}`},
		"another merchant":      {s.keys.mer1, `{"url": "https://shop.example/hooks", "enabled_events": ["*"], "merchant_id": "mer_2"}`},
		"platform names no one": {s.keys.platform, `{"url": "https://shop.example/hooks", "enabled_events": ["*"]}`},
	} {
		res := s.do(t, c.key, http.MethodPost, "/webhook_endpoints", c.body)
		assertProblem(t, res, 422, "/problems/invalid-endpoint")
		if d, _ := res.json(t)["detail"].(string); !strings.Contains(d, "invalid webhook endpoint") {
			t.Errorf("%s: detail %q, want the use case's", name, d)
		}
	}
	if e := s.create(t, s.keys.platform, `{"url": "https://shop.example/hooks", "enabled_events": ["*"], "merchant_id": "mer_2"}`); e["merchant_id"] != "mer_2" {
		t.Errorf("the platform's create: %v", e)
	}
}

// TestIdempotencyKey: a retry with the same key and body answers the
// endpoint the first request created, never its secret; another body is
// refused; a key not of the form (application/idempotency's rule, which
// the fake service applies as the use cases do), or sent twice, is refused.
func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	s := newServer(t, logtest.Discard(), nil, webhooksapi.Config{})
	first := s.do(t, s.keys.mer1, http.MethodPost, "/webhook_endpoints", endpointBody, "Idempotency-Key", "ep-7")
	retry := s.do(t, s.keys.mer1, http.MethodPost, "/webhook_endpoints", endpointBody, "Idempotency-Key", "ep-7")
	secret, _ := first.json(t)["secret"].(string)
	if first.status != 201 || retry.status != 201 || retry.json(t)["id"] != first.json(t)["id"] || retry.header.Get("Idempotent-Replayed") != "true" || first.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("retry: %d %s (replayed %q); want the first answer's endpoint %s replayed", retry.status, retry.body, retry.header.Get("Idempotent-Replayed"), first.body)
	}
	if !strings.HasPrefix(secret, "whsec_") || bytes.Contains(retry.body, []byte(secret)) || bytes.Contains(retry.body, []byte(`"secret"`)) {
		t.Errorf("the replay %s shows a secret; a secret is shown once (the first answer's: %q)", retry.body, secret)
	}
	assertProblem(t, s.do(t, s.keys.mer1, http.MethodPost, "/webhook_endpoints", endpointBody, "Idempotency-Key", "ep-8", "Idempotency-Key", "ep-9"),
		400, "/problems/invalid-idempotency-key")
	other := strings.Replace(endpointBody, "orders", "refunds", 1)
	assertProblem(t, s.do(t, s.keys.mer1, http.MethodPost, "/webhook_endpoints", other, "Idempotency-Key", "ep-7"), 422, "/problems/idempotency-key-reused")
	// Keys are per merchant: mer_2's ep-7 is its own.
	if res := s.do(t, s.keys.mer2, http.MethodPost, "/webhook_endpoints", endpointBody, "Idempotency-Key", "ep-7"); res.status != 201 || res.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("another merchant's same key: %d replayed %q", res.status, res.header.Get("Idempotent-Replayed"))
	}
	for _, bad := range []string{strings.Repeat("k", 256), "has space", "clé"} {
		assertProblem(t, s.do(t, s.keys.mer1, http.MethodPost, "/webhook_endpoints", endpointBody, "Idempotency-Key", bad), 400, "/problems/invalid-idempotency-key")
	}
	if n := len(s.svc.endpoints); n != 2 {
		t.Errorf("%d endpoints, want 2", n)
	}
}

// TestKeyInFlight: a twin of a request that still holds its key is
// answered 409 idempotency-key-in-flight with Retry-After, as the payments
// API answers one, on every route that takes a key.
func TestKeyInFlight(t *testing.T) {
	t.Parallel()
	s := newServer(t, logtest.Discard(), nil, webhooksapi.Config{})
	id := s.create(t, s.keys.mer1, endpointBody)["id"].(string)
	for path, body := range map[string]string{
		"/webhook_endpoints":                    endpointBody,
		"/webhook_endpoints/" + id + "/recover": `{"since": "2026-11-29T00:00:00Z"}`,
	} {
		res := s.do(t, s.keys.mer1, http.MethodPost, path, body, "Idempotency-Key", keyInFlight)
		assertProblem(t, res, http.StatusConflict, "/problems/idempotency-key-in-flight")
		if got := res.header.Get("Retry-After"); got != "1" {
			t.Errorf("POST %s in flight: Retry-After %q, want 1", path, got)
		}
	}
}

// TestStrictJSON: a body is read as the payments API reads one.
func TestStrictJSON(t *testing.T) {
	t.Parallel()
	s := newServer(t, logtest.Discard(), nil, webhooksapi.Config{})
	for body, typ := range map[string]string{
		``:   "/problems/malformed-body",
		`[]`: "/problems/malformed-body",
		`{"URL": "https://a.example", "enabled_events": ["*"]}`:                                    "/problems/malformed-body",
		`{"url": "https://a.example", "url": "https://b.example", "enabled_events": ["*"]}`:        "/problems/malformed-body",
		`{"url": "https://a.example", "enabled_events": "*"}`:                                      "/problems/malformed-body",
		`{"url": "https://a.example", "enabled_events": ["*"]} {}`:                                 "/problems/malformed-body",
		`{"url": "https://a.example", "enabled_events": ["*"], "secret": "whsec_mine"}`:            "/problems/malformed-body",
		`{"url": "` + strings.Repeat("a", httpserver.MaxBodyBytes) + `", "enabled_events": ["*"]}`: "/problems/body-too-large",
	} {
		status := 400
		if typ == "/problems/body-too-large" {
			status = 413
		}
		req := body
		if req == "" {
			req = " " // do sends no Content-Type for an empty body
		}
		assertProblem(t, s.do(t, s.keys.mer1, http.MethodPost, "/webhook_endpoints", req), status, typ)
	}
	assertProblem(t, s.do(t, s.keys.mer1, http.MethodPost, "/webhook_endpoints", endpointBody, "Content-Type", "text/plain"), 415, "/problems/unsupported-media-type")
	if len(s.svc.endpoints) != 0 {
		t.Errorf("%d endpoints created from bad bodies", len(s.svc.endpoints))
	}
}

// TestListPagesThroughEveryEndpoint: newest first, paged both ways, the
// merchant's own only; the platform lists every merchant's or one's.
func TestListPagesThroughEveryEndpoint(t *testing.T) {
	t.Parallel()
	s := newServer(t, logtest.Discard(), nil, webhooksapi.Config{})
	var ids []string
	for range 5 {
		ids = append(ids, s.create(t, s.keys.mer1, endpointBody)["id"].(string))
	}
	s.create(t, s.keys.mer2, endpointBody)
	slices.Reverse(ids) // newest first
	list := func(key, query string) ([]string, bool) {
		t.Helper()
		res := s.do(t, key, http.MethodGet, "/webhook_endpoints"+query, "")
		if res.status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", query, res.status, res.body)
		}
		var page struct {
			Object string `json:"object"`
			Data   []struct {
				ID string `json:"id"`
			} `json:"data"`
			HasMore bool `json:"has_more"`
		}
		if err := json.Unmarshal(res.body, &page); err != nil || page.Object != "list" {
			t.Fatalf("GET %s: %s (%v)", query, res.body, err)
		}
		var got []string
		for _, d := range page.Data {
			got = append(got, d.ID)
		}
		return got, page.HasMore
	}
	var all []string
	for cursor := ""; ; {
		page, more := list(s.keys.mer1, "?limit=2"+cursor)
		all = append(all, page...)
		if !more {
			break
		}
		cursor = "&starting_after=" + page[len(page)-1]
	}
	if !slices.Equal(all, ids) {
		t.Errorf("paged forward: %v, want %v", all, ids)
	}
	if back, more := list(s.keys.mer1, "?limit=2&ending_before="+ids[3]); !slices.Equal(back, ids[1:3]) || !more {
		t.Errorf("ending_before %s: %v more %t, want %v and more", ids[3], back, more, ids[1:3])
	}
	if got, _ := list(s.keys.platform, "?limit=100"); len(got) != 6 {
		t.Errorf("the platform's list: %v, want all 6", got)
	}
	if got, _ := list(s.keys.platform, "?merchant_id=mer_2"); len(got) != 1 {
		t.Errorf("the platform's list of mer_2: %v, want 1", got)
	}
	for query, typ := range map[string]string{
		"?limit=0":                   "/problems/invalid-query-parameter",
		"?limit=ten":                 "/problems/invalid-query-parameter",
		"?limit=101":                 "/problems/invalid-query-parameter",
		"?limt=2":                    "/problems/invalid-query-parameter",
		"?limit=2&limit=3":           "/problems/invalid-query-parameter",
		"?merchant_id=mer_2":         "/problems/invalid-query-parameter",
		"?starting_after=we_nothing": "/problems/unknown-cursor",
		"?starting_after=" + ids[0] + "&ending_before=" + ids[1]: "/problems/invalid-query-parameter",
	} {
		assertProblem(t, s.do(t, s.keys.mer1, http.MethodGet, "/webhook_endpoints"+query, ""), 400, typ)
	}
	// Another merchant's endpoint is no cursor of this list.
	other, _ := list(s.keys.mer2, "")
	assertProblem(t, s.do(t, s.keys.mer1, http.MethodGet, "/webhook_endpoints?starting_after="+other[0], ""), 400, "/problems/unknown-cursor")
}

// TestAttemptsAndRedeliver: the attempts list shows each attempt's answer,
// null where none came; redeliver schedules an event the endpoint was sent,
// and nothing of another merchant's.
func TestAttemptsAndRedeliver(t *testing.T) {
	t.Parallel()
	s := newServer(t, logtest.Discard(), nil, webhooksapi.Config{})
	id := s.create(t, s.keys.mer1, endpointBody)["id"].(string)
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	s.svc.attempted(id,
		webhooks.Attempt{ID: "wa_1", EndpointID: id, EventID: "evt_1", EventType: "payment.created", AttemptedAt: t0,
			Latency: 15 * time.Second, Error: "timeout after 15s", Outcome: webhooks.Failed},
		webhooks.Attempt{ID: "wa_2", EndpointID: id, EventID: "evt_1", EventType: "payment.created", AttemptedAt: t0.Add(5 * time.Second),
			StatusCode: 204, Latency: 42 * time.Millisecond, Outcome: webhooks.Delivered},
	)
	res := s.do(t, s.keys.mer1, http.MethodGet, "/webhook_endpoints/"+id+"/deliveries", "")
	if res.status != http.StatusOK {
		t.Fatalf("deliveries: %d %s", res.status, res.body)
	}
	var page struct {
		Data []map[string]any `json:"data"`
	}
	if err := json.Unmarshal(res.body, &page); err != nil || len(page.Data) != 2 {
		t.Fatalf("deliveries: %s (%v)", res.body, err)
	}
	newest, oldest := page.Data[0], page.Data[1]
	if newest["id"] != "wa_2" || newest["status_code"] != 204.0 || newest["error"] != nil || newest["latency_ms"] != 42.0 || newest["outcome"] != "delivered" {
		t.Errorf("the delivered attempt: %v", newest)
	}
	if oldest["status_code"] != nil || oldest["error"] != "timeout after 15s" || oldest["outcome"] != "failed" || oldest["object"] != "webhook_attempt" {
		t.Errorf("the timed-out attempt: %v", oldest)
	}
	if r := s.do(t, s.keys.mer1, http.MethodGet, "/webhook_endpoints/"+id+"/deliveries?limit=1&starting_after=wa_2", ""); !bytes.Contains(r.body, []byte(`"wa_1"`)) || !bytes.Contains(r.body, []byte(`"has_more":false`)) {
		t.Errorf("the second page: %s", r.body)
	}
	assertProblem(t, s.do(t, s.keys.mer1, http.MethodGet, "/webhook_endpoints/"+id+"/deliveries?merchant_id=mer_1", ""), 400, "/problems/invalid-query-parameter")

	if r := s.do(t, s.keys.mer1, http.MethodPost, "/webhook_endpoints/"+id+"/deliveries/evt_1/redeliver", ""); r.status != http.StatusAccepted {
		t.Errorf("redeliver: %d %s", r.status, r.body)
	}
	if len(s.svc.redelivered) != 1 || s.svc.redelivered[0].EventID != "evt_1" || s.svc.redelivered[0].EndpointID != id {
		t.Errorf("redelivered %+v", s.svc.redelivered)
	}
	assertProblem(t, s.do(t, s.keys.mer1, http.MethodPost, "/webhook_endpoints/"+id+"/deliveries/evt_9/redeliver", ""), 404, "/problems/event-not-found")
	assertProblem(t, s.do(t, s.keys.mer2, http.MethodPost, "/webhook_endpoints/"+id+"/deliveries/evt_1/redeliver", ""), 404, "/problems/endpoint-not-found")
	assertProblem(t, s.do(t, s.keys.mer2, http.MethodGet, "/webhook_endpoints/"+id+"/deliveries", ""), 404, "/problems/endpoint-not-found")
	if len(s.svc.redelivered) != 1 {
		t.Errorf("another merchant's redeliver reached the use case: %+v", s.svc.redelivered)
	}
}

// TestRateLimitPerKey: past its limit a key is answered 429; another key is
// not held back.
func TestRateLimitPerKey(t *testing.T) {
	t.Parallel()
	s := newServer(t, logtest.Discard(), httpserver.NewMetrics(prometheus.NewRegistry()), webhooksapi.Config{RateLimit: 2})
	var limited response
	for range 10 {
		if res := s.do(t, s.keys.mer1, http.MethodGet, "/webhook_endpoints", ""); res.status == http.StatusTooManyRequests {
			limited = res
			break
		}
	}
	assertProblem(t, limited, 429, "/problems/rate-limited")
	if res := s.do(t, s.keys.mer2, http.MethodGet, "/webhook_endpoints", ""); res.status != http.StatusOK {
		t.Errorf("another key right after: %d, want 200", res.status)
	}
}

// TestKeysAndSecretsNeverReachTheLogs: whatever is answered — created,
// refused, failed — the log holds neither a key nor a signing secret.
func TestKeysAndSecretsNeverReachTheLogs(t *testing.T) {
	t.Parallel()
	logs := &logtest.Buffer{}
	s := newServer(t, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), nil, webhooksapi.Config{})
	e := s.create(t, s.keys.mer1, endpointBody)
	rot := s.do(t, s.keys.mer1, http.MethodPost, "/webhook_endpoints/"+e["id"].(string)+"/rotate_secret", "").json(t)
	s.do(t, s.keys.unknown, http.MethodGet, "/webhook_endpoints", "")
	s.auth.setDown(true)
	s.do(t, s.keys.mer2, http.MethodGet, "/webhook_endpoints", "")
	s.auth.setDown(false)
	if logs.Len() == 0 {
		t.Fatal("nothing logged: the test is not looking where it should")
	}
	for name, secret := range map[string]string{
		"mer_1's key": s.keys.mer1, "mer_2's key": s.keys.mer2, "the unknown key": s.keys.unknown,
		"the secret": e["secret"].(string), "the rotated secret": rot["secret"].(string),
	} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log holds %s", name)
		}
	}
}

// TestCreateOverTheMerchantsCap: past its endpoints' cap a merchant is
// answered 409 endpoint-limit-reached.
func TestCreateOverTheMerchantsCap(t *testing.T) {
	t.Parallel()
	s := newServer(t, logtest.Discard(), nil, webhooksapi.Config{})
	s.svc.maxEndpoints = 1
	s.create(t, s.keys.mer1, endpointBody)
	assertProblem(t, s.do(t, s.keys.mer1, http.MethodPost, "/webhook_endpoints", endpointBody), 409, "/problems/endpoint-limit-reached")
}

// TestRecover: the body is read and checked, the use case's answer
// written, a replay marked, and its refusals answered as problems.
func TestRecover(t *testing.T) {
	t.Parallel()
	s := newServer(t, logtest.Discard(), nil, webhooksapi.Config{})
	id := s.create(t, s.keys.mer1, endpointBody)["id"].(string)
	s.svc.attempted(id, webhooks.Attempt{ID: "wa_1", EndpointID: id, EventID: "evt_1", Outcome: webhooks.Failed, Error: "answered 500"})
	path := "/webhook_endpoints/" + id + "/recover"
	res := s.do(t, s.keys.mer1, http.MethodPost, path, `{"since": "2026-11-29T00:00:00Z", "limit": 10}`, "Idempotency-Key", "rec-1")
	if res.status != http.StatusAccepted {
		t.Fatalf("recover: %d %s", res.status, res.body)
	}
	body := res.json(t)
	if body["object"] != "webhook_recovery" || body["endpoint_id"] != id || body["queued"] != 1.0 || body["has_more"] != false || body["last_event_id"] != "evt_1" {
		t.Errorf("recover answered %s", res.body)
	}
	r := s.svc.recovered[0]
	if !r.Since.Equal(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)) || r.Limit != 10 || r.IdempotencyKey != "rec-1" || r.EndpointID != id {
		t.Errorf("the use case was asked %+v", r)
	}
	again := s.do(t, s.keys.mer1, http.MethodPost, path, `{"since": "2026-11-29T00:00:00Z", "limit": 10}`, "Idempotency-Key", "rec-1")
	if again.status != http.StatusAccepted || again.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.body, res.body) {
		t.Errorf("a retry: %d %s, replayed %q; want the first answer", again.status, again.body, again.header.Get("Idempotent-Replayed"))
	}
	for body, typ := range map[string]string{
		`{}`:                     "/problems/validation-failed",
		`{"since": "yesterday"}`: "/problems/validation-failed",
		`{"since": "2026-11-29T00:00:00Z", "limit": 0}`:    "/problems/validation-failed",
		`{"since": "2026-11-29T00:00:00Z", "limit": 1001}`: "/problems/validation-failed",
		`{"since": "2099-01-01T00:00:00Z"}`:                "/problems/invalid-recovery",
	} {
		assertProblem(t, s.do(t, s.keys.mer1, http.MethodPost, path, body), 422, typ)
	}
	assertProblem(t, s.do(t, s.keys.mer1, http.MethodPost, path, `{"since": "2026-11-29T00:00:00Z", "until": "now"}`), 400, "/problems/malformed-body")
	assertProblem(t, s.do(t, s.keys.mer2, http.MethodPost, path, `{"since": "2026-11-29T00:00:00Z"}`), 404, "/problems/endpoint-not-found")
	s.do(t, s.keys.mer1, http.MethodDelete, "/webhook_endpoints/"+id, "")
	assertProblem(t, s.do(t, s.keys.mer1, http.MethodPost, path, `{"since": "2026-11-29T00:00:00Z"}`), 409, "/problems/endpoint-deleted")
	if n := len(s.svc.recovered); n != 1 {
		t.Errorf("%d recoveries reached the use case, want the one valid", n)
	}
}

// TestRateLimitIsCountedBeforeTheKeyIsVerified: a request over the limit
// is answered 429 without asking the payments service about its key, so it
// spends none of the key's budget there; a 429 of the payments service's
// is answered 429 too, not 503.
func TestRateLimitIsCountedBeforeTheKeyIsVerified(t *testing.T) {
	t.Parallel()
	s := newServer(t, logtest.Discard(), httpserver.NewMetrics(prometheus.NewRegistry()), webhooksapi.Config{RateLimit: 2})
	limited, answered := 0, 0
	for range 20 {
		switch res := s.do(t, s.keys.mer1, http.MethodGet, "/webhook_endpoints", ""); res.status {
		case http.StatusTooManyRequests:
			limited++
			if res.header.Get("Retry-After") == "" {
				t.Error("a 429 without Retry-After")
			}
		case http.StatusOK:
			answered++
		}
	}
	if limited == 0 {
		t.Fatal("20 requests at a limit of 2 a second: none limited")
	}
	if calls := s.auth.callsFor(s.keys.mer1); calls != answered {
		t.Errorf("the payments service was asked %d times for %d requests answered (%d limited); want only the answered ones", calls, answered, limited)
	}
	s.auth.setRateLimited(true)
	res := s.do(t, s.keys.mer2, http.MethodGet, "/webhook_endpoints", "")
	assertProblem(t, res, 429, "/problems/rate-limited")
	if res.header.Get("Retry-After") == "" {
		t.Error("the payments service's 429 answered without Retry-After")
	}
}

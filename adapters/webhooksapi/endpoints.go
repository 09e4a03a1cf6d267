package webhooksapi

import (
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/payments-outbox/payments-outbox/adapters/httpserver"
	"github.com/payments-outbox/payments-outbox/application/webhooks"
)

// IdempotencyHeader carries the client's idempotency key; ReplayedHeader
// marks a response replayed for a retry: the payments API's headers.
const (
	IdempotencyHeader = httpserver.IdempotencyHeader
	ReplayedHeader    = "Idempotent-Replayed"
)

// The bounds of what a client may send where the use cases take it as it
// is: an id in a path longer than any id is none, answered as unknown
// without asking the store.
const (
	maxIDLen = 255
	// maxExpireIn bounds expire_current_in_seconds: an old secret that
	// keeps signing for longer is a rotation in name only.
	maxExpireIn = 7 * 24 * time.Hour
)

type createRequest struct {
	URL           string   `json:"url"`
	EnabledEvents []string `json:"enabled_events"`
	Description   string   `json:"description"`
	// MerchantID is the platform's choice; a merchant's key leaves it out
	// or names itself.
	MerchantID string `json:"merchant_id"`
}

// rotateRequest's field is optional: left out, the configured grace.
type rotateRequest struct {
	ExpireCurrentInSeconds *int64 `json:"expire_current_in_seconds"`
}

// endpointResponse is the wire shape of an endpoint. Secret is set only in
// the answers of create and rotate_secret, the one time it is shown: never
// in a replay.
type endpointResponse struct {
	Object         string    `json:"object"`
	ID             string    `json:"id"`
	MerchantID     string    `json:"merchant_id"`
	URL            string    `json:"url"`
	Description    string    `json:"description"`
	EnabledEvents  []string  `json:"enabled_events"`
	Status         string    `json:"status"`
	DisabledReason *string   `json:"disabled_reason"`
	CreatedAt      time.Time `json:"created_at"`
	Deleted        bool      `json:"deleted,omitempty"`
	Secret         string    `json:"secret,omitempty"`
}

// attemptResponse is the wire shape of one attempt to deliver an event.
type attemptResponse struct {
	Object      string    `json:"object"`
	ID          string    `json:"id"`
	EventID     string    `json:"event_id"`
	EventType   string    `json:"event_type"`
	AttemptedAt time.Time `json:"attempted_at"`
	StatusCode  *int      `json:"status_code"`
	LatencyMS   int64     `json:"latency_ms"`
	Error       *string   `json:"error"`
	Outcome     string    `json:"outcome"`
}

// listResponse is a page of a list, as GET /payments answers one: the items
// in data, newest first, and has_more, whether the list goes on past them.
type listResponse[T any] struct {
	Object  string `json:"object"`
	Data    []T    `json:"data"`
	HasMore bool   `json:"has_more"`
}

func toEndpoint(e webhooks.Endpoint) endpointResponse {
	events := e.EnabledEvents
	if events == nil {
		events = []string{}
	}
	return endpointResponse{
		Object: "webhook_endpoint", ID: e.ID, MerchantID: e.MerchantID, URL: e.URL, Description: e.Description,
		EnabledEvents: events, Status: string(e.Status), DisabledReason: stringOrNil(e.DisabledReason),
		CreatedAt: e.CreatedAt, Deleted: !e.DeletedAt.IsZero(),
	}
}

func toAttempt(at webhooks.Attempt) attemptResponse {
	out := attemptResponse{
		Object: "webhook_attempt", ID: at.ID, EventID: at.EventID, EventType: at.EventType, AttemptedAt: at.AttemptedAt,
		LatencyMS: at.Latency.Milliseconds(), Error: stringOrNil(at.Error), Outcome: string(at.Outcome),
	}
	if at.StatusCode != 0 {
		code := at.StatusCode
		out.StatusCode = &code
	}
	return out
}

func stringOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (a *api) createEndpoint(w http.ResponseWriter, r *http.Request) {
	var req createRequest
	if err := httpserver.DecodeJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	key, err := httpserver.IdempotencyKey(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out, err := a.svc.Create(r.Context(), webhooks.CreateEndpoint{
		Principal: httpserver.Principal(r), MerchantID: req.MerchantID, URL: req.URL, Description: req.Description,
		EnabledEvents: req.EnabledEvents, IdempotencyKey: key,
	})
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/webhook_endpoints/"+out.Endpoint.ID)
	writeCreated(w, http.StatusCreated, out)
}

func (a *api) listEndpoints(w http.ResponseWriter, r *http.Request) {
	query, err := httpserver.ListQuery(r, "limit", "starting_after", "ending_before", "merchant_id")
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	l := webhooks.ListEndpoints{
		Principal: httpserver.Principal(r), MerchantID: query.Get("merchant_id"),
		StartingAfter: query.Get("starting_after"), EndingBefore: query.Get("ending_before"),
	}
	if l.Limit, err = httpserver.ListLimit(query.Get("limit"), webhooks.MaxListLimit); err != nil {
		a.writeError(w, r, err)
		return
	}
	page, err := a.svc.List(r.Context(), l)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	resp := listResponse[endpointResponse]{Object: "list", Data: make([]endpointResponse, 0, len(page.Endpoints)), HasMore: page.HasMore}
	for _, e := range page.Endpoints {
		resp.Data = append(resp.Data, toEndpoint(e))
	}
	httpserver.WriteJSON(w, http.StatusOK, resp)
}

func (a *api) getEndpoint(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "id", webhooks.ErrEndpointNotFound)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	e, err := a.svc.Get(r.Context(), httpserver.Principal(r), id)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	httpserver.WriteJSON(w, http.StatusOK, toEndpoint(e))
}

func (a *api) deleteEndpoint(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "id", webhooks.ErrEndpointNotFound)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	e, err := a.svc.Delete(r.Context(), httpserver.Principal(r), id)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	resp := toEndpoint(e)
	resp.Deleted = true // whatever the store's clock wrote, this answer is of a deletion
	httpserver.WriteJSON(w, http.StatusOK, resp)
}

func (a *api) rotateSecret(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "id", webhooks.ErrEndpointNotFound)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	var req rotateRequest
	if err := httpserver.DecodeOptionalJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	var expireIn time.Duration // zero: the configured grace
	if s := req.ExpireCurrentInSeconds; s != nil {
		if *s < 1 || *s > int64(maxExpireIn/time.Second) {
			a.writeError(w, r, invalidField("expire_current_in_seconds",
				fmt.Sprintf("must be an integer from 1 to %d (seconds), or left out for the service's grace period", int64(maxExpireIn/time.Second))))
			return
		}
		expireIn = time.Duration(*s) * time.Second
	}
	out, err := a.svc.RotateSecret(r.Context(), webhooks.RotateSecret{Principal: httpserver.Principal(r), EndpointID: id, ExpireCurrentIn: expireIn})
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeCreated(w, http.StatusOK, out)
}

func (a *api) listAttempts(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "id", webhooks.ErrEndpointNotFound)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	query, err := httpserver.ListQuery(r, "limit", "starting_after", "ending_before")
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	l := webhooks.ListAttempts{
		Principal: httpserver.Principal(r), EndpointID: id,
		StartingAfter: query.Get("starting_after"), EndingBefore: query.Get("ending_before"),
	}
	if l.Limit, err = httpserver.ListLimit(query.Get("limit"), webhooks.MaxListLimit); err != nil {
		a.writeError(w, r, err)
		return
	}
	page, err := a.svc.Attempts(r.Context(), l)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	resp := listResponse[attemptResponse]{Object: "list", Data: make([]attemptResponse, 0, len(page.Attempts)), HasMore: page.HasMore}
	for _, at := range page.Attempts {
		resp.Data = append(resp.Data, toAttempt(at))
	}
	httpserver.WriteJSON(w, http.StatusOK, resp)
}

func (a *api) redeliver(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "id", webhooks.ErrEndpointNotFound)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	event, err := pathID(r, "event_id", webhooks.ErrEventNotFound)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if err := a.svc.Redeliver(r.Context(), webhooks.Redeliver{Principal: httpserver.Principal(r), EndpointID: id, EventID: event}); err != nil {
		a.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// writeCreated answers with the endpoint and its new secret, the one time
// it is shown; a replay gets the same status, the endpoint as it is now
// and no secret, plus Idempotent-Replayed: true.
func writeCreated(w http.ResponseWriter, status int, c webhooks.Created) {
	if c.Replayed {
		w.Header().Set(ReplayedHeader, "true")
	}
	resp := toEndpoint(c.Endpoint)
	resp.Secret = string(c.Secret)
	httpserver.WriteJSON(w, status, resp)
}

// pathID is the path parameter name, or notFound when it is longer than
// any id: it names nothing, and the store is not asked.
func pathID(r *http.Request, name string, notFound error) (string, error) {
	id := chi.URLParam(r, name)
	if id == "" || len(id) > maxIDLen {
		return "", fmt.Errorf("%w: %s of %d bytes", notFound, name, len(id))
	}
	return id, nil
}

func invalidField(field, detail string) error {
	p := httpserver.NewProblem(http.StatusUnprocessableEntity, "validation-failed", "the request has invalid fields")
	p.Errors = []httpserver.FieldError{{Field: field, Detail: detail}}
	return &httpserver.RequestError{Problem: p}
}

// recoverRequest is POST /webhook_endpoints/{id}/recover's body: since is
// required, the rest optional.
type recoverRequest struct {
	Since         string `json:"since"`
	Limit         *int   `json:"limit"`
	StartingAfter string `json:"starting_after"`
}

// recoveryResponse is what a recovery queued.
type recoveryResponse struct {
	Object      string  `json:"object"`
	EndpointID  string  `json:"endpoint_id"`
	Queued      int     `json:"queued"`
	HasMore     bool    `json:"has_more"`
	LastEventID *string `json:"last_event_id"`
}

func (a *api) recoverEndpoint(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "id", webhooks.ErrEndpointNotFound)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	var req recoverRequest
	if err := httpserver.DecodeJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	since, err := time.Parse(time.RFC3339Nano, req.Since)
	if err != nil {
		a.writeError(w, r, invalidField("since", "must be an RFC 3339 time, such as 2026-11-29T12:00:00Z"))
		return
	}
	limit := 0 // the use case's default
	if req.Limit != nil {
		if limit = *req.Limit; limit < 1 || limit > webhooks.MaxRecoverLimit {
			a.writeError(w, r, invalidField("limit", fmt.Sprintf("must be an integer from 1 to %d, or left out for %d", webhooks.MaxRecoverLimit, webhooks.DefaultRecoverLimit)))
			return
		}
	}
	key, err := httpserver.IdempotencyKey(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out, err := a.svc.Recover(r.Context(), webhooks.Recover{
		Principal: httpserver.Principal(r), EndpointID: id, Since: since, Limit: limit,
		StartingAfter: req.StartingAfter, IdempotencyKey: key,
	})
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if out.Replayed {
		w.Header().Set(ReplayedHeader, "true")
	}
	httpserver.WriteJSON(w, http.StatusAccepted, recoveryResponse{
		Object: "webhook_recovery", EndpointID: id, Queued: out.Queued, HasMore: out.HasMore, LastEventID: stringOrNil(out.Last),
	})
}

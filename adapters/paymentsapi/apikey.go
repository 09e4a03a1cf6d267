package paymentsapi

import (
	"net/http"

	"github.com/payments-outbox/payments-outbox/adapters/httpserver"
)

// apiKeyResponse is the key presenting a request, as GET /api_key answers
// it: whom the key acts as, and nothing of its secret. Another service that
// takes the payments API keys (the webhooks service, adapters/apikeyclient)
// asks this route with the key it was given, so the key is checked by this
// service's Authenticator and revoked within its cache bound
// (access.CacheTTL) on the payments and the webhooks service alike.
type apiKeyResponse struct {
	Object     string  `json:"object"`
	ID         string  `json:"id"`
	MerchantID *string `json:"merchant_id"` // null for the platform's key
	Platform   bool    `json:"platform"`
}

// getAPIKey answers the request's own key: the middleware has verified it,
// so there is nothing left to fail.
func (a *api) getAPIKey(w http.ResponseWriter, r *http.Request) {
	p := principal(r)
	resp := apiKeyResponse{Object: "api_key", ID: p.KeyID(), Platform: p.IsPlatform()}
	if m := p.Merchant(); m != "" {
		resp.MerchantID = &m
	}
	httpserver.WriteJSON(w, http.StatusOK, resp)
}

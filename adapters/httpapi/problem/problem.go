// Package problem writes RFC 9457 problem details (application/problem+json),
// the one error body both services' HTTP APIs answer with.
package problem

import (
	"encoding/json"
	"net/http"
)

// ContentType is the media type of a problem details body.
const ContentType = "application/problem+json"

// Details is an RFC 9457 problem details object. Type is a relative URI
// ("/problems/<slug>") that names the kind of error for clients to match on.
type Details struct {
	Type   string       `json:"type"`
	Title  string       `json:"title"`
	Status int          `json:"status"`
	Detail string       `json:"detail,omitempty"`
	Errors []FieldError `json:"errors,omitempty"`
}

// FieldError names one invalid field of a request body, so a client can show
// every problem at once rather than one per round trip.
type FieldError struct {
	Field  string `json:"field"`
	Detail string `json:"detail"`
}

// New returns the problem of the given status and slug with the standard
// status text as title.
func New(status int, slug, detail string) Details {
	return Details{Type: "/problems/" + slug, Title: http.StatusText(status), Status: status, Detail: detail}
}

// Write sends d as the response.
func Write(w http.ResponseWriter, d Details) {
	w.Header().Set("Content-Type", ContentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(d.Status)
	_ = json.NewEncoder(w).Encode(d)
}

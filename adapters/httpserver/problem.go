package httpserver

import (
	"encoding/json"
	"net/http"
)

// ProblemContentType is the media type of a problem details body, the one
// error body every service's HTTP API answers with.
const ProblemContentType = "application/problem+json"

// Problem is an RFC 9457 problem details object. Type is a relative URI
// ("/problems/<slug>") that names the kind of error for clients to match on.
type Problem struct {
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

// NewProblem returns the problem of the given status and slug with the
// standard status text as title.
func NewProblem(status int, slug, detail string) Problem {
	return Problem{Type: "/problems/" + slug, Title: http.StatusText(status), Status: status, Detail: detail}
}

// WriteProblem sends p as the response.
func WriteProblem(w http.ResponseWriter, p Problem) {
	w.Header().Set("Content-Type", ProblemContentType)
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// WriteJSON sends v as a JSON body with the given status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

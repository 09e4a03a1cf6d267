package paymentsapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/payments-outbox/payments-outbox/domain/payment"
)

// requestError is a request the API refuses before it reaches the
// application: its status, problem slug and a detail safe to show.
type requestError struct {
	status int
	slug   string
	detail string
}

func (e *requestError) Error() string { return e.detail }

// decode reads one JSON object of at most MaxBodyBytes into v, refusing other
// content types, unknown fields and trailing data: a typo in a field name must
// fail loudly, not be ignored.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return &requestError{http.StatusUnsupportedMediaType, "unsupported-media-type", "the body must be application/json"}
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return decodeError(err)
		}
		return &requestError{http.StatusBadRequest, "malformed-body", "the body must hold exactly one JSON object"}
	}
	return nil
}

func decodeError(err error) error {
	var (
		tooBig  *http.MaxBytesError
		syntax  *json.SyntaxError
		typeErr *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &tooBig):
		return &requestError{http.StatusRequestEntityTooLarge, "body-too-large", fmt.Sprintf("the body must be at most %d bytes", MaxBodyBytes)}
	case errors.Is(err, io.EOF):
		return &requestError{http.StatusBadRequest, "malformed-body", "the body is empty"}
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF):
		return &requestError{http.StatusBadRequest, "malformed-body", "the body is not valid JSON"}
	case errors.As(err, &typeErr):
		return &requestError{http.StatusBadRequest, "malformed-body", fmt.Sprintf("field %q must be a JSON %s", typeErr.Field, typeErr.Type.Kind())}
	default:
		// Unknown fields and other decoder complaints; their text names the
		// field and holds nothing internal.
		return &requestError{http.StatusBadRequest, "malformed-body", err.Error()}
	}
}

// parseAmount reads an amount that must be a JSON integer of minor units: no
// fraction, no exponent, no string, within int64. Floats never touch money.
func parseAmount(raw json.RawMessage) (int64, error) {
	invalid := func(detail string) error {
		return &payment.ValidationError{Problems: []payment.FieldProblem{{Field: "amount", Detail: detail}}}
	}
	s := string(bytes.TrimSpace(raw))
	if s == "" || s == "null" {
		return 0, invalid("is required")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if errors.Is(err, strconv.ErrRange) {
		return 0, invalid("is too large")
	}
	if err != nil {
		return 0, invalid("must be an integer number of minor units (e.g. 1050 for 10.50)")
	}
	return n, nil
}

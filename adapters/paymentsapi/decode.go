package paymentsapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

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

// decode reads one JSON object of at most MaxBodyBytes into v, refusing
// other content types and trailing data: what a client sends must mean one
// thing, to the API and to anything else that reads it, or fail loudly. So
// it decodes with encoding/json v2's semantics (go-json-experiment/json),
// which are strict where v1 guessed: a field name matches exactly, not in
// another case ("AMOUNT" is not amount); a name given twice is refused, not
// won by the last; invalid UTF-8 is refused, not replaced. An unknown field
// is refused too (RejectUnknownMembers), so a typo cannot go unnoticed.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return &requestError{http.StatusUnsupportedMediaType, "unsupported-media-type", "the body must be application/json"}
	}
	dec := decoders.Get().(*jsontext.Decoder)
	defer func() {
		dec.Reset(http.NoBody) // forget the request's body
		decoders.Put(dec)
	}()
	dec.Reset(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if dec.PeekKind() != '{' {
		if _, err := dec.ReadToken(); err != nil {
			return decodeError(err)
		}
		return malformed("the body must be a JSON object")
	}
	if err := json.UnmarshalDecode(dec, v, json.RejectUnknownMembers(true)); err != nil {
		return decodeError(err)
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return decodeError(err)
		}
		return malformed("the body must hold exactly one JSON object")
	}
	return nil
}

// decodeOptional is decode for a body that may be left out: a request with
// no body at all (Content-Length: 0, or none and no Transfer-Encoding)
// leaves v at its zero value, the defaults; any body is decoded as decode
// does.
func decodeOptional(w http.ResponseWriter, r *http.Request, v any) error {
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	return decode(w, r, v)
}

// decoders are reused, as json.UnmarshalRead reuses its own: each holds a
// 4 KiB cache of the short strings it decoded, which a new decoder per
// request would allocate.
var decoders = sync.Pool{New: func() any { return jsontext.NewDecoder(http.NoBody) }}

func malformed(detail string) error {
	return &requestError{http.StatusBadRequest, "malformed-body", detail}
}

func decodeError(err error) error {
	var (
		tooBig   *http.MaxBytesError
		syntax   *jsontext.SyntacticError
		semantic *json.SemanticError
	)
	switch {
	case errors.As(err, &tooBig):
		return &requestError{http.StatusRequestEntityTooLarge, "body-too-large", fmt.Sprintf("the body must be at most %d bytes", MaxBodyBytes)}
	case errors.Is(err, io.EOF):
		return malformed("the body is empty")
	case errors.Is(err, jsontext.ErrDuplicateName) && errors.As(err, &syntax):
		return malformed(fmt.Sprintf("the body has the field %s twice", field(syntax.JSONPointer)))
	case errors.Is(err, json.ErrUnknownName) && errors.As(err, &semantic):
		return malformed(fmt.Sprintf("the body has a field this API does not know: %s (field names are case-sensitive)", field(semantic.JSONPointer)))
	case errors.As(err, &syntax):
		// Invalid UTF-8, a truncated body, a stray character: the
		// decoder's words, which hold nothing but where in the body.
		detail := "the body is not valid JSON: " + syntax.Err.Error()
		if syntax.JSONPointer != "" {
			detail += " in " + field(syntax.JSONPointer)
		}
		return malformed(detail)
	case errors.As(err, &semantic) && semantic.JSONPointer != "" && semantic.GoType != nil:
		return malformed(fmt.Sprintf("field %s must be a JSON %s", field(semantic.JSONPointer), semantic.GoType.Kind()))
	default:
		return malformed("the body could not be read as the request")
	}
}

// field names the body's field at p for a detail, quoted, and cut short:
// the client sent it, so it could be 64 KiB long.
func field(p jsontext.Pointer) string {
	name := p.LastToken()
	if len(name) > 64 {
		name = name[:64] + "…"
	}
	return strconv.Quote(name)
}

// parseAmount reads an amount that must be a JSON integer of minor units: no
// fraction, no exponent, no string, within int64. Floats never touch money.
func parseAmount(raw jsontext.Value) (int64, error) {
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

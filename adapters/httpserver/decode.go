package httpserver

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// MaxBodyBytes is the largest request body DecodeJSON accepts: the APIs take
// small JSON objects, and a body is read whole before it is decoded.
const MaxBodyBytes = 64 << 10

// RequestError is a request an API refuses before it reaches the
// application — a body or a query that cannot be read as the request — with
// the problem it is answered: WriteError writes it as it is. Its detail is
// safe to show: it names a field or a parameter, never echoes a value whole.
type RequestError struct{ Problem Problem }

func (e *RequestError) Error() string { return e.Problem.Detail }

// DecodeJSON reads one JSON object of at most MaxBodyBytes into v, refusing
// other content types and trailing data: what a client sends must mean one
// thing, to the API and to anything else that reads it, or fail loudly. So
// it decodes with encoding/json v2's semantics (go-json-experiment/json),
// which are strict where v1 guessed: a field name matches exactly, not in
// another case ("AMOUNT" is not amount); a name given twice is refused, not
// won by the last; invalid UTF-8 is refused, not replaced. An unknown field
// is refused too (RejectUnknownMembers), so a typo cannot go unnoticed.
func DecodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return &RequestError{NewProblem(http.StatusUnsupportedMediaType, "unsupported-media-type", "the body must be application/json")}
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

// DecodeOptionalJSON is DecodeJSON for a body that may be left out: a
// request with no body at all (Content-Length: 0, or none and no
// Transfer-Encoding) leaves v at its zero value, the defaults; any body is
// decoded as DecodeJSON does.
func DecodeOptionalJSON(w http.ResponseWriter, r *http.Request, v any) error {
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	return DecodeJSON(w, r, v)
}

// decoders are reused, as json.UnmarshalRead reuses its own: each holds a
// 4 KiB cache of the short strings it decoded, which a new decoder per
// request would allocate.
var decoders = sync.Pool{New: func() any { return jsontext.NewDecoder(http.NoBody) }}

func malformed(detail string) error {
	return &RequestError{NewProblem(http.StatusBadRequest, "malformed-body", detail)}
}

func decodeError(err error) error {
	var (
		tooBig   *http.MaxBytesError
		syntax   *jsontext.SyntacticError
		semantic *json.SemanticError
	)
	switch {
	case errors.As(err, &tooBig):
		return &RequestError{NewProblem(http.StatusRequestEntityTooLarge, "body-too-large", fmt.Sprintf("the body must be at most %d bytes", MaxBodyBytes))}
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
	return strconv.Quote(Cut(p.LastToken()))
}

// Cut shortens what a client sent for a problem's detail: it could be 64
// KiB long.
func Cut(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// InvalidParameter is the refusal of a query parameter of a list:
// /problems/invalid-query-parameter, with detail saying which and why.
func InvalidParameter(detail string) error {
	return &RequestError{NewProblem(http.StatusBadRequest, "invalid-query-parameter", detail)}
}

// ListQuery returns the query of a list request whose parameters are all
// among known, each given once with a value, or an InvalidParameter: a
// misspelt filter must not quietly list everything.
func ListQuery(r *http.Request, known ...string) (url.Values, error) {
	query := r.URL.Query()
	for name, values := range query {
		switch {
		case !slices.Contains(known, name):
			return nil, InvalidParameter(fmt.Sprintf("%s is not a parameter of this list", strconv.Quote(Cut(name))))
		case len(values) != 1 || values[0] == "":
			return nil, InvalidParameter(name + " must be given once, with a value")
		}
	}
	return query, nil
}

// ListLimit reads a list's limit, a positive integer; "" is 0, the use
// case's default, and the use case checks it is at most max, which the
// detail names. A client that sends 0 asked for an empty page, which is
// refused as the range refuses it.
func ListLimit(s string, max int) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, InvalidParameter(fmt.Sprintf("limit must be an integer from 1 to %d", max))
	}
	return n, nil
}

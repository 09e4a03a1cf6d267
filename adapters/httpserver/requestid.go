package httpserver

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/google/uuid"
)

// RequestIDHeader carries a request's id: the client's, when it sent one
// that is safe to keep (validRequestID), else one the service made. It is
// answered on every response and logged with every line about the request,
// so a client holding a response can find the request's log lines.
const RequestIDHeader = "X-Request-Id"

// maxRequestIDLen bounds a client's id: it is answered and written to every
// log line of the request, so an unbounded one would let a client multiply
// its bytes into the logs (Go reads headers up to 1 MB).
const maxRequestIDLen = 64

type requestIDKey struct{}

// RequestID returns the id of the request ctx belongs to, or "" outside a
// request.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// requestID gives every request its id, in its context and in the answer's
// X-Request-Id. A client's id is kept only if it is one header of 1 to 64
// letters, digits, '.', '_' and '-': anything else could hold a log
// injection or a megabyte, and is replaced rather than refused, since the
// request itself is fine. A made id is a UUIDv7: random, sortable by time,
// and it names neither the host nor how many requests came before it.
func requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var id string
		if vs := r.Header.Values(RequestIDHeader); len(vs) == 1 && validRequestID(vs[0]) {
			id = vs[0]
		} else {
			id = uuid.Must(uuid.NewV7()).String() // crypto/rand does not fail
		}
		w.Header().Set(RequestIDHeader, id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id)))
	})
}

func validRequestID(s string) bool {
	if s == "" || len(s) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// LogRequestIDs returns h with request_id added to every record logged with
// a request's context (InfoContext(ctx, …) and the like), so that every
// line about a request — the access log, a 500's cause, and the
// application's own lines — is found under the id its answer carried.
// Install it where a service builds its logger; the routers and WriteError
// add it themselves when the logger they are given lacks it. A record logged
// after WithGroup carries the id inside that group.
func LogRequestIDs(h slog.Handler) slog.Handler {
	if _, ok := h.(requestIDHandler); ok {
		return h
	}
	return requestIDHandler{h}
}

// requestLogger is log with LogRequestIDs, log itself if it has it already.
func requestLogger(log *slog.Logger) *slog.Logger {
	if _, ok := log.Handler().(requestIDHandler); ok {
		return log
	}
	return slog.New(requestIDHandler{log.Handler()})
}

type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if ctx != nil {
		if id := RequestID(ctx); id != "" {
			r.AddAttrs(slog.String("request_id", id))
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(attrs)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}

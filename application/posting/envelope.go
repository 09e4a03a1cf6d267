package posting

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

var (
	// ErrMalformed means the message is not a CloudEvents 1.0 JSON document
	// the ledger can identify (no usable id), or is one of a type this
	// version does not apply that is too large to keep (MaxUnhandledSize). It
	// is never acknowledged, so the queue's redrive policy moves it to the DLQ.
	ErrMalformed = errors.New("malformed message")
	// ErrInvalidEvent means a known event type carries data the ledger cannot
	// post (missing fields, a bad amount, an unknown data version). Like
	// ErrMalformed it is left for the DLQ, where an operator can look at it
	// and redrive it once a fixed consumer is deployed.
	ErrInvalidEvent = errors.New("invalid event")
)

// cloudEvent is the consumer's own view of the CloudEvents 1.0 envelope. It
// is deliberately not the producer's struct: the two services share a wire
// contract, not code.
type cloudEvent struct {
	SpecVersion string          `json:"specversion"`
	ID          string          `json:"id"`
	Type        string          `json:"type"`
	Source      string          `json:"source"`
	Subject     string          `json:"subject"`
	Time        string          `json:"time"`
	DataSchema  string          `json:"dataschema"`
	DataVersion string          `json:"dataversion"` // deprecated: read DataSchema first
	Data        json.RawMessage `json:"data"`
}

// envelope is a decoded, identified message.
type envelope struct {
	id   string
	typ  string
	time time.Time // zero when absent and the type is unknown
	ev   cloudEvent
	body []byte // the message as received, for the schema check
}

// decodeEnvelope parses body as a CloudEvent and checks what every event
// needs: spec version 1.0, a UUID id and a type. Errors wrap ErrMalformed.
func decodeEnvelope(body []byte) (envelope, error) {
	// The inbox keeps the body as jsonb, which refuses what encoding/json
	// lets through: invalid UTF-8 and the NUL character. Refuse them here, so
	// such a message is poison (DLQ) rather than a database error retried.
	if !utf8.Valid(body) {
		return envelope{}, fmt.Errorf("%w: body is not valid UTF-8", ErrMalformed)
	}
	if hasNULEscape(body) {
		return envelope{}, fmt.Errorf("%w: body contains a NUL character", ErrMalformed)
	}
	var ev cloudEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return envelope{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if ev.SpecVersion == "" && ev.Type == "Notification" {
		// encoding/json matches field names case-insensitively, so SNS's
		// "Type" lands in ev.Type: the classic misconfiguration.
		return envelope{}, fmt.Errorf("%w: an SNS envelope, not a CloudEvent: the subscription needs RawMessageDelivery=true", ErrMalformed)
	}
	if ev.SpecVersion != "1.0" {
		return envelope{}, fmt.Errorf("%w: specversion %q, want 1.0", ErrMalformed, ev.SpecVersion)
	}
	id, err := uuid.Parse(ev.ID)
	if err != nil {
		return envelope{}, fmt.Errorf("%w: id %q is not a UUID", ErrMalformed, ev.ID)
	}
	if ev.Type == "" {
		return envelope{}, fmt.Errorf("%w: no type", ErrMalformed)
	}
	env := envelope{id: id.String(), typ: ev.Type, ev: ev, body: body}
	if ev.Time != "" {
		if t, err := time.Parse(time.RFC3339Nano, ev.Time); err == nil {
			env.time = t
		}
	}
	return env, nil
}

// transaction turns an event of a type in the registry into the ledger
// transaction it posts, once schemas accept it. Errors wrap ErrInvalidEvent.
func (e envelope) transaction(r rule, schemas Schemas) (ledger.Transaction, error) {
	version, err := e.dataVersion()
	if err != nil {
		return ledger.Transaction{}, fmt.Errorf("%w: %s: %w", ErrInvalidEvent, e.typ, err)
	}
	decode, ok := r.decode[version]
	if !ok {
		return ledger.Transaction{}, fmt.Errorf("%w: %s data version %q, this consumer knows %s", ErrInvalidEvent, e.typ, version, r.versions())
	}
	if err := schemas.Validate(e.typ, version, e.body); err != nil {
		return ledger.Transaction{}, fmt.Errorf("%w: %s: %w", ErrInvalidEvent, e.typ, err)
	}
	if e.time.IsZero() {
		return ledger.Transaction{}, fmt.Errorf("%w: time %q is not RFC 3339", ErrInvalidEvent, e.ev.Time)
	}
	if len(bytes.TrimSpace(e.ev.Data)) == 0 {
		return ledger.Transaction{}, fmt.Errorf("%w: no data", ErrInvalidEvent)
	}
	p, err := decode(e.ev.Data)
	if err == nil {
		err = e.checkSubject(p.PaymentID)
	}
	if err != nil {
		return ledger.Transaction{}, fmt.Errorf("%w: %s: %w", ErrInvalidEvent, e.typ, err)
	}
	p.MessageID, p.Kind, p.OccurredAt = e.id, r.kind, e.time
	tx, err := ledger.NewTransfer(p, r.direction)
	if err != nil {
		return ledger.Transaction{}, fmt.Errorf("%w: %s: %w", ErrInvalidEvent, e.typ, err)
	}
	return tx, nil
}

// dataVersion is the version of the event's data: the one its dataschema
// names (…/<type>/v<N>.json, README "Contracts"), or, from a producer that
// predates dataschema, its dataversion. Producers still send dataversion so
// that consumers which read only it keep working during a rolling deploy;
// when an event has both, they must agree.
func (e envelope) dataVersion() (string, error) {
	if e.ev.DataSchema == "" {
		if e.ev.DataVersion == "" {
			return "", errors.New("no dataschema or dataversion names the version of its data")
		}
		return e.ev.DataVersion, nil
	}
	prefix := "/" + e.typ + "/v"
	i := strings.LastIndex(e.ev.DataSchema, prefix)
	version, ok := "", false
	if i >= 0 {
		version, ok = strings.CutSuffix(e.ev.DataSchema[i+len(prefix):], ".json")
	}
	if !ok || version == "" || strings.Trim(version, "0123456789") != "" {
		return "", fmt.Errorf("dataschema %q does not name a version of %s's data (…/%s/v<N>.json)", e.ev.DataSchema, e.typ, e.typ)
	}
	if e.ev.DataVersion != "" && e.ev.DataVersion != version {
		return "", fmt.Errorf("dataschema %q names version %s, dataversion says %q", e.ev.DataSchema, version, e.ev.DataVersion)
	}
	return version, nil
}

// checkSubject checks that the envelope's subject, when present, names the
// payment the data is about.
func (e envelope) checkSubject(paymentID string) error {
	if e.ev.Subject == "" {
		return nil
	}
	if subj, err := uuid.Parse(e.ev.Subject); err != nil || subj.String() != paymentID {
		return fmt.Errorf("subject %q does not match payment_id %q", e.ev.Subject, paymentID)
	}
	return nil
}

// hasNULEscape reports whether a JSON document contains the escape \u0000
// (and not merely an escaped backslash followed by "u0000").
func hasNULEscape(body []byte) bool {
	for i := 0; ; {
		j := bytes.Index(body[i:], []byte(`u0000`))
		if j < 0 {
			return false
		}
		k := i + j // index of 'u'
		slashes := 0
		for k-1-slashes >= 0 && body[k-1-slashes] == '\\' {
			slashes++
		}
		if slashes%2 == 1 {
			return true
		}
		i = k + 1
	}
}

package posting_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/posting"
	"github.com/payments-outbox/payments-outbox/application/posting/postingtest"
)

func serviceWith(m *postingtest.FakeStore, s *postingtest.FakeSchemas) *posting.Service {
	return posting.NewService(m, m, s, func() time.Time { return now })
}

// TestApplyRefusesWhatTheSchemaRefuses: an event the schemas refuse is
// invalid, like one the decoder refuses: no inbox row, so its redeliveries
// reach the DLQ instead of passing for duplicates.
func TestApplyRefusesWhatTheSchemaRefuses(t *testing.T) {
	m := postingtest.NewFakeStore()
	schemas := &postingtest.FakeSchemas{Refuse: errors.New(`data does not match: at "/data": additional properties 'note' not allowed`)}
	_, err := serviceWith(m, schemas).Apply(context.Background(), created(msgA, 1050))
	if !errors.Is(err, posting.ErrInvalidEvent) || !strings.Contains(err.Error(), "additional properties") {
		t.Errorf("got %v, want ErrInvalidEvent saying what the schema refused", err)
	}
	if len(m.Inbox()) != 0 || len(m.Transactions()) != 0 {
		t.Errorf("got %d inbox rows and %d transactions, want none", len(m.Inbox()), len(m.Transactions()))
	}
	if got, want := schemas.Asked(), []string{"payment.created/v1"}; !slices.Equal(got, want) {
		t.Errorf("schemas asked %v, want %v", got, want)
	}
}

// TestApplyChecksTheVersionTheEventNames: the version comes from dataschema,
// or from dataversion for an event published before dataschema was; a version
// the registry does not decode is refused before any schema is asked.
func TestApplyChecksTheVersionTheEventNames(t *testing.T) {
	const schemaV = `"dataschema":"https://payments-outbox.example/schemas/events/payment.created/v`
	good := string(created(msgA, 1050))
	tests := []struct {
		name  string
		body  string
		asked []string // nil: refused as invalid before the schemas are asked
	}{
		{"dataversion only", good, []string{"payment.created/v1"}},
		{"dataschema and dataversion", strings.Replace(good, `"dataversion":"1"`, schemaV+`1.json","dataversion":"1"`, 1), []string{"payment.created/v1"}},
		{"dataschema only", strings.Replace(good, `"dataversion":"1"`, schemaV+`1.json"`, 1), []string{"payment.created/v1"}},
		{"a version the ledger does not decode", strings.Replace(good, `"dataversion":"1"`, schemaV+`2.json"`, 1), nil},
		{"dataschema and dataversion disagree", strings.Replace(good, `"dataversion":"1"`, schemaV+`2.json","dataversion":"1"`, 1), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			schemas := &postingtest.FakeSchemas{}
			res, err := serviceWith(postingtest.NewFakeStore(), schemas).Apply(context.Background(), []byte(tt.body))
			if tt.asked == nil {
				if !errors.Is(err, posting.ErrInvalidEvent) {
					t.Errorf("got %v, %v; want ErrInvalidEvent", res.Disposition, err)
				}
			} else if err != nil || res.Disposition != posting.Applied {
				t.Errorf("got %v, %v; want applied", res.Disposition, err)
			}
			if got := schemas.Asked(); !slices.Equal(got, tt.asked) {
				t.Errorf("schemas asked %v, want %v", got, tt.asked)
			}
		})
	}
}

// TestApplyDoesNotCheckTypesItDoesNotPost: an event type the ledger does not
// know has no schema here; it is recorded and acknowledged, as before.
func TestApplyDoesNotCheckTypesItDoesNotPost(t *testing.T) {
	schemas := &postingtest.FakeSchemas{Refuse: errors.New("refuses everything")}
	body := strings.Replace(string(created(msgA, 1050)), `"type":"payment.created"`, `"type":"payment.disputed"`, 1)
	res, err := serviceWith(postingtest.NewFakeStore(), schemas).Apply(context.Background(), []byte(body))
	if err != nil || res.Disposition != posting.Ignored {
		t.Errorf("got %v, %v; want ignored", res.Disposition, err)
	}
	if got := schemas.Asked(); len(got) != 0 {
		t.Errorf("schemas asked %v, want nothing", got)
	}
}

package bookkeeping

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// Handler is the ledger's handler of the shared inbox: it posts each event
// of a type in the registry (events.go) as the balanced transaction of its
// posting rule. Its zero value is ready to use.
type Handler struct{}

var _ inbox.Handler[Ledger, ledger.Transaction] = Handler{}

// Types implements inbox.Handler: the registry's types, each with the data
// versions it decodes.
func (Handler) Types() map[string][]string {
	types := make(map[string][]string, len(rules))
	for typ, r := range rules {
		types[typ] = slices.Sorted(maps.Keys(r.decode))
	}
	return types
}

// Ignored implements inbox.Handler: the published types the ledger
// deliberately does not post, with the reason.
func (Handler) Ignored() map[string]string { return maps.Clone(ignored) }

// Check implements inbox.Handler: it decodes ev's data at version with its
// rule's decoder into the ledger transaction it posts. The envelope's
// subject, when present, must name the payment the data is about.
func (Handler) Check(ev inbox.Event, version string) (ledger.Transaction, error) {
	r, ok := rules[ev.Type]
	if !ok {
		return ledger.Transaction{}, fmt.Errorf("the ledger does not post %s", ev.Type)
	}
	decode, ok := r.decode[version]
	if !ok {
		return ledger.Transaction{}, fmt.Errorf("the ledger does not decode %s data version %q", ev.Type, version)
	}
	p, err := decode(ev.Data)
	if err != nil {
		return ledger.Transaction{}, err
	}
	if err := checkSubject(ev.Subject, p.PaymentID); err != nil {
		return ledger.Transaction{}, err
	}
	p.MessageID, p.Kind, p.OccurredAt = ev.ID, r.kind, ev.Time
	return ledger.NewTransfer(p, r.direction)
}

// checkSubject checks that the envelope's subject, when present, names the
// payment the data is about.
func checkSubject(subject, paymentID string) error {
	if subject == "" {
		return nil
	}
	if subj, err := uuid.Parse(subject); err != nil || subj.String() != paymentID {
		return fmt.Errorf("subject %q does not match payment_id %q", subject, paymentID)
	}
	return nil
}

// Compare implements inbox.Handler: the lock order of a batch's postings.
// The database adds a transaction's postings to their balances at commit,
// in the order they were posted, each posting's merchant row before its
// payer's; posted by merchant, then currency, then payer, every commit — a
// batch's, or a single posting's in the sync mode — takes the rows it shares
// with another in the same order, and none waits for another that waits for
// it.
func (Handler) Compare(a, b ledger.Transaction) int {
	ka, kb := lockKey(a), lockKey(b)
	return cmp.Or(cmp.Compare(ka[0], kb[0]), cmp.Compare(ka[1], kb[1]), cmp.Compare(ka[2], kb[2]))
}

// lockKey is (merchant, currency, payer) of a transfer's accounts.
func lockKey(tx ledger.Transaction) [3]string {
	var k [3]string
	k[1] = tx.Currency()
	for _, e := range tx.Entries() {
		k[0] = e.Account().Merchant()
		if payer := e.Account().Payer(); payer != "" {
			k[2] = payer
		}
	}
	return k
}

// Apply implements inbox.Handler: it posts tx in the inbox's transaction,
// at the time the inbox records the message applied. false means the fact
// was already posted under another message id.
func (Handler) Apply(ctx context.Context, l Ledger, tx ledger.Transaction, at time.Time) (bool, error) {
	return l.Post(ctx, tx, at)
}

// Package ledgermetrics exports the ledger's own series, behind the port
// its handler declares (ledgers.HandlerMetrics), as Prometheus series
// registered on the registry the binary's /metrics serves. The series
// every consumer shares are adapters/metrics'.
package ledgermetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

var _ ledgers.HandlerMetrics = (*Handler)(nil)

// Handler is the ledger handler's series: the events it refused to post
// because they contradict what it knows of their payment. Each such event
// is parked too (inbox_parked_rows), but this says why, and it is never a
// dependency's fault: a producer sent what it should not have.
type Handler struct {
	refused *prometheus.CounterVec
}

// New creates the handler's series and registers them on reg. It
// fails if reg already holds series of the same names.
func New(reg prometheus.Registerer) (*Handler, error) {
	m := &Handler{refused: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ledger_events_refused_total",
		Help: "Events the ledger refused to post, parked at once: a capture past its hold, a second capture, a refund past what was captured, an unknown currency… by kind and reason; a payment over LEDGER_MAX_AMOUNT (amount_limit) is refused before it is recorded and dead-lettered, counted at each delivery.",
	}, []string{"kind", "reason"})}
	for _, k := range ledgers.Kinds() {
		for _, r := range ledgers.Reasons() {
			m.refused.WithLabelValues(string(k), r)
		}
	}
	if err := reg.Register(m.refused); err != nil {
		return nil, err
	}
	return m, nil
}

// Refused implements ledgers.HandlerMetrics.
func (m *Handler) Refused(kind ledger.Kind, reason string) {
	m.refused.WithLabelValues(string(kind), reason).Inc()
}

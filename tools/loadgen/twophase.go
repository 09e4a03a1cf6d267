package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/domain/payment"
	paymentsmigrations "github.com/payments-outbox/payments-outbox/migrations/payments"
)

// authorizeCapture is the two-phase op: POST /payments with capture_method
// manual, which must answer 201, then POST /payments/{id}/capture of the
// whole amount, which must answer 200 — one operation, so its rate is
// two-phase payments per second and its latency the pair's.
func (c *paymentClient) authorizeCapture(_ context.Context, worker int, seq uint64) error {
	p := c.posters[worker]
	status, body, err := p.postTo(p.path, manualBody(seq), true)
	if err != nil {
		return err
	}
	if status != http.StatusCreated {
		return fmt.Errorf("POST /payments (manual): %d %s", status, http.StatusText(status))
	}
	var created struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(body, &created); err != nil || created.ID == "" {
		return fmt.Errorf("POST /payments (manual): no id in %q", body)
	}
	if status, _, err = p.postTo(p.path+"/"+created.ID+"/capture", []byte(`{}`), false); err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("POST /payments/{id}/capture: %d %s", status, http.StatusText(status))
	}
	return nil
}

// manualBody is paymentBody's payment, authorized only.
func manualBody(seq uint64) []byte {
	b := paymentBody(seq)
	return append(b[:len(b)-1], `,"capture_method":"manual"}`...)
}

// twoPhaseWrite is what the service commits for one two-phase payment, in
// two transactions: the authorized payment with the outbox row of its
// Authorized event, then the captured state with the row of its Captured
// event.
type twoPhaseWrite struct {
	authorized, captured payment.Snapshot
	authorize, capture   write // the outbox rows (their payment fields unused)
}

// newTwoPhaseWrite builds the seq-th two-phase payment with the project's
// code, as the service does: payment.Authorize records Authorized, Capture
// of the whole amount records Captured, payments.EncodeEvent renders both.
func newTwoPhaseWrite(seq uint64, now time.Time) (twoPhaseWrite, error) {
	payer, merchant := "cus_"+strconv.FormatUint(seq%1000, 10), "mer_"+strconv.FormatUint(seq%50, 10)
	p, err := payment.Authorize(payment.ID(uuid.Must(uuid.NewV7()).String()), int64(100+seq%100_000), "BRL", payer, merchant, "loadgen",
		payments.DefaultAuthorizationTTL, now)
	if err != nil {
		return twoPhaseWrite{}, err
	}
	var w twoPhaseWrite
	w.authorized = p.Snapshot()
	if w.authorize, err = encoded(p.PullEvents()[0]); err != nil {
		return twoPhaseWrite{}, err
	}
	if err := p.Capture(p.Amount(), now); err != nil {
		return twoPhaseWrite{}, err
	}
	w.captured = p.Snapshot()
	if w.capture, err = encoded(p.PullEvents()[0]); err != nil {
		return twoPhaseWrite{}, err
	}
	return w, nil
}

// encoded is the outbox row of e under a new message id.
func encoded(e payment.Event) (write, error) {
	w := write{msgID: uuid.Must(uuid.NewV7()), event: e}
	var err error
	w.payload, err = payments.EncodeEvent(w.msgID.String(), e, payments.TraceContext{})
	return w, err
}

// rawTwoPhase returns the op for the two-phase ceiling: the two
// transactions authorize + capture commit, straight to Postgres with pgx,
// with no HTTP, JSON decoding or idempotency key (rawWrite says why the
// SQL is written out here). The authorization is rawWrite's one pipelined
// batch with the manual columns. The capture is, by default, the fastest
// way to the same rows: one statement that moves an authorized payment to
// captured and, only if it did, inserts the Captured event's outbox row —
// one round trip. With lockFirst it is the capture as paymentstore runs
// it: BEGIN, SELECT … FOR UPDATE of the payment (the domain decides on
// the row it locked), then the UPDATE and the outbox row in one batch,
// COMMIT — four round trips; for comparison, the price of reading before
// writing.
func rawTwoPhase(pool *pgxpool.Pool, lockFirst bool) op {
	return func(ctx context.Context, worker int, seq uint64) error {
		w, err := newTwoPhaseWrite(seq, time.Now())
		if err != nil {
			return err
		}
		s := w.authorized
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO payments (id, amount, refunded_amount, currency, status, payer_id, merchant_id, description, created_at, updated_at,
			capture_method, amount_captured, capture_before)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			string(s.ID), s.AmountMinor, s.RefundedMinor, s.Currency, string(s.Status), s.PayerID, s.MerchantID, s.Description, s.CreatedAt, s.UpdatedAt,
			string(s.CaptureMethod), s.CapturedMinor, s.CaptureBefore)
		b.Queue(`INSERT INTO outbox (id, type, aggregate_id, payload) VALUES ($1, $2, $3, $4)`, w.authorize.outboxRow()...)
		if err := pool.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("authorize: %w", err)
		}

		c := w.captured
		if !lockFirst {
			tag, err := pool.Exec(ctx, `WITH captured AS (
				UPDATE payments SET status = $2, updated_at = $3, amount_captured = $4, captured_at = $5
				WHERE id = $1 AND status = 'authorized' RETURNING id)
			INSERT INTO outbox (id, type, aggregate_id, payload) SELECT $6::uuid, $7::text, $8::uuid, $9::json FROM captured`,
				append([]any{string(c.ID), string(c.Status), c.UpdatedAt, c.CapturedMinor, c.CapturedAt}, w.capture.outboxRow()...)...)
			if err == nil && tag.RowsAffected() != 1 {
				err = errors.New("the payment was not authorized")
			}
			if err != nil {
				return fmt.Errorf("capture: %w", err)
			}
			return nil
		}
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			var status string
			if err := tx.QueryRow(ctx, `SELECT `+paymentColumns+` FROM payments WHERE id = $1 FOR UPDATE`, string(c.ID)).Scan(scanInto(&status)...); err != nil {
				return fmt.Errorf("capture: lock: %w", err)
			}
			if status != string(payment.StatusAuthorized) {
				return fmt.Errorf("capture: the payment is %s", status)
			}
			b := &pgx.Batch{}
			b.Queue(`UPDATE payments SET refunded_amount = $2, status = $3, updated_at = $4,
				amount_captured = $5, captured_at = $6, canceled_at = $7, cancellation_reason = $8 WHERE id = $1`,
				string(c.ID), c.RefundedMinor, string(c.Status), c.UpdatedAt, c.CapturedMinor, c.CapturedAt, nil, nil)
			b.Queue(`INSERT INTO outbox (id, type, aggregate_id, payload) VALUES ($1, $2, $3, $4)`, w.capture.outboxRow()...)
			return tx.SendBatch(ctx, b).Close()
		})
	}
}

// paymentColumns are the columns paymentstore reads of a payment (its
// paymentColumns), so that the lock-first capture reads what the service
// reads.
const paymentColumns = `id, amount, refunded_amount, currency, status, payer_id, merchant_id, description, created_at, updated_at,
	capture_method, amount_captured, capture_before, captured_at, canceled_at, cancellation_reason`

// scanInto returns scan targets for paymentColumns, the status into status
// and the rest discarded.
func scanInto(status *string) []any {
	var (
		text                                  string
		n                                     int64
		id                                    pgtype.UUID
		at                                    time.Time
		captureBefore, capturedAt, canceledAt *time.Time
		reason                                *string
	)
	return []any{&id, &n, &n, &text, status, &text, &text, &text, &at, &at, &text, &n, &captureBefore, &capturedAt, &canceledAt, &reason}
}

// twoPhase measures a two-phase payment against its SQL ceiling and
// against a one-phase payment, interleaved run by run so that all see the
// same machine weather: the one-phase ceiling (rawWrite) and the
// two-phase ones (rawTwoPhase, fast and lock-first), then POST /payments
// and authorize + capture on the real payments binary, its relay idle as
// in writePath. Each API run is related to the ceiling run of its kind
// just before it, and the two-phase API run to the one-phase one.
func (b *bench) twoPhase(ctx context.Context) error {
	o := b.o
	dbURL, err := b.createDatabase(ctx, "twophase", paymentsmigrations.FS)
	if err != nil {
		return err
	}
	pool, err := openPool(ctx, dbURL, o.Concurrency)
	if err != nil {
		return err
	}
	defer pool.Close()
	baseURL, key := o.URL, o.APIKey
	if baseURL == "" {
		bin, err := b.binary(ctx, "payments")
		if err != nil {
			return err
		}
		srv, err := startService(ctx, b.dir, bin, append([]string{
			"DATABASE_URL=" + withParams(dbURL, o.PaymentsDBArg),
			"AWS_ENDPOINT_URL=http://127.0.0.1:1",
			"PAYMENTS_TOPIC_ARN=arn:aws:sns:us-east-1:000000000000:loadgen-unused",
			// serve needs a signing key; nothing is published with it.
			"PAYMENTS_SIGNING_KEY_ID=loadgen-unused", "PAYMENTS_SIGNING_KEY=" + unusedSigningKey,
			"OUTBOX_NOTIFY=false", "OUTBOX_POLL_INTERVAL=1h",
			// The expiry's sweeps would compete for the payments the load
			// authorizes: none expires within a run anyway.
			"PAYMENTS_AUTHORIZATION_EXPIRY_INTERVAL=1h",
			noRateLimit,
		}, o.PaymentsEnv...))
		if err != nil {
			return err
		}
		defer srv.Stop()
		baseURL = "http://" + srv.Addr()
		if key, err = platformKey(ctx, pool); err != nil {
			return err
		}
	}
	client, err := newPaymentClient(baseURL, key, o.Concurrency)
	if err != nil {
		return err
	}
	defer client.Close()

	var ceilOne, ceilTwo, ceilLock, apiOne, apiTwo []summary
	var vsCeilOne, vsCeilTwo, vsCeilLock, twoVsOne []float64
	for i := range o.Runs {
		fmt.Fprintf(b.progress, "loadgen: two-phase payments, run %d of %d\n", i+1, o.Runs)
		for _, m := range []struct {
			name string
			fn   op
			into *[]summary
		}{
			{"SQL ceiling, one phase", rawWrite(pool, false), &ceilOne},
			{"SQL ceiling, authorize + capture", rawTwoPhase(pool, false), &ceilTwo},
			{"SQL ceiling, authorize + capture, lock first", rawTwoPhase(pool, true), &ceilLock},
			{"POST /payments", client.create, &apiOne},
			{"authorize + capture", client.authorizeCapture, &apiTwo},
		} {
			if err := truncate(ctx, pool); err != nil {
				return err
			}
			*m.into = append(*m.into, b.phase(m.name, 0).run(ctx, m.fn))
		}
		last := func(s []summary) float64 { return s[len(s)-1].Rate() }
		vsCeilOne = append(vsCeilOne, last(apiOne)/last(ceilOne))
		vsCeilTwo = append(vsCeilTwo, last(apiTwo)/last(ceilTwo))
		vsCeilLock = append(vsCeilLock, last(ceilLock)/last(ceilTwo))
		twoVsOne = append(twoVsOne, last(apiTwo)/last(apiOne))
		fmt.Fprintf(b.progress, "  run %d: API/ceiling one phase %.2f, two phases %.2f; two-phase API/one-phase API %.2f\n",
			i+1, vsCeilOne[i], vsCeilTwo[i], twoVsOne[i])
	}
	conc := strconv.Itoa(o.Concurrency)
	add := func(name string, runs []summary, unit string, ratio []float64, limit string) {
		r := latencyRow(name, conc, runs, unit)
		if ratio != nil {
			r.Ratio = spreadOf(ratio)
		}
		r.Limit = limit
		b.rows = append(b.rows, r)
	}
	one := []float64{}
	for range ceilOne {
		one = append(one, 1)
	}
	add("SQL ceiling, one phase: payments + outbox row, 1 round trip", ceilOne, "payments/s", one, "the ceiling of POST /payments")
	add("SQL ceiling, two phases: authorize (1 round trip) + capture (1 statement)", ceilTwo, "payments/s", nil,
		"the ceiling of authorize + capture; the ratios below are to it")
	add("SQL ceiling, two phases, capture locking first (BEGIN, SELECT … FOR UPDATE, write, COMMIT)", ceilLock, "payments/s", vsCeilLock,
		"the capture as paymentstore runs it; vs the two-phase ceiling")
	add("POST /payments (relay idle)", apiOne, "payments/s", vsCeilOne, "vs the one-phase ceiling")
	add("POST /payments manual + POST /payments/{id}/capture (relay idle)", apiTwo, "payments/s", vsCeilTwo,
		fmt.Sprintf("vs the two-phase ceiling; %.2f× POST /payments (median of the runs' ratios)", spreadOf(twoVsOne).Median))
	return nil
}

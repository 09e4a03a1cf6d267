package inboxstore

import (
	"context"
	"fmt"
	"time"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/application/inbox"
)

// InboxStats implements inbox.Admin, with the age measured on the
// database's clock. Each count's WHERE is the predicate of a partial index
// (pending, parked), so it reads the backlog, never the applied rows that
// wait for retention.
func (s *Store[R]) InboxStats(ctx context.Context, types []string) (inbox.Stats, error) {
	var (
		st     inbox.Stats
		oldest float64
	)
	err := s.pool.QueryRow(ctx, `
		SELECT p.pending, p.oldest, p.unhandled,
		       (SELECT count(*) FROM inbox_messages WHERE parked_at IS NOT NULL)
		FROM (SELECT count(*) FILTER (WHERE type = ANY($1::text[])) AS pending,
		             coalesce(extract(epoch FROM now() - min(received_at) FILTER (WHERE type = ANY($1::text[]))), 0)::float8 AS oldest,
		             count(*) FILTER (WHERE NOT type = ANY($1::text[])) AS unhandled
		      FROM inbox_messages WHERE processed_at IS NULL AND parked_at IS NULL) p`,
		types).Scan(&st.Pending, &oldest, &st.Unhandled, &st.Parked)
	if err != nil {
		return inbox.Stats{}, fmt.Errorf("inbox stats: %w", postgres.Unavailable(err))
	}
	st.OldestPending = max(0, time.Duration(oldest*float64(time.Second)))
	return st, nil
}

// Retry implements inbox.Admin.
func (s *Store[R]) Retry(ctx context.Context, ids []string) (int, error) {
	tag, err := s.pool.Exec(ctx, `
		UPDATE inbox_messages SET parked_at = NULL, attempts = 0, next_attempt_at = NULL
		WHERE parked_at IS NOT NULL AND processed_at IS NULL AND ($1::uuid[] IS NULL OR id = ANY($1::uuid[]))`, ids)
	if err != nil {
		return 0, fmt.Errorf("retry parked inbox rows: %w", postgres.Unavailable(err))
	}
	if ids != nil && tag.RowsAffected() == 0 {
		return 0, fmt.Errorf("%w: %v", inbox.ErrUnknownMessage, ids)
	}
	return int(tag.RowsAffected()), nil
}

// DeleteInboxBefore is the inbox's retention.DeleteFunc: it deletes at most
// limit processed inbox rows received before cutoff, in one statement.
// Start-up checks the cutoff lies past the broker's redelivery window
// (inbox.CheckRetention). A row not processed — pending, parked, or of a
// type this version does not handle — is never deleted here: it is work not
// done, and the inbox is the only place that still holds it. Unhandled rows
// have a window of their own (DeleteUnhandled).
func (s *Store[R]) DeleteInboxBefore(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM inbox_messages WHERE id IN (
			SELECT id FROM inbox_messages
			WHERE received_at < $1 AND processed_at IS NOT NULL LIMIT $2)`, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("delete inbox messages: %w", postgres.Unavailable(err))
	}
	return int(tag.RowsAffected()), nil
}

// DeleteUnhandled implements inbox.Admin: the expiry of the rows of types
// this version does not apply (inbox.Processor.ExpireUnhandled). Its WHERE
// holds the predicate of the partial pending index, so it reads the backlog,
// not the processed rows. FOR UPDATE SKIP LOCKED passes over a row a claim
// holds — a processor of a newer version, during a rolling deploy, applying
// the type this one does not know — and re-checks each row it locks, so a
// row that such a processor applied or parked meanwhile is left alone.
func (s *Store[R]) DeleteUnhandled(ctx context.Context, types []string, cutoff time.Time, limit int) (int, error) {
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM inbox_messages WHERE id IN (
			SELECT id FROM inbox_messages
			WHERE processed_at IS NULL AND parked_at IS NULL AND received_at < $2
			  AND NOT type = ANY($1::text[])
			ORDER BY received_at
			LIMIT $3
			FOR UPDATE SKIP LOCKED)`, types, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("delete unhandled inbox messages: %w", postgres.Unavailable(err))
	}
	return int(tag.RowsAffected()), nil
}

// Package apikeystore is the Postgres store of API keys (access.Store), in
// the payments database: table api_keys, migrations/payments. It keeps
// each key's hash and public part, never the key.
package apikeystore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/application/access"
)

var _ access.Store = (*Store)(nil)

// Store implements access.Store on Postgres.
type Store struct{ pool *pgxpool.Pool }

// New returns a Store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Add implements access.Store.
func (s *Store) Add(ctx context.Context, k access.StoredKey) error {
	var merchant *string
	if !k.Platform {
		merchant = &k.MerchantID
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO api_keys (id, prefix, hash, platform, merchant_id, name, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		k.ID, prefix(k.Key), k.Hash, k.Platform, merchant, k.Name, k.CreatedAt)
	if postgres.IsUniqueViolation(err, "") {
		return fmt.Errorf("%w: %s", access.ErrKeyExists, k.Prefix())
	}
	if err != nil {
		return fmt.Errorf("add API key: %w", postgres.Unavailable(err))
	}
	return nil
}

// prefix is the key's form before its id: pk_test_, pk_live_plat_, ….
func prefix(k access.Key) string {
	p := k.Prefix()
	return p[:len(p)-len(k.ID)]
}

const columns = `id, prefix, hash, platform, coalesce(merchant_id, ''), name, created_at, last_used_at, revoked_at`

func scan(row pgx.Row) (access.StoredKey, error) {
	var (
		k             access.StoredKey
		pfx           string
		used, revoked *time.Time
	)
	if err := row.Scan(&k.ID, &pfx, &k.Hash, &k.Platform, &k.MerchantID, &k.Name, &k.CreatedAt, &used, &revoked); err != nil {
		return access.StoredKey{}, err
	}
	parsed, err := access.ParseEnv(envOf(pfx))
	if err != nil {
		return access.StoredKey{}, fmt.Errorf("API key %s: %w", k.ID, err)
	}
	k.Env = parsed
	if used != nil {
		k.LastUsedAt = *used
	}
	if revoked != nil {
		k.RevokedAt = *revoked
	}
	return k, nil
}

// envOf reads the environment out of a stored prefix "pk_<env>_…".
func envOf(prefix string) string {
	if len(prefix) < 8 {
		return ""
	}
	return prefix[3:7]
}

// FindByHash implements access.Store.
func (s *Store) FindByHash(ctx context.Context, hash []byte) (access.StoredKey, error) {
	k, err := scan(s.pool.QueryRow(ctx, `SELECT `+columns+` FROM api_keys WHERE hash = $1`, hash))
	if errors.Is(err, pgx.ErrNoRows) {
		return access.StoredKey{}, access.ErrUnknownKey
	}
	if err != nil {
		return access.StoredKey{}, fmt.Errorf("find API key: %w", postgres.Unavailable(err))
	}
	return k, nil
}

// List implements access.Store.
func (s *Store) List(ctx context.Context) ([]access.StoredKey, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+columns+` FROM api_keys ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("list API keys: %w", postgres.Unavailable(err))
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (access.StoredKey, error) { return scan(r) })
	if err != nil {
		return nil, fmt.Errorf("list API keys: %w", postgres.Unavailable(err))
	}
	return keys, nil
}

// Revoke implements access.Store.
func (s *Store) Revoke(ctx context.Context, id string, at time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, $2) WHERE id = $1`, id, at)
	if err != nil {
		return fmt.Errorf("revoke API key: %w", postgres.Unavailable(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: id %s", access.ErrUnknownKey, id)
	}
	return nil
}

// TouchUsed implements access.Store: one statement for every key used since
// the last call.
func (s *Store) TouchUsed(ctx context.Context, used map[string]time.Time) error {
	ids := make([]string, 0, len(used))
	times := make([]time.Time, 0, len(used))
	for id, t := range used {
		ids, times = append(ids, id), append(times, t)
	}
	_, err := s.pool.Exec(ctx, `UPDATE api_keys k SET last_used_at = u.at
		FROM unnest($1::text[], $2::timestamptz[]) AS u(id, at)
		WHERE k.id = u.id AND (k.last_used_at IS NULL OR k.last_used_at < u.at)`, ids, times)
	if err != nil {
		return fmt.Errorf("record API keys' last use: %w", postgres.Unavailable(err))
	}
	return nil
}

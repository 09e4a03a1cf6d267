package accesstest

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/application/access"
)

// RunContract runs the behaviour every access.Store must have. Each
// implementation's tests call it with a constructor of a fresh, empty store.
func RunContract(t *testing.T, newStore func(t *testing.T) access.Store) {
	ctx := context.Background()
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	newKey := func(t *testing.T, merchant string) (string, access.StoredKey) {
		t.Helper()
		whole, k, err := access.NewKey(access.EnvTest, merchant == "", nil)
		if err != nil {
			t.Fatal(err)
		}
		h := access.Hash(whole)
		return whole, access.StoredKey{Key: k, Hash: h[:], MerchantID: merchant, Name: "contract", CreatedAt: at}
	}

	t.Run("add then find by hash", func(t *testing.T) {
		s := newStore(t)
		_, mer := newKey(t, "mer_1")
		_, plat := newKey(t, "")
		for _, k := range []access.StoredKey{mer, plat} {
			if err := s.Add(ctx, k); err != nil {
				t.Fatal(err)
			}
			got, err := s.FindByHash(ctx, k.Hash)
			if err != nil {
				t.Fatal(err)
			}
			if got.Key != k.Key || !bytes.Equal(got.Hash, k.Hash) || got.MerchantID != k.MerchantID || got.Name != k.Name ||
				!got.CreatedAt.Equal(at) || !got.LastUsedAt.IsZero() || got.Revoked() {
				t.Errorf("found %+v, want %+v", got, k)
			}
		}
	})

	t.Run("unknown hash", func(t *testing.T) {
		s := newStore(t)
		h := access.Hash("pk_test_nothing")
		if _, err := s.FindByHash(ctx, h[:]); !errors.Is(err, access.ErrUnknownKey) {
			t.Errorf("err = %v, want ErrUnknownKey", err)
		}
	})

	t.Run("the same id or hash twice", func(t *testing.T) {
		s := newStore(t)
		_, k := newKey(t, "mer_1")
		if err := s.Add(ctx, k); err != nil {
			t.Fatal(err)
		}
		_, other := newKey(t, "mer_2")
		sameID, sameHash := other, other
		sameID.ID = k.ID
		sameHash.Hash = k.Hash
		for name, dup := range map[string]access.StoredKey{"id": sameID, "hash": sameHash} {
			if err := s.Add(ctx, dup); !errors.Is(err, access.ErrKeyExists) {
				t.Errorf("same %s: err = %v, want ErrKeyExists", name, err)
			}
		}
	})

	t.Run("revoke keeps the first time", func(t *testing.T) {
		s := newStore(t)
		_, k := newKey(t, "mer_1")
		if err := s.Add(ctx, k); err != nil {
			t.Fatal(err)
		}
		if err := s.Revoke(ctx, k.ID, at.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if err := s.Revoke(ctx, k.ID, at.Add(2*time.Hour)); err != nil {
			t.Fatal(err)
		}
		got, err := s.FindByHash(ctx, k.Hash)
		if err != nil {
			t.Fatal(err)
		}
		if !got.RevokedAt.Equal(at.Add(time.Hour)) {
			t.Errorf("revoked at %s, want %s", got.RevokedAt, at.Add(time.Hour))
		}
		if err := s.Revoke(ctx, "nosuchkeyid22222", at); !errors.Is(err, access.ErrUnknownKey) {
			t.Errorf("revoke unknown: err = %v, want ErrUnknownKey", err)
		}
	})

	t.Run("last use only moves forward", func(t *testing.T) {
		s := newStore(t)
		_, k := newKey(t, "mer_1")
		if err := s.Add(ctx, k); err != nil {
			t.Fatal(err)
		}
		later, earlier := at.Add(time.Hour), at.Add(time.Minute)
		for _, use := range []time.Time{later, earlier} {
			if err := s.TouchUsed(ctx, map[string]time.Time{k.ID: use, "unknownkeyid2222": use}); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.FindByHash(ctx, k.Hash)
		if err != nil {
			t.Fatal(err)
		}
		if !got.LastUsedAt.Equal(later) {
			t.Errorf("last used %s, want %s", got.LastUsedAt, later)
		}
	})

	t.Run("list, oldest first", func(t *testing.T) {
		s := newStore(t)
		var want []string
		for i := range 3 {
			_, k := newKey(t, "mer_1")
			k.CreatedAt = at.Add(time.Duration(i) * time.Second)
			if err := s.Add(ctx, k); err != nil {
				t.Fatal(err)
			}
			want = append(want, k.ID)
		}
		got, err := s.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, k := range got {
			ids = append(ids, k.ID)
		}
		if len(ids) != 3 || ids[0] != want[0] || ids[1] != want[1] || ids[2] != want[2] {
			t.Errorf("listed %v, want %v", ids, want)
		}
	})
}

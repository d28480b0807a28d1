package boltstore

import (
	"context"
	"encoding/json"
	"strconv"

	bolt "go.etcd.io/bbolt"

	"latchkey/pkg/account"
)

// bucketKeyUsage holds the usage records of limited keys: key id/shard ->
// JSON object of counters. Until the tablestore runs over bbolt (issue 20),
// which replaces this file, this is where bbolt counts uses: one write
// transaction applies a change whole or not at all, so counts are exact
// under any concurrency.
var bucketKeyUsage = []byte("api_key_usage")

func usageKey(keyID string, shard int) []byte { return []byte(keyID + "/" + strconv.Itoa(shard)) }

// ChangeKeyUsage applies c in one write transaction.
func (s *Store) ChangeKeyUsage(ctx context.Context, keyID string, shard int, c account.UsageChange) (map[string]int64, bool, error) {
	var out map[string]int64
	applied := false
	err := s.write(account.WithIdempotencyCommit(ctx, nil), func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketKeyUsage)
		if err != nil {
			return err
		}
		counters, err := readUsage(b, keyID, shard)
		if err != nil {
			return err
		}
		out, applied = counters, false
		next := make(map[string]int64, len(counters))
		for k, v := range counters {
			next[k] = v
		}
		for _, st := range c.Steps {
			v, ok := next[st.Name]
			if !ok {
				v = st.Start
			}
			v += st.Delta
			if v < st.Min || v > st.Max {
				return nil
			}
			next[st.Name] = v
		}
		for _, name := range c.Remove {
			delete(next, name)
		}
		raw, err := json.Marshal(next)
		if err != nil {
			return err
		}
		out, applied = next, true
		return b.Put(usageKey(keyID, shard), raw)
	})
	if err != nil {
		return nil, false, err
	}
	return out, applied, nil
}

// KeyUsage reads a usage record.
func (s *Store) KeyUsage(ctx context.Context, keyID string, shard int) (map[string]int64, error) {
	out := map[string]int64{}
	err := s.read(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketKeyUsage)
		if b == nil {
			return nil
		}
		var err error
		out, err = readUsage(b, keyID, shard)
		return err
	})
	return out, err
}

func readUsage(b *bolt.Bucket, keyID string, shard int) (map[string]int64, error) {
	out := map[string]int64{}
	raw := b.Get(usageKey(keyID, shard))
	if raw == nil {
		return out, nil
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, account.Internal(err)
	}
	return out, nil
}

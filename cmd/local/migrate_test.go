package main_test

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestServer_ConvertsOldDataFile: a DATA_DIR whose latchkey.db is of the
// embedded store's earlier layout (JSON in a bucket per entity, as
// fda3049 wrote it) is converted at startup and logged: the old admin
// key's secret still authenticates, its user is there with the same id,
// and the old file is kept as latchkey.db.pre-table.
func TestServer_ConvertsOldDataFile(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	const secret = "lk_an-admin-key-of-the-previous-release-0001"
	sum := sha256.Sum256([]byte(secret))
	hash, _ := json.Marshal(sum[:]) // base64, as encoding/json writes []byte
	const keyID, userID = "key_01KF0E7ST00000000000000001", "usr_01KF0E7ST00000000000000002"
	db, err := bolt.Open(filepath.Join(dataDir, "latchkey.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		put := func(bucket, k, v string) error {
			b, err := tx.CreateBucketIfNotExists([]byte(bucket))
			if err != nil {
				return err
			}
			return b.Put([]byte(k), []byte(v))
		}
		return errors.Join(
			put("api_keys", keyID, `{"id":"`+keyID+`","name":"bootstrap admin key","hash":`+string(hash)+`,"last4":"0001","scopes":["*:*"],"bootstrap":true,"created_at":"2026-11-01T09:00:00Z","expires_at":"0001-01-01T00:00:00Z"}`),
			put("users", userID, `{"id":"`+userID+`","email":"ada@example.com","name":"Ada","role":"member","created_at":"2026-11-01T09:00:00Z","updated_at":"2026-11-01T09:00:00Z"}`),
		)
	})
	if err := errors.Join(err, db.Close()); err != nil {
		t.Fatal(err)
	}

	s := start(t, dataDir)
	s.waitLog(t, "converted the data file of an earlier version")
	if status, got := s.call(t, "GET", "/v1/users/"+userID, secret, ""); status != http.StatusOK || got["email"] != "ada@example.com" {
		t.Fatalf("the old user, read with the old admin key: %d %v", status, got)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "latchkey.db.pre-table")); err != nil {
		t.Errorf("the old file is not kept: %v", err)
	}
}

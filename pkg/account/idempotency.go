package account

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Idempotency keys let a client retry a write whose answer it lost: the
// first request with a key is carried out and its answer stored; a repeat
// of it gets that answer again and changes nothing. The HTTP layer says
// which requests take a key, computes their fingerprint and encodes the
// answer; this file holds the rules, and the Store keeps the records.
//
// A record goes through three states:
//
//   - started: ClaimIdempotency wrote it for a request now running, which
//     holds it until LeaseUntil. A retry meanwhile is told to wait; a retry
//     after the lease (the request's process died) takes it over.
//   - applied: the store wrote this in the same atomic write as the change
//     the request made (see IdempotencyCommit), so a change is never made
//     without its record saying so, nor recorded without being made.
//   - done: FinishIdempotency stored the answer, which retries get.
//
// A request that changed nothing and failed in a way worth retrying (a 5xx)
// releases its record (ReleaseIdempotency), so that a retry runs afresh.

const (
	// IdempotencyRetention is how long a record answers retries of its key.
	IdempotencyRetention = 24 * time.Hour
	// IdempotencyLease is how long a request holds its key before a retry
	// may take it over: three times the Lambda functions' 10 s timeout, so
	// that only a request whose process is gone loses it.
	IdempotencyLease = 30 * time.Second
	// MaxIdempotencyKeyLength is the longest key accepted.
	MaxIdempotencyKeyLength = 255
)

// IdempotencyState is the state of an IdempotencyRecord.
type IdempotencyState string

// The states of a record; see above.
const (
	IdempotencyStarted IdempotencyState = "started"
	IdempotencyApplied IdempotencyState = "applied"
	IdempotencyDone    IdempotencyState = "done"
)

// IdempotencyRecord is what a store keeps of one key of one caller.
type IdempotencyRecord struct {
	// KeyID is the calling API key (the principal's key): keys are scoped
	// to it, so two callers never share one.
	KeyID string
	// Key is the Idempotency-Key the client sent.
	Key string
	// Fingerprint identifies the request (method, path, body), so that a
	// key sent again with another request is refused.
	Fingerprint []byte
	// Owner is a random token of the request that holds the record.
	Owner string
	State IdempotencyState
	// LeaseUntil is when a started or applied record stops holding off
	// retries.
	LeaseUntil time.Time
	// Response is the stored answer, once State is done: bytes the HTTP
	// layer made (and sealed, where the answer holds a secret), opaque here.
	Response  []byte
	CreatedAt time.Time
	// ExpiresAt is CreatedAt plus IdempotencyRetention. Stores drop the
	// record after it (DynamoDB TTL, bbolt pruning) and treat it as absent
	// meanwhile.
	ExpiresAt time.Time
}

// IdempotencyCommit asks a store to commit a request's record together
// with the change the request makes. The HTTP layer sets it in the
// request's Principal.Write; every Store method that changes data takes
// it in its WriteOptions. The change and the record's move from started
// to applied are then one atomic write (one bbolt transaction, one
// DynamoDB transaction), on condition that Owner still holds the record:
// if another request has taken the record over, the write is refused and
// the method returns CodeIdempotencyInProgress. A change that takes
// several writes (a DynamoDB cascade) commits the record with the last, so
// that the record says applied only once the change is whole; the earlier
// writes are the state a failure halfway leaves, which a retry, or the
// request that took the record over, finishes. After a successful write
// the store calls MarkApplied.
type IdempotencyCommit struct {
	KeyID string
	Key   string
	Owner string

	applied atomic.Bool
}

// MarkApplied records that the change and the record were committed.
func (c *IdempotencyCommit) MarkApplied() { c.applied.Store(true) }

// Applied reports whether a store committed a change with the record.
func (c *IdempotencyCommit) Applied() bool { return c.applied.Load() }

// ErrIdempotencyLost is the error a store returns when the commit's record
// is no longer held by its Owner: another request took it over after the
// lease passed, and will answer the key.
func ErrIdempotencyLost() *Error {
	return Errorf(CodeIdempotencyInProgress, "another request with this Idempotency-Key is being processed; retry shortly to get its answer")
}

// IdempotentRequest is a request's claim on its key, from BeginIdempotent.
type IdempotentRequest struct {
	svc    *Service
	record IdempotencyRecord
	commit *IdempotencyCommit
}

// ValidIdempotencyKey reports whether key is an acceptable Idempotency-Key:
// 1 to MaxIdempotencyKeyLength printable ASCII characters (space to
// tilde), so that it fits a DynamoDB sort key and reads the same in logs,
// consoles and every HTTP stack.
func ValidIdempotencyKey(key string) bool {
	if len(key) == 0 || len(key) > MaxIdempotencyKeyLength {
		return false
	}
	for i := range len(key) {
		if key[i] < 0x20 || key[i] > 0x7e {
			return false
		}
	}
	return true
}

// BeginIdempotent claims key for a request of the principal's API key
// whose fingerprint is fp. It returns the claim, to run the request with
// (Commit) and then Finish or Release; or, for a key whose request is
// done, the record to answer with; or an error: CodeInvalidRequest for a
// malformed key, CodeIdempotencyKeyReused if the key was used with another
// request, CodeIdempotencyInProgress while the first request runs,
// CodeIdempotencyResponseLost if the first request's change was made but
// its answer was never stored (its process stopped in between).
func (s *Service) BeginIdempotent(ctx context.Context, p Principal, key string, fp []byte) (*IdempotentRequest, *IdempotencyRecord, error) {
	if !ValidIdempotencyKey(key) {
		return nil, nil, invalid("Idempotency-Key", fmt.Sprintf("must be 1 to %d printable ASCII characters", MaxIdempotencyKeyLength))
	}
	if p.KeyID == "" || len(fp) == 0 {
		return nil, nil, Internal(errors.New("account: an idempotent request needs the caller's key and a fingerprint"))
	}
	now := s.now()
	owner := make([]byte, 16)
	rand.Read(owner) // never fails (crypto/rand documents it)
	rec := IdempotencyRecord{
		KeyID: p.KeyID, Key: key, Fingerprint: fp, Owner: hex.EncodeToString(owner),
		State: IdempotencyStarted, LeaseUntil: now.Add(IdempotencyLease),
		CreatedAt: now, ExpiresAt: now.Add(IdempotencyRetention),
	}
	held, claimed, err := s.store.ClaimIdempotency(ctx, rec, now)
	if err != nil {
		return nil, nil, storeErr(err)
	}
	if claimed {
		return &IdempotentRequest{svc: s, record: rec, commit: &IdempotencyCommit{KeyID: rec.KeyID, Key: rec.Key, Owner: rec.Owner}}, nil, nil
	}
	switch {
	case !bytes.Equal(held.Fingerprint, fp):
		return nil, nil, Errorf(CodeIdempotencyKeyReused, "this Idempotency-Key was used with another request (method, path or body); use a new key for a new request")
	case held.State == IdempotencyDone:
		return nil, &held, nil
	case now.Before(held.LeaseUntil):
		return nil, nil, ErrIdempotencyLost()
	case held.State == IdempotencyApplied:
		return nil, nil, Errorf(CodeIdempotencyResponseLost, "the request with this Idempotency-Key was carried out, but its answer could not be stored; it will not be carried out again: read the resource to learn the outcome")
	default:
		// A started record of this request past its lease is taken over
		// by the claim; a store that returned it broke that rule.
		return nil, nil, Internal(fmt.Errorf("account: the store did not take over a lapsed idempotency record of key %s", p.KeyID))
	}
}

// Commit returns the claim's IdempotencyCommit, for Principal.Write: the
// store writes made with it commit the record with the change.
func (r *IdempotentRequest) Commit() *IdempotencyCommit { return r.commit }

// Applied reports whether a change was committed with the record.
func (r *IdempotentRequest) Applied() bool { return r.commit.Applied() }

// Finish stores response as the answer to the key, unless another request
// has taken the record over (CodeIdempotencyInProgress). Call it with a
// context that outlives the client, so that an answer the client did not
// wait for is still stored for its retry.
func (r *IdempotentRequest) Finish(ctx context.Context, response []byte) error {
	rec := r.record
	rec.State, rec.Response = IdempotencyDone, response
	return storeErr(r.svc.store.FinishIdempotency(ctx, rec))
}

// Release gives the key up, for a request that failed without changing
// anything, so that a retry is carried out afresh. A record whose change
// was committed is kept: the store refuses to delete it.
func (r *IdempotentRequest) Release(ctx context.Context) error {
	return storeErr(r.svc.store.ReleaseIdempotency(ctx, r.record.KeyID, r.record.Key, r.record.Owner))
}

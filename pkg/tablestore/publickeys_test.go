package tablestore_test

import (
	"testing"
	"time"

	"latchkey/pkg/dynamostore"
	"latchkey/pkg/dynamostore/dynamotest"
)

// TestStore_PutPublicKeys_Monotonic: a key set derived from an older
// signing secret version never replaces one from a newer version, which is
// what an auth instance that read the secret just before a rotation would
// otherwise do; a set from the same or a newer version does.
func TestStore_PutPublicKeys_Monotonic(t *testing.T) {
	client := dynamotest.NewClient(t)
	rotated := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const oldSet, newSet, newerSet = `{"keys":[{"kid":"old"}]}`, `{"keys":[{"kid":"new"},{"kid":"old"}]}`, `{"keys":[{"kid":"newer"},{"kid":"new"}]}`
	for _, tc := range []struct {
		name    string
		jwks    string
		version time.Time
		want    string
	}{
		{"OlderKeepsNewer", oldSet, rotated.Add(-time.Hour), newSet},
		{"OlderByOneMillisecondKeepsNewer", oldSet, rotated.Add(-time.Millisecond), newSet},
		{"SameReplaces", `{"keys":[{"kid":"new"}]}`, rotated, `{"keys":[{"kid":"new"}]}`},
		{"NewerReplaces", newerSet, rotated.Add(time.Hour), newerSet},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := dynamostore.New(client, dynamotest.NewTable(t, client), dynamostore.WithTimeout(dynamotest.Timeout))
			ctx := t.Context()
			if err := s.PutPublicKeys(ctx, []byte(newSet), rotated); err != nil {
				t.Fatalf("PutPublicKeys of the current set: %v", err)
			}
			if err := s.PutPublicKeys(ctx, []byte(tc.jwks), tc.version); err != nil {
				t.Fatalf("PutPublicKeys: got %v, want nil (keeping a newer set is not an error)", err)
			}
			got, _, err := s.Published(ctx)
			if err != nil {
				t.Fatalf("Published: %v", err)
			}
			if string(got) != tc.want {
				t.Errorf("Published: got %s, want %s", got, tc.want)
			}
		})
	}
}

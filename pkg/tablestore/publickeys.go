package tablestore

import (
	"context"
	"time"

	"latchkey/pkg/account"
)

// The config item (CONFIG, JWKS) holds what the auth function publishes for
// the functions that verify tokens without the private key: the JSON Web
// Key Set of the signing keys (jwks, with the version of the signing secret
// it was derived from) and the issuer identifier the deployment recorded
// (issuer). Each is written by an UpdateItem that sets its own attributes
// only, so that neither write erases the other; one GetItem reads both.

// PutPublicKeys stores the JSON Web Key Set of the token signing keys, so
// that the functions that only verify tokens get the public keys from the
// table and never need access to the private key. version is the creation
// time of the signing secret version the set was derived from; the set is
// written only if the stored one is from the same or an older version (or
// there is none), so that an auth instance that read the secret just before
// a rotation cannot put the old keys back over the new ones. Keeping a
// newer set is not an error.
func (s *Store) PutPublicKeys(ctx context.Context, jwks []byte, version time.Time) error {
	// Unix milliseconds: Secrets Manager's precision, and a number, so that
	// the condition can compare it.
	v := version.UnixMilli()
	// An item written before versions were recorded, or holding only the
	// issuer, has none: replace the set.
	cond := attr("version").NotExists().Or(attr("version").LessThanEqual(v))
	upd := set("jwks", jwks).set("version", v)
	err := s.updateConfig(ctx, upd, cond)
	if _, newer := conditionFailed(err); newer {
		return nil
	}
	return storeErr(err)
}

// PutIssuer records the issuer identifier of the deployment, which the
// functions read with the public keys: the URL the API is served at, known
// only once the API exists (the template's IssuerConfig custom resource
// records it).
func (s *Store) PutIssuer(ctx context.Context, issuer string) error {
	return storeErr(s.updateConfig(ctx, set("issuer", issuer), Cond{}))
}

// updateConfig applies upd to the config item, creating it if it is
// missing, under cond (none if the zero Cond). The error is the port's,
// unmapped.
func (s *Store) updateConfig(ctx context.Context, upd Update, cond Cond) error {
	_, err := s.port.Write(ctx, Write{Kind: WriteUpdate, Key: jwksKey(), Update: upd, If: cond}, false)
	return err
}

// Published returns the JSON Web Key Set stored by PutPublicKeys (nil if
// none) and the issuer stored by PutIssuer ("" if none), in one read,
// strongly consistent so that a rotation is seen at once. CodeNotFound
// when neither has been stored.
func (s *Store) Published(ctx context.Context) (jwks []byte, issuer string, err error) {
	var it jwksItem
	found, err := s.getItem(ctx, jwksKey(), &it)
	if err != nil {
		return nil, "", err
	}
	if !found {
		return nil, "", account.ErrPublicKeysNotFound()
	}
	return it.JWKS, it.Issuer, nil
}

// formatsItem is the formats item (CONFIG, FORMATS): account.Formats, one
// attribute each, read by every process every account.FormatsRefresh.
type formatsItem struct {
	InlineRevocationSince *time.Time `dynamodbav:"inline_revocation_since,omitempty"`
	StatusListsSince      *time.Time `dynamodbav:"status_lists_since,omitempty"`
	SetBy                 string     `dynamodbav:"set_by,omitempty"`
}

// Formats returns the formats in force the table records, zero when it
// records none (a table the previous release wrote last).
func (s *Store) Formats(ctx context.Context) (account.Formats, error) {
	var it formatsItem
	if _, err := s.getItem(ctx, formatsKey(), &it); err != nil {
		return account.Formats{}, err
	}
	f := account.Formats{SetBy: it.SetBy}
	if it.InlineRevocationSince != nil {
		f.InlineRevocationSince = it.InlineRevocationSince.UTC()
	}
	if it.StatusListsSince != nil {
		f.StatusListsSince = it.StatusListsSince.UTC()
	}
	return f, nil
}

// PutFormats records f in the formats item, creating it if missing: one
// UpdateItem (the config partition takes no PutItem), which removes a
// format f leaves out, so that it is out of force.
func (s *Store) PutFormats(ctx context.Context, f account.Formats) error {
	upd := set("set_by", f.SetBy)
	for _, a := range []struct {
		name  string
		since time.Time
	}{{"inline_revocation_since", f.InlineRevocationSince}, {"status_lists_since", f.StatusListsSince}} {
		if a.since.IsZero() {
			upd = upd.remove(a.name)
		} else {
			upd = upd.set(a.name, a.since.UTC())
		}
	}
	_, err := s.port.Write(ctx, Write{Kind: WriteUpdate, Key: formatsKey(), Update: upd}, false)
	return storeErr(err)
}

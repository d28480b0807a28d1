package storetest

import (
	"testing"

	"latchkey/pkg/account"
)

func (s suite) createUser(t *testing.T) { testCreate(t, s, userKind) }

func (s suite) getUser(t *testing.T) { testGet(t, s, userKind) }

func (s suite) getUserByEmail(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		f := s.fix(t)
		f.user()
		want := f.user()
		got, err := f.s.GetUserByEmail(f.ctx, want.Email)
		f.ok(err, "GetUserByEmail")
		assertSame(t, "GetUserByEmail", got, want)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		f := s.fix(t)
		f.user()
		_, err := f.s.GetUserByEmail(f.ctx, "nobody@example.com")
		wantErr(t, "GetUserByEmail", err, account.ErrUserNotFound())
	})
}

func (s suite) updateUser(t *testing.T) {
	t.Run("OK", func(t *testing.T) { testUpdateOK(t, s, userKind) })
	t.Run("OnlyPatchedFieldsChange", func(t *testing.T) { testOnlyPatchedFieldsChange(t, s, userKind) })
	t.Run("ErrNotFound", func(t *testing.T) { testUpdateNotFound(t, s, userKind) })
}

func (s suite) deleteUser(t *testing.T) { testDelete(t, s, userKind) }

package account_test

import (
	"strings"
	"testing"
	"time"

	"latchkey/pkg/account"
)

func TestService_Authenticate(t *testing.T) {
	t.Run("ErrUnauthorized", func(t *testing.T) {
		e := newEnv(t)
		for _, c := range []string{"", "lk_unknown", e.secret + "x", "eyJ.eyJ.sig", strings.ToUpper(e.secret)} {
			_, err := e.svc.Authenticate(e.ctx, c)
			if !account.IsCode(err, account.CodeUnauthorized) {
				t.Errorf("Authenticate(%q): got %v, want unauthorized", c, err)
			}
		}
	})
	t.Run("ErrExpiredKey", func(t *testing.T) {
		e := newEnv(t)
		_, secret := e.key(t, "1h", "read:users")
		e.clock.Advance(time.Hour)
		_, err := e.svc.Authenticate(e.ctx, secret)
		wantCode(t, err, account.CodeUnauthorized)
	})
}

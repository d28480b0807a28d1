package account

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
)

// maxCursorLength bounds a cursor before it is decoded and its MAC
// computed. Positions are store keys of a few dozen bytes, so issued
// cursors are about a hundred characters long.
const maxCursorLength = 512

// PageRequest carries the raw paging query parameters of a list request;
// the service validates them so that every list behaves the same.
type PageRequest struct {
	Limit  string // "" means DefaultPageSize
	Cursor string // "" means the first page
}

// List is one page of a list as returned to a client.
type List[T any] struct {
	Items      []T
	HasMore    bool
	NextCursor string
}

// cursorCodec signs store positions into opaque cursors. The list name is
// part of the MAC, so a cursor of one list (or of another organization's
// members) is refused by every other list.
type cursorCodec struct{ key []byte }

func (c cursorCodec) mac(list, pos string) []byte {
	h := hmac.New(sha256.New, c.key)
	h.Write([]byte(list))
	h.Write([]byte{0})
	h.Write([]byte(pos))
	return h.Sum(nil)[:16]
}

func (c cursorCodec) encode(list, pos string) string {
	if pos == "" {
		return ""
	}
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(pos)) + "." + enc.EncodeToString(c.mac(list, pos))
}

func (c cursorCodec) decode(list, cursor string) (string, bool) {
	// Strict: the lenient decoder ignores the unused low bits of the last
	// character, so an altered cursor would decode to the issued one.
	enc := base64.RawURLEncoding.Strict()
	p, m, ok := strings.Cut(cursor, ".")
	pos, err1 := enc.DecodeString(p)
	mac, err2 := enc.DecodeString(m)
	if !ok || err1 != nil || err2 != nil || len(pos) == 0 {
		return "", false
	}
	return string(pos), hmac.Equal(mac, c.mac(list, string(pos)))
}

// params validates a page request for the named list.
func (c cursorCodec) params(list string, r PageRequest) (ListParams, error) {
	var problems Problems
	p := ListParams{Limit: DefaultPageSize}
	if r.Limit != "" {
		n, err := strconv.Atoi(r.Limit)
		if err != nil || n < 1 || n > MaxPageSize {
			problems.Add("limit", "must be an integer from 1 to "+strconv.Itoa(MaxPageSize))
		}
		p.Limit = n
	}
	if r.Cursor != "" {
		var pos string
		ok := len(r.Cursor) <= maxCursorLength // before decoding: the work grows with the length
		if ok {
			pos, ok = c.decode(list, r.Cursor)
		}
		if !ok {
			problems.Add("cursor", "is not a cursor of this list; pass next_cursor from the previous page unchanged")
		}
		p.After = pos
	}
	return p, problems.Err()
}

func toList[T any](c cursorCodec, list string, page Page[T]) List[T] {
	items := page.Items
	if items == nil {
		items = []T{}
	}
	return List[T]{Items: items, HasMore: page.Next != "", NextCursor: c.encode(list, page.Next)}
}

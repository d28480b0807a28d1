package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"latchkey/pkg/account"
)

// MaxBodyBytes is the largest request body accepted; larger ones get 413.
const MaxBodyBytes = 64 << 10

// decode reads a JSON request body into dst, strictly: the media type must
// be JSON, the body at most MaxBodyBytes, a single object with only known
// fields of the right types. Errors are *account.Error with a message that
// names the field at fault where there is one.
func decode(w http.ResponseWriter, r *http.Request, dst any) error {
	if err := checkContentType(r.Header.Get("Content-Type")); err != nil {
		return err
	}
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	return decodeJSON(body, dst)
}

// readBody reads the whole request body, at most MaxBodyBytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, account.Errorf(account.CodePayloadTooLarge, "the request body must be at most %d bytes", MaxBodyBytes)
	case err != nil:
		return nil, account.Errorf(account.CodeInvalidRequest, "the request body could not be read")
	}
	return body, nil
}

func checkContentType(contentType string) error {
	mediaType, params, err := mime.ParseMediaType(contentType)
	if err != nil || mediaType != "application/json" {
		return account.Errorf(account.CodeUnsupportedMediaType, "send the body as Content-Type: application/json")
	}
	for k, v := range params {
		// JSON is UTF-8 (RFC 8259, section 8.1); a charset parameter may say
		// so but must not claim anything else.
		if k != "charset" || !strings.EqualFold(v, "utf-8") {
			return account.Errorf(account.CodeUnsupportedMediaType, "send the body as Content-Type: application/json; the only parameter allowed is charset=utf-8")
		}
	}
	return nil
}

// decodeJSON unmarshals one JSON object into dst and turns the decoder's
// errors into messages a client can act on. encoding/json matches keys
// case-insensitively and lets a repeated key win silently; a first pass over
// the object's keys refuses both, so that only the documented spelling of
// each field, once, gets through. The same pass refuses a string field
// given as "", and null for a field that does not take it: the service
// reads both as a field left out (the default lifetime, no organization,
// no owner), so a client that sends an unset variable would get what it
// never asked for.
func decodeJSON(body []byte, dst any) error {
	if body = bytes.TrimSpace(body); len(body) == 0 {
		return badBody("", "the request body is empty; send a JSON object")
	}
	if body[0] != '{' {
		return badBody("", "the request body must be a JSON object")
	}
	if err := checkText(body); err != nil {
		return err
	}
	if err := checkKeys(body, fieldNames(dst)); err != nil {
		return err
	}
	if err := json.Unmarshal(body, dst); err != nil {
		return decodeError(err)
	}
	return nil
}

// checkKeys walks the top-level object: valid JSON, known keys spelled
// exactly, none repeated, no string field empty, null only where the
// field takes it, nothing after it.
func checkKeys(body []byte, known map[string]reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil { // the opening brace
		return decodeError(err)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return decodeError(err)
		}
		key, _ := tok.(string) // object keys are always strings
		typ, ok := known[key]
		switch {
		case !ok:
			return badBody(key, "is not a field of this request")
		case seen[key]:
			return badBody(key, "appears more than once")
		}
		seen[key] = true
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return decodeError(err)
		}
		switch string(value) {
		case `""`:
			if msg := emptyString(typ); msg != "" {
				return badBody(key, msg)
			}
		case "null":
			// encoding/json leaves the field as it is for null, as if
			// it were left out; only a field whose type reads null
			// itself (nullableString, metadataField) takes it.
			if !reflect.PointerTo(typ).Implements(unmarshalerType) {
				return badBody(key, "must not be null")
			}
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return badBody("", "the request body must hold a single JSON object and nothing after it")
	}
	return nil
}

// checkText refuses a JSON string, key or value, that is not Unicode text:
// invalid UTF-8, or a \u escape of half a surrogate pair. encoding/json
// replaces either with U+FFFD and carries on, so the service would store a
// character the client never sent. The problem names the string's field
// (e.g. "name", "scopes[1]"). Valid bodies, nearly all, cost one pass of
// utf8.Valid and a search for "\u"; only the others are walked token by
// token.
func checkText(body []byte) error {
	valid := utf8.Valid(body)
	if valid && !maySurrogateEscape(body) {
		return nil
	}
	// The decoder hands back strings already repaired, so each string token
	// is checked in the raw bytes it came from. Between two tokens there is
	// only whitespace, a comma or a colon: ASCII.
	dec := json.NewDecoder(bytes.NewReader(body))
	var stack []jsonFrame
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			break // the end, or a syntax error that checkKeys reports
		}
		top := len(stack) - 1
		switch tok := tok.(type) {
		case json.Delim:
			switch tok {
			case '{':
				stack = append(stack, jsonFrame{wantKey: true})
				continue
			case '[':
				stack = append(stack, jsonFrame{array: true})
				continue
			}
			stack = stack[:top] // '}' or ']' ends a value of the enclosing frame
		case string:
			isKey := top >= 0 && !stack[top].array && stack[top].wantKey
			if isKey {
				stack[top].key = tok
			}
			if msg := invalidText(body[start:dec.InputOffset()]); msg != "" {
				return badBody(jsonPath(stack), msg)
			}
			if isKey {
				stack[top].wantKey = false
				continue
			}
		}
		if n := len(stack) - 1; n >= 0 { // a value ended
			if stack[n].array {
				stack[n].index++
			} else {
				stack[n].wantKey = true
			}
		}
	}
	if !valid { // outside any string, or after a syntax error
		at := 0
		for at < len(body) {
			r, size := utf8.DecodeRune(body[at:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			at += size
		}
		return badBody("", fmt.Sprintf("the request body is not valid UTF-8 (at byte %d)", at))
	}
	return nil
}

// jsonFrame is one open object or array while checkText walks a body.
type jsonFrame struct {
	array   bool
	key     string // object: the key of the current member
	wantKey bool   // object: the next string is a key
	index   int    // array: the index of the current element
}

// jsonPath names the current value the way field errors do: name,
// scopes[1], a.b.
func jsonPath(stack []jsonFrame) string {
	var b strings.Builder
	for _, f := range stack {
		if f.array {
			fmt.Fprintf(&b, "[%d]", f.index)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(f.key)
	}
	return b.String()
}

// maySurrogateEscape reports whether b holds \uD800 to \uDFFF in any case.
// A false positive (an escaped backslash before "ud800") only costs the
// walk, which reads escapes properly.
func maySurrogateEscape(b []byte) bool {
	for {
		i := bytes.Index(b, []byte(`\u`))
		if i < 0 || i+3 >= len(b) {
			return false
		}
		if b[i+2]|0x20 == 'd' && strings.IndexByte("89abcdefABCDEF", b[i+3]) >= 0 {
			return true
		}
		b = b[i+2:]
	}
}

// invalidText returns what is wrong with the JSON string literal in raw
// (possibly preceded by whitespace, a comma or a colon), or "". The literal
// has passed the decoder, so its escapes are complete.
func invalidText(raw []byte) string {
	if !utf8.Valid(raw) {
		return "is not valid UTF-8"
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		i++
		if raw[i] != 'u' {
			continue
		}
		r := hex4(raw[i+1 : i+5])
		i += 4
		switch {
		case r >= 0xD800 && r <= 0xDBFF: // high half: a low half must follow
			if i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
				if low := hex4(raw[i+3 : i+7]); low >= 0xDC00 && low <= 0xDFFF {
					i += 6
					continue
				}
			}
			return "holds an unpaired UTF-16 surrogate escape, which is not a character"
		case r >= 0xDC00 && r <= 0xDFFF:
			return "holds an unpaired UTF-16 surrogate escape, which is not a character"
		}
	}
	return ""
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) rune {
	n, _ := strconv.ParseUint(string(b), 16, 32) // the decoder has checked the digits
	return rune(n)
}

// fieldNames returns the JSON names of the fields of the struct dst points
// to, with their types. Request types are few and small; reflection per
// request costs less than a cache would complicate.
func fieldNames(dst any) map[string]reflect.Type {
	t := reflect.TypeOf(dst).Elem()
	names := make(map[string]reflect.Type, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		names[name] = t.Field(i).Type
	}
	return names
}

var (
	nullableStringType = reflect.TypeFor[nullableString]()
	unmarshalerType    = reflect.TypeFor[json.Unmarshaler]()
)

// emptyString is the problem with "" as the value of a field of type t, or
// "" for a field that is not a string, whose decoder names the wrong type.
// No string field of a request takes "": a field left out, or null where
// the field takes it, says "none" or "the default"; "" says nothing a client
// can have meant for sure. The message gives no advice: the decoder does
// not know whether the field is required.
func emptyString(t reflect.Type) string {
	switch {
	case t == nullableStringType:
		return "must not be empty; send null for none"
	case t.Kind() == reflect.String || (t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.String):
		return "must not be empty"
	}
	return ""
}

func decodeError(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var own *account.Error
	switch {
	case errors.As(err, &own):
		// A field's own UnmarshalJSON said what is wrong (metadataField).
		return own
	case errors.As(err, &syntax):
		return badBody("", fmt.Sprintf("the request body is not valid JSON (at byte %d)", syntax.Offset))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badBody("", "the request body is not valid JSON (it ends early)")
	case errors.As(err, &typ):
		if typ.Field == "" {
			return badBody("", "the request body must be a JSON object")
		}
		// For an element of an array, Type is the element's type: the
		// "not ..." part tells the client which value was wrong.
		return badBody(typ.Field, "must be "+jsonType(typ.Type.Kind())+", not "+typ.Value)
	}
	return badBody("", "the request body is not valid JSON")
}

// jsonType names a Go kind the way a JSON client thinks of it.
func jsonType(kind reflect.Kind) string {
	switch kind {
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Bool:
		return "a boolean"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a number"
}

func badBody(field, message string) error {
	e := &account.Error{Code: account.CodeInvalidRequest, Message: message}
	if field != "" {
		e.Message = "the request is invalid"
		e.Fields = []account.FieldError{{Field: field, Message: message}}
	}
	return e
}

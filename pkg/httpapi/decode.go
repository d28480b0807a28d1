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
	"strings"

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
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return account.Errorf(account.CodePayloadTooLarge, "the request body must be at most %d bytes", MaxBodyBytes)
	case err != nil:
		return account.Errorf(account.CodeInvalidRequest, "the request body could not be read")
	}
	return decodeJSON(body, dst)
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
// each field, once, gets through.
func decodeJSON(body []byte, dst any) error {
	if body = bytes.TrimSpace(body); len(body) == 0 {
		return badBody("", "the request body is empty; send a JSON object")
	}
	if body[0] != '{' {
		return badBody("", "the request body must be a JSON object")
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
// exactly, none repeated, nothing after it.
func checkKeys(body []byte, known map[string]bool) error {
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
		switch {
		case !known[key]:
			return badBody(key, "is not a field of this request")
		case seen[key]:
			return badBody(key, "appears more than once")
		}
		seen[key] = true
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return decodeError(err)
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

// fieldNames returns the JSON names of the fields of the struct dst points
// to. Request types are few and small; reflection per request costs less
// than a cache would complicate.
func fieldNames(dst any) map[string]bool {
	t := reflect.TypeOf(dst).Elem()
	names := make(map[string]bool, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		names[name] = true
	}
	return names
}

func decodeError(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
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

package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
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
// errors into messages a client can act on.
func decodeJSON(body []byte, dst any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return badBody("", "the request body is empty; send a JSON object")
	}
	if body = bytes.TrimSpace(body); body[0] != '{' {
		return badBody("", "the request body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return badBody("", "the request body must hold a single JSON object and nothing after it")
	}
	return nil
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
		return badBody(typ.Field, "must be "+jsonType(typ.Type.Kind().String()))
	}
	// encoding/json reports unknown fields only in the message.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return badBody(name, "is not a field of this request")
	}
	return badBody("", "the request body is not valid JSON")
}

// jsonType names a Go kind the way a JSON client thinks of it.
func jsonType(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "slice", "array":
		return "an array"
	case "bool":
		return "a boolean"
	case "struct", "map":
		return "an object"
	case "ptr":
		return "a string" // the only pointers in request bodies are *string
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

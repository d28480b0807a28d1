package httpapi_test

import (
	"errors"
	"maps"
	"testing"

	"latchkey/pkg/account"
	"latchkey/pkg/httpapi"
)

// TestDecodeMetadata: the metadata of a request body is an object of
// strings or null, told apart from its absence; anything else is refused
// naming the field, including what encoding/json would accept silently.
func TestDecodeMetadata(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		set        bool
		want       account.Metadata
	}{
		{"Absent", `{}`, false, nil},
		{"Null", `{"metadata":null}`, true, nil},
		{"Empty", `{"metadata":{}}`, true, account.Metadata{}},
		{"Strings", `{"metadata":{"plan":"pro","crm":"hubspot:42","empty":""}}`, true, account.Metadata{"plan": "pro", "crm": "hubspot:42", "empty": ""}},
		{"Escapes", `{"metadata":{"k\u00e9y":"line\none"}}`, true, account.Metadata{"kéy": "line\none"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, got, err := httpapi.DecodeMetadata([]byte(tc.body))
			if err != nil {
				t.Fatalf("DecodeMetadata(%s): %v", tc.body, err)
			}
			if set != tc.set || !maps.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
				t.Errorf("DecodeMetadata(%s): got %v %#v, want %v %#v", tc.body, set, got, tc.set, tc.want)
			}
		})
	}
	for _, tc := range []struct{ name, body, field string }{
		{"Array", `{"metadata":["a"]}`, "metadata"},
		{"String", `{"metadata":"a"}`, "metadata"},
		{"Number", `{"metadata":1}`, "metadata"},
		{"NumberValue", `{"metadata":{"n":1}}`, "metadata.n"},
		{"NullValue", `{"metadata":{"n":null}}`, "metadata.n"},
		{"ObjectValue", `{"metadata":{"n":{"a":"b"}}}`, "metadata.n"},
		{"BoolValue", `{"metadata":{"a":"x","n":true}}`, "metadata.n"},
		{"RepeatedKey", `{"metadata":{"a":"1","a":"2"}}`, "metadata.a"},
		{"InvalidUTF8Value", "{\"metadata\":{\"a\":\"\xff\"}}", "metadata.a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := httpapi.DecodeMetadata([]byte(tc.body))
			var e *account.Error
			if !errors.As(err, &e) || e.Code != account.CodeInvalidRequest || len(e.Fields) != 1 || e.Fields[0].Field != tc.field {
				t.Fatalf("DecodeMetadata(%s): got %v, want invalid_request naming %q", tc.body, err, tc.field)
			}
		})
	}
}

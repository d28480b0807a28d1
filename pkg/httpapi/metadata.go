package httpapi

import (
	"bytes"
	"encoding/json"

	"latchkey/pkg/account"
)

// metadataField is the "metadata" member of a request body. Set records
// that the body named it, so that an update can tell "leave it as it is"
// (absent) from "remove it" (null, or {}). encoding/json calls UnmarshalJSON
// for a null too, because the field is not a pointer.
type metadataField struct {
	Set   bool
	Value account.Metadata
}

// UnmarshalJSON takes an object of strings, or null. It refuses what
// encoding/json would let through without a word: a key given twice (the
// last would win) and a value that is not a string; each problem names
// "metadata.<key>". The decoder has checked that b is one valid JSON value.
func (f *metadataField) UnmarshalJSON(b []byte) error {
	f.Set, f.Value = true, nil
	if string(b) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return badBody("metadata", "must be an object whose values are strings, or null")
	}
	m := account.Metadata{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return decodeError(err)
		}
		k, _ := tok.(string) // object keys are always strings
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return decodeError(err)
		}
		if _, dup := m[k]; dup {
			return badBody("metadata."+k, "appears more than once")
		}
		var v string
		if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &v) != nil {
			return badBody("metadata."+k, "must be a string")
		}
		m[k] = v
	}
	f.Value = m
	return nil
}

// update is the field as an account update takes it: nil when the body did
// not name it, else the new metadata (nil or empty removes it).
func (f metadataField) update() *account.Metadata {
	if !f.Set {
		return nil
	}
	return &f.Value
}

// metadataResponse is metadata as every response shows it: always an
// object, {} when there is none, so that clients need not handle null.
func metadataResponse(m account.Metadata) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// nullableString is a string member that null sets to none (external_id):
// in a create as if it were left out, in an update it removes the value.
// Set records that the body named it, Value is "" for null.
type nullableString struct {
	Set   bool
	Value string
}

// UnmarshalJSON takes a string or null. encoding/json names the field in
// the type error of anything else.
func (f *nullableString) UnmarshalJSON(b []byte) error {
	f.Set, f.Value = true, ""
	if string(b) == "null" {
		return nil
	}
	return json.Unmarshal(b, &f.Value)
}

// update is the field as an account update takes it: nil when the body did
// not name it, else the new value ("" removes it).
func (f nullableString) update() *string {
	if !f.Set {
		return nil
	}
	return &f.Value
}

// optionalString is a string that may be absent, JSON null.
func optionalString(s string) *string {
	if s == "" {
		return nil
	}
	p := new(string) // not &s: s would be on the heap even when "" (a verify makes two)
	*p = s
	return p
}

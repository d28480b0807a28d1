package account_test

import (
	"strings"
	"testing"

	"latchkey/pkg/account"
)

func TestMetadata_Validate(t *testing.T) {
	full := account.Metadata{}
	for i := range account.MaxMetadataKeys {
		full["k"+itoa(int64(i))] = "v"
	}
	tooMany := account.Metadata{"extra": "v"}
	for k, v := range full {
		tooMany[k] = v
	}
	// 8 values of 500 characters are 4000 bytes, plus 8 keys of 2 bytes:
	// 4016, under 4096; a ninth crosses it.
	big := account.Metadata{}
	for i := range 9 {
		big["k"+itoa(int64(i))] = strings.Repeat("x", account.MaxMetadataValueLength)
	}
	atLimit := account.Metadata{
		"a": strings.Repeat("é", account.MaxMetadataValueLength), // 1000 bytes, 500 characters
		"b": strings.Repeat("é", account.MaxMetadataValueLength),
		"c": strings.Repeat("é", account.MaxMetadataValueLength),
		"d": strings.Repeat("é", account.MaxMetadataValueLength),
		"e": strings.Repeat("x", account.MaxMetadataBytes-4000-5),
	}
	tests := []struct {
		name   string
		m      account.Metadata
		fields []string // nil: valid
	}{
		{"Nil", nil, nil},
		{"Empty", account.Metadata{}, nil},
		{"OK", account.Metadata{"plan_id": "p_123", "crm": "hubspot:42", "note": "line one\nline two"}, nil},
		{"MaxKeys", full, nil},
		{"LongestKeyAndValue", account.Metadata{strings.Repeat("ключ", 10): strings.Repeat("ü", account.MaxMetadataValueLength)}, nil},
		{"ExactlyMaxBytes", atLimit, nil},
		{"TooManyKeys", tooMany, []string{"metadata"}},
		{"EmptyKey", account.Metadata{"": "v"}, []string{"metadata"}},
		{"LongKey", account.Metadata{strings.Repeat("k", account.MaxMetadataKeyLength+1): "v"}, []string{"metadata"}},
		{"ControlInKey", account.Metadata{"a\tb": "v"}, []string{"metadata"}},
		{"InvalidUTF8Key", account.Metadata{"a\xffb": "v"}, []string{"metadata"}},
		{"LongValue", account.Metadata{"note": strings.Repeat("v", account.MaxMetadataValueLength+1)}, []string{"metadata.note"}},
		{"InvalidUTF8Value", account.Metadata{"note": "a\xff"}, []string{"metadata.note"}},
		{"TooLargeInAll", big, []string{"metadata"}},
		{"OneFieldPerProblemSorted", account.Metadata{"b": strings.Repeat("v", 501), "a": strings.Repeat("v", 501)}, []string{"metadata.a", "metadata.b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.m.Validate("metadata")
			if tt.fields == nil {
				if err != nil {
					t.Fatalf("Validate: %v, want nil", err)
				}
				return
			}
			wantFields(t, err, tt.fields...)
		})
	}
}

// TestMetadata_ValidateBounded: a map far over the key count is refused
// from its count, before any work per entry.
func TestMetadata_ValidateBounded(t *testing.T) {
	huge := account.Metadata{}
	for i := range 100000 {
		huge["k"+itoa(int64(i))] = strings.Repeat("v", 600)
	}
	wantFields(t, huge.Validate("metadata"), "metadata")
	if got := allocated(func() { huge.Validate("metadata") }); got > 4<<10 {
		t.Errorf("allocated %d bytes per call, want at most 4 KiB: the entries are worked on before their count is checked", got)
	}
}

func TestValidExternalID(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"crm-4711", true},
		{"a", true},
		{"Acme Corp/EU #3", true},
		{"ürün:42", true},
		{"user@example.com", true},
		{strings.Repeat("é", account.MaxExternalIDLength), true},
		{"", false},
		{strings.Repeat("x", account.MaxExternalIDLength+1), false},
		{strings.Repeat("x", 10000), false},
		{" leading", false},
		{"trailing ", false},
		{"tab\there", false},
		{"new\nline", false},
		{"nbsp\u00a0", false},
		{"zero\u200bwidth", false},
		{"bad\xff", false},
	} {
		if got := account.ValidExternalID(tc.s); got != tc.want {
			t.Errorf("ValidExternalID(%q): got %v, want %v", tc.s, got, tc.want)
		}
	}
}

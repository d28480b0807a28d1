package httpapi

import "latchkey/pkg/account"

// DecodeMetadata decodes body, a JSON object with one field "metadata", the
// way a handler decodes a request that takes metadata, and returns the
// field: whether the body named it, and its value.
func DecodeMetadata(body []byte) (set bool, m account.Metadata, err error) {
	var req struct {
		Metadata metadataField `json:"metadata"`
	}
	if err := decodeJSON(body, &req); err != nil {
		return false, nil, err
	}
	return req.Metadata.Set, req.Metadata.Value, nil
}

// CodeStatuses returns every error code with the HTTP status it is sent
// with.
func CodeStatuses() map[account.Code]int {
	m := make(map[account.Code]int, len(codes))
	for code, c := range codes {
		m[code] = c.status
	}
	return m
}

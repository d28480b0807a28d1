package logbuf

import (
	"context"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// JSONHandler is a slog.Handler that writes to a Writer exactly what
// slog.JSONHandler writes, with less work for the records a server logs on
// every request: flat ones whose attributes are strings, integers, floats,
// booleans, durations and times. slog's handler took about as long to
// format such a line as the rest of a verify request took to serve.
// Anything else (a group, an attribute added with WithAttrs or WithGroup,
// another kind of value, an empty key, a non-finite float, a year outside
// 0-9999, options with ReplaceAttr or AddSource) goes to a
// slog.JSONHandler over the same Writer, so the output is the same either
// way; TestJSONHandler_SameAsSlog holds the two to that.
type JSONHandler struct {
	w     *Writer
	level slog.Leveler
	slow  slog.Handler
	fast  bool
}

var _ slog.Handler = (*JSONHandler)(nil)

// NewJSONHandler returns a JSONHandler writing to w with opts, as
// slog.NewJSONHandler(w, opts) would.
func NewJSONHandler(w *Writer, opts *slog.HandlerOptions) *JSONHandler {
	if opts == nil {
		opts = &slog.HandlerOptions{}
	}
	h := &JSONHandler{w: w, level: opts.Level, slow: slog.NewJSONHandler(w, opts)}
	if h.level == nil {
		h.level = slog.LevelInfo
	}
	h.fast = opts.ReplaceAttr == nil && !opts.AddSource
	return h
}

// Enabled implements slog.Handler.
func (h *JSONHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.level.Level()
}

// WithAttrs implements slog.Handler: slog's handler serves the result.
func (h *JSONHandler) WithAttrs(attrs []slog.Attr) slog.Handler { return h.slow.WithAttrs(attrs) }

// WithGroup implements slog.Handler: slog's handler serves the result.
func (h *JSONHandler) WithGroup(name string) slog.Handler { return h.slow.WithGroup(name) }

var lineBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// Handle implements slog.Handler. The line is written with one Write, so
// that lines never interleave.
func (h *JSONHandler) Handle(ctx context.Context, r slog.Record) error {
	if !h.fast || !flat(r) {
		return h.slow.Handle(ctx, r)
	}
	bp := lineBuffers.Get().(*[]byte)
	b := append((*bp)[:0], '{')
	if !r.Time.IsZero() {
		b = append(b, `"time":"`...)
		b = r.Time.Round(0).AppendFormat(b, time.RFC3339Nano)
		b = append(b, `",`...)
	}
	b = append(b, `"level":`...)
	b = appendString(b, r.Level.String())
	b = append(b, `,"msg":`...)
	b = appendString(b, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b = append(b, ',')
		b = appendString(b, a.Key)
		b = append(b, ':')
		b = appendValue(b, a.Value)
		return true
	})
	b = append(b, '}', '\n')
	_, err := h.w.Write(b)
	if cap(b) <= 16<<10 {
		*bp = b
		lineBuffers.Put(bp)
	}
	return err
}

// flat reports whether every attribute of r is one that Handle formats
// itself.
func flat(r slog.Record) bool {
	if y := r.Time.Year(); !r.Time.IsZero() && (y < 0 || y >= 10000) {
		return false
	}
	ok := true
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "" {
			ok = false
			return false
		}
		switch v := a.Value; v.Kind() {
		case slog.KindString, slog.KindInt64, slog.KindUint64, slog.KindBool, slog.KindDuration:
		case slog.KindFloat64:
			ok = !math.IsInf(v.Float64(), 0) && !math.IsNaN(v.Float64())
		case slog.KindTime:
			y := v.Time().Year()
			ok = y >= 0 && y < 10000
		default: // groups, LogValuers, any
			ok = false
		}
		return ok
	})
	return ok
}

// appendValue appends v, of a kind flat accepts, as slog's JSON handler
// does.
func appendValue(b []byte, v slog.Value) []byte {
	switch v.Kind() {
	case slog.KindString:
		return appendString(b, v.String())
	case slog.KindInt64:
		return strconv.AppendInt(b, v.Int64(), 10)
	case slog.KindUint64:
		return strconv.AppendUint(b, v.Uint64(), 10)
	case slog.KindBool:
		return strconv.AppendBool(b, v.Bool())
	case slog.KindDuration:
		return strconv.AppendInt(b, int64(v.Duration()), 10) // as json.Marshal does
	case slog.KindTime:
		b = append(b, '"')
		b = v.Time().AppendFormat(b, time.RFC3339Nano)
		return append(b, '"')
	default: // KindFloat64, finite
		return appendFloat(b, v.Float64())
	}
}

// appendFloat appends f as encoding/json does (which slog calls for
// floats): the shortest decimal, in exponent form only below 1e-6 or from
// 1e21, with a one-digit negative exponent not padded.
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendString appends s quoted and escaped as slog's JSON handler does:
// quote and backslash escaped, \n \r \t, other control characters as
// \u00XX, invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped; no HTML
// escaping.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

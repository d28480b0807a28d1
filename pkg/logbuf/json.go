package logbuf

import (
	"context"
	"io"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"latchkey/pkg/jsonstr"
)

// JSONHandler is a slog.Handler that writes exactly what slog.JSONHandler
// writes, with less work for the records a server logs on every request:
// flat ones whose attributes (the record's, and those added with
// WithAttrs) are strings, integers, floats, booleans, durations and times.
// slog's handler took about as long to format such a line as the rest of a
// verify request took to serve. Anything else (a group, WithGroup, another
// kind of value, an empty key, a non-finite float, a year outside 0-9999,
// options with ReplaceAttr or AddSource) goes to a slog.JSONHandler over
// the same writer, so the output is the same either way;
// TestJSONHandler_SameAsSlog holds the two to that.
type JSONHandler struct {
	w     io.Writer // serialises whole writes: a *Writer, or a lockedWriter
	level slog.Leveler
	slow  slog.Handler
	fast  bool
	pre   []byte // the attributes added with WithAttrs, formatted, each after a comma
}

var _ slog.Handler = (*JSONHandler)(nil)

// NewJSONHandler returns a JSONHandler writing to w with opts, as
// slog.NewJSONHandler(w, opts) would. Each line is one Write to w. A
// *Writer batches them; any other w (os.Stdout in a Lambda function, whose
// lines must be out before the invocation returns) gets one write per
// line, one at a time.
func NewJSONHandler(w io.Writer, opts *slog.HandlerOptions) *JSONHandler {
	if opts == nil {
		opts = &slog.HandlerOptions{}
	}
	if _, ok := w.(*Writer); !ok {
		w = &lockedWriter{w: w}
	}
	h := &JSONHandler{w: w, level: opts.Level, slow: slog.NewJSONHandler(w, opts)}
	if h.level == nil {
		h.level = slog.LevelInfo
	}
	h.fast = opts.ReplaceAttr == nil && !opts.AddSource
	return h
}

// lockedWriter makes the writes of the fast path and of slog's handler,
// which locks only its own, one at a time.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Enabled implements slog.Handler.
func (h *JSONHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.level.Level()
}

// WithAttrs implements slog.Handler. Attributes that Handle formats itself
// are formatted once, here, as slog's handler does; any other makes the
// result slog's handler.
func (h *JSONHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	if !h.fast {
		return h.slow.WithAttrs(attrs)
	}
	pre := slices.Clip(h.pre) // an append copies: h keeps its own
	for _, a := range attrs {
		if !flatAttr(a) {
			return h.slow.WithAttrs(attrs)
		}
		pre = appendAttr(pre, a)
	}
	h2 := *h
	h2.pre, h2.slow = pre, h.slow.WithAttrs(attrs)
	return &h2
}

// WithGroup implements slog.Handler: slog's handler serves the result.
func (h *JSONHandler) WithGroup(name string) slog.Handler { return h.slow.WithGroup(name) }

var lineBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// Handle implements slog.Handler. The line is written with one Write, so
// that lines never interleave.
func (h *JSONHandler) Handle(ctx context.Context, r slog.Record) error {
	if y := r.Time.Year(); !h.fast || (!r.Time.IsZero() && (y < 0 || y >= 10000)) {
		return h.slow.Handle(ctx, r)
	}
	bp := lineBuffers.Get().(*[]byte)
	defer putLineBuffer(bp)
	b := h.appendHead((*bp)[:0], r.Time, r.Level, r.Message)
	// One pass: formatted as they are checked, and dropped for slog's
	// handler at the first that Handle does not format.
	flat := true
	r.Attrs(func(a slog.Attr) bool {
		if flat = flatAttr(a); flat {
			b = appendAttr(b, a)
		}
		return flat
	})
	*bp = b
	if !flat {
		return h.slow.Handle(ctx, r)
	}
	b = append(b, '}', '\n')
	*bp = b
	_, err := h.w.Write(b)
	return err
}

func putLineBuffer(bp *[]byte) {
	if cap(*bp) <= 16<<10 {
		lineBuffers.Put(bp)
	}
}

// appendHead appends the start of a line: the opening brace, the time
// (unless zero), the level, the message and the attributes added with
// WithAttrs.
func (h *JSONHandler) appendHead(b []byte, t time.Time, level slog.Level, msg string) []byte {
	b = append(b, '{')
	if !t.IsZero() {
		b = append(b, `"time":"`...)
		b = appendTime(b, t)
		b = append(b, `",`...)
	}
	b = append(b, `"level":`...)
	b = jsonstr.AppendSlog(b, level.String())
	b = append(b, `,"msg":`...)
	b = jsonstr.AppendSlog(b, msg)
	return append(b, h.pre...)
}

// Request is the line a server logs for each request it has answered.
type Request struct {
	Time      time.Time
	Method    string
	Route     string
	Status    int
	Duration  time.Duration
	RequestID string
}

// Record returns the slog.Record that r's line stands for: message
// "request" at level INFO, with the attributes method, route, status,
// duration_ms (in milliseconds, to the microsecond) and request_id.
func (r Request) Record() slog.Record {
	rec := slog.NewRecord(r.Time, slog.LevelInfo, "request", 0)
	rec.AddAttrs(slog.String("method", r.Method), slog.String("route", r.Route), slog.Int("status", r.Status),
		slog.Float64("duration_ms", float64(r.Duration.Microseconds())/1000), slog.String("request_id", r.RequestID))
	return rec
}

// LogRequest writes the line of r at level INFO, byte for byte as Handle
// writes r.Record(); TestJSONHandler_LogRequest holds it to that.
// It takes no slog.Record: building one and walking its attributes cost
// more than formatting them. The caller checks Enabled first, as
// slog.Logger does.
func (h *JSONHandler) LogRequest(r Request) error {
	if y := r.Time.Year(); !h.fast || (!r.Time.IsZero() && (y < 0 || y >= 10000)) {
		return h.Handle(context.Background(), r.Record())
	}
	bp := lineBuffers.Get().(*[]byte)
	defer putLineBuffer(bp)
	b := h.appendHead((*bp)[:0], r.Time, slog.LevelInfo, "request")
	b = append(b, `,"method":`...)
	b = jsonstr.AppendSlog(b, r.Method)
	b = append(b, `,"route":`...)
	b = jsonstr.AppendSlog(b, r.Route)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(r.Status), 10)
	b = append(b, `,"duration_ms":`...)
	b = appendMillis(b, r.Duration.Microseconds())
	b = append(b, `,"request_id":`...)
	b = jsonstr.AppendSlog(b, r.RequestID)
	b = append(b, '}', '\n')
	*bp = b
	_, err := h.w.Write(b)
	return err
}

// appendMillis appends us microseconds in milliseconds as appendFloat
// appends float64(us)/1000: the shortest decimal of a quotient of at most
// 15 digits by 1000 is that quotient, its trailing zeros trimmed. Integer
// arithmetic takes a tenth of the time of the shortest-float search.
func appendMillis(b []byte, us int64) []byte {
	if us < 0 || us >= 1e15 {
		return appendFloat(b, float64(us)/1000)
	}
	b = strconv.AppendInt(b, us/1000, 10)
	return appendFraction(b, us%1000, 3)
}

// appendFraction appends a point and n as a fraction of width digits, its
// trailing zeros trimmed, or nothing when n is 0: "123" of width 9 is
// ".000000123", 120 of width 3 is ".12". n must be below 10^width, width
// at most 9.
func appendFraction(b []byte, n int64, width int) []byte {
	if n == 0 {
		return b
	}
	digits := [10]byte{'.'}
	for i := width; i > 0; i-- {
		digits[i] = byte('0' + n%10)
		n /= 10
	}
	end := width + 1
	for digits[end-1] == '0' {
		end--
	}
	return append(b, digits[:end]...)
}

// second is the text of one second of one location, as RFC3339Nano
// writes it: the date and time up to the seconds, and the zone.
type second struct {
	unix       int64
	loc        *time.Location
	date, zone []byte
}

// lastSecond is the second of the latest time appendTime wrote: a server
// logs many lines in each.
var lastSecond atomic.Pointer[second]

// appendTime appends t formatted with time.RFC3339Nano, reusing the text
// of t's second when the line before was of the same second: formatting
// a date costs more than the rest of a request line's time.
func appendTime(b []byte, t time.Time) []byte {
	s := lastSecond.Load()
	if s == nil || s.unix != t.Unix() || s.loc != t.Location() {
		s = &second{unix: t.Unix(), loc: t.Location(),
			date: t.AppendFormat(nil, "2006-01-02T15:04:05"), zone: t.AppendFormat(nil, "Z07:00")}
		lastSecond.Store(s)
	}
	b = append(b, s.date...)
	b = appendFraction(b, int64(t.Nanosecond()), 9) // .999999999
	return append(b, s.zone...)
}

// appendAttr appends a comma and a, of a kind flatAttr accepts.
func appendAttr(b []byte, a slog.Attr) []byte {
	b = append(b, ',')
	b = jsonstr.AppendSlog(b, a.Key)
	b = append(b, ':')
	return appendValue(b, a.Value)
}

// flatAttr reports whether a is an attribute that Handle formats itself.
func flatAttr(a slog.Attr) bool {
	if a.Key == "" {
		return false
	}
	switch v := a.Value; v.Kind() {
	case slog.KindString, slog.KindInt64, slog.KindUint64, slog.KindBool, slog.KindDuration:
		return true
	case slog.KindFloat64:
		return !math.IsInf(v.Float64(), 0) && !math.IsNaN(v.Float64())
	case slog.KindTime:
		y := v.Time().Year()
		return y >= 0 && y < 10000
	default: // groups, LogValuers, any
		return false
	}
}

// appendValue appends v, of a kind flat accepts, as slog's JSON handler
// does.
func appendValue(b []byte, v slog.Value) []byte {
	switch v.Kind() {
	case slog.KindString:
		return jsonstr.AppendSlog(b, v.String())
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

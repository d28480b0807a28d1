package logbuf_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"latchkey/pkg/logbuf"
)

// both logs the same records through slog.JSONHandler and logbuf's, and
// returns the two outputs. Ours logs them twice, into a Writer and
// straight into a buffer, and fails t unless both give the same.
func both(t *testing.T, opts *slog.HandlerOptions, log func(l *slog.Logger)) (want, got string) {
	t.Helper()
	var std, ours, direct bytes.Buffer
	log(slog.New(slog.NewJSONHandler(&std, opts)))
	w := logbuf.New(&ours, logbuf.Options{FlushInterval: time.Hour})
	log(slog.New(logbuf.NewJSONHandler(w, opts)))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	log(slog.New(logbuf.NewJSONHandler(&direct, opts)))
	if a, b := stamp.ReplaceAllString(ours.String(), "T"), stamp.ReplaceAllString(direct.String(), "T"); a != b {
		t.Errorf("into a Writer\n%s\nstraight\n%s", a, b)
	}
	// The loggers stamp each record with the time it was logged; the
	// formatting of times is checked by the attributes and by Time.
	return stamp.ReplaceAllString(std.String(), `"time$1":"T"`), stamp.ReplaceAllString(ours.String(), `"time$1":"T"`)
}

var stamp = regexp.MustCompile(`"time(!?)":"[^"]*"`)

type valuer struct{}

func (valuer) LogValue() slog.Value { return slog.StringValue("resolved") }

// TestJSONHandler_SameAsSlog: whatever is logged, the line is byte for
// byte what slog.JSONHandler writes: the request line, every kind of
// value on its edges, strings on every escaping branch, and each case
// that takes slog's own path.
func TestJSONHandler_SameAsSlog(t *testing.T) {
	at := time.Date(2026, 11, 23, 2, 24, 29, 123456789, time.FixedZone("x", -7200))
	strs := []string{"", "GET /v1/auth/verify", `q"b\s`, "\x00\x01\b\f\n\r\t\x1f\x7f", "<&>", "é 日本 🔑", "\u2028\u2029", "bad \xff utf-8", "cut \xe2\x82"}
	floats := []float64{0, -0, 0.123, 1, 1e-6, 9.99e-7, 1e20, 1e21, -1.5e-300, math.MaxFloat64, math.SmallestNonzeroFloat64, 123456.789}
	cases := map[string]func(l *slog.Logger){
		"Request": func(l *slog.Logger) {
			l.LogAttrs(context.Background(), slog.LevelInfo, "request", slog.String("method", "GET"), slog.String("route", "GET /v1/auth/verify"),
				slog.Int("status", 200), slog.Float64("duration_ms", 0.123), slog.String("request_id", "0123456789abcdef0123456789abcdef"))
		},
		"Kinds": func(l *slog.Logger) {
			for _, s := range strs {
				l.Warn(s, s+"k", s, "i", -42, "u", uint64(math.MaxUint64), "b", true, "d", 1500*time.Millisecond, "t", at)
			}
			for _, f := range floats {
				l.Error("float", "f", f, "neg", -f)
			}
			l.Log(context.Background(), slog.Level(2), "info+2")
			l.Debug("not shown")
		},
		"Fallbacks": func(l *slog.Logger) {
			l.Info("group", slog.Group("g", "a", 1))
			l.Info("any", "err", errors.New("boom"), "m", map[string]int{"x": 1})
			l.Info("valuer", "v", valuer{})
			l.Info("nan", "f", math.NaN(), "inf", math.Inf(1))
			l.Info("empty key", "", "v")
			l.Info("year", "t", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))
			l.With("k", "v").WithGroup("g").Info("with, then group", "a", 1)
			l.WithGroup("g").Info("group", "a", 1)
			l.WithGroup("g").With("k", "v").Info("group, then with", "a", 1)
			l.With("err", errors.New("boom")).Info("with any")
			l.With("k", "v", "v", valuer{}).Info("with a valuer after a flat one")
			l.With("", "v").Info("with an empty key")
			l.With(slog.Group("g", "a", 1)).Info("with a group")
			l.With("f", math.Inf(-1)).Info("with a non-finite float")
		},
		"With": func(l *slog.Logger) {
			fn := l.With("function", "auth")
			fn.LogAttrs(context.Background(), slog.LevelInfo, "request", slog.String("method", "GET"), slog.String("route", "GET /v1/auth/verify"),
				slog.Int("status", 200), slog.Float64("duration_ms", 0.123), slog.String("request_id", "0123456789abcdef0123456789abcdef"))
			fn.Info("no attributes")
			fn.With().Info("empty with")
			more := fn.With("i", -42, "u", uint64(7), "b", false, "d", time.Second, "t", at, "f", 1e21, "s", "q\"\u2028\xff")
			more.Warn("kinds", "k", "v")
			fn.Info("the first logger keeps its own", "k", "v")
			more.With("again", 1).Info("chained")
			x, y := more.With("x", 1), more.With("y", "two") // siblings: neither writes over the other
			x.Info("x")
			y.Info("y")
			fn.Info("a record attribute of another kind", "err", errors.New("boom"))
			fn.Info("dup", "function", "users")
		},
	}
	for name, log := range cases {
		t.Run(name, func(t *testing.T) {
			if want, got := both(t, nil, log); got != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
	t.Run("Time", func(t *testing.T) {
		// Every fraction length, zones on both sides of UTC, before 1970,
		// and one second in two zones in turn (appendTime keeps the text
		// of the last second it wrote).
		times := []time.Time{at, at.UTC(), time.Now(), {}, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
			time.Date(1969, 12, 31, 23, 59, 59, 500000000, time.UTC), time.Date(0, 1, 1, 0, 0, 0, 1, time.UTC)}
		for _, ns := range []int{0, 1, 10, 120, 123000000, 100000000, 999999999, 5000} {
			for _, zone := range []*time.Location{time.UTC, time.FixedZone("ist", 5*3600+1800), time.FixedZone("w", -2*3600), time.Local} {
				times = append(times, time.Date(2026, 11, 23, 4, 5, 6, ns, zone), time.Date(2026, 11, 23, 4, 5, 6, ns, time.UTC))
			}
		}
		for _, tm := range times {
			var std, ours bytes.Buffer
			w := logbuf.New(&ours, logbuf.Options{FlushInterval: time.Hour})
			r := slog.NewRecord(tm, slog.LevelInfo, "m", 0)
			r.AddAttrs(slog.Int("n", 1))
			slog.NewJSONHandler(&std, nil).Handle(context.Background(), r)
			logbuf.NewJSONHandler(w, nil).Handle(context.Background(), r)
			w.Close()
			if std.String() != ours.String() {
				t.Errorf("%v: got %s, want %s", tm, ours.String(), std.String())
			}
		}
	})
	t.Run("Options", func(t *testing.T) {
		for name, opts := range map[string]*slog.HandlerOptions{
			"Level":       {Level: slog.LevelWarn},
			"ReplaceAttr": {ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr { a.Key += "!"; return a }},
		} {
			if want, got := both(t, opts, cases["Kinds"]); got != want {
				t.Errorf("%s: got\n%s\nwant\n%s", name, got, want)
			}
		}
	})
	t.Run("Random", func(t *testing.T) {
		r := rand.New(rand.NewPCG(5, 6))
		alphabet := []string{"a", "\"", "\\", "\x00", "\n", "\x7f", "é", "\u2028", "\xff", "\xe2\x80", "🔑", "<", " "}
		randStr := func() string {
			s := ""
			for range r.IntN(10) {
				s += alphabet[r.IntN(len(alphabet))]
			}
			return s + "x" // a key must not be empty to take the fast path
		}
		want, got := both(t, nil, func(l *slog.Logger) {
			r = rand.New(rand.NewPCG(5, 6)) // the same records both times
			for range 2000 {
				l.Info(randStr(), randStr(), randStr(), randStr(), r.NormFloat64()*math.Pow(10, float64(r.IntN(50)-25)), randStr(), r.Int64())
			}
		})
		if got != want {
			t.Errorf("random records differ")
		}
	})
}

// TestJSONHandler_LogRequest: LogRequest writes what slog's handler writes
// for the record it stands for, whatever the values, with attributes added
// by WithAttrs, and through slog's own path when the handler takes it.
func TestJSONHandler_LogRequest(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	durations := []time.Duration{0, time.Microsecond, 999 * time.Microsecond, time.Millisecond, 1500 * time.Microsecond,
		1230 * time.Microsecond, 1001 * time.Microsecond, 1999, 10 * time.Second, 1e15*time.Microsecond - 1, 1e15 * time.Microsecond, -time.Millisecond}
	for range 3000 {
		durations = append(durations, time.Duration(r.Int64N(int64(1)<<r.IntN(62))))
	}
	strs := []string{"GET", "GET /v1/auth/verify", "", `q"b\s`, "\x00\n", "é\u2028\xff", "0123456789abcdef0123456789abcdef"}
	at := time.Date(2026, 11, 23, 2, 24, 29, 123456789, time.FixedZone("x", -7200))
	var reqs []logbuf.Request
	for i, d := range durations {
		reqs = append(reqs, logbuf.Request{
			Time: at.Add(time.Duration(i) * 7 * time.Millisecond), Method: strs[i%len(strs)], Route: strs[(i+1)%len(strs)],
			Status: []int{200, 404, 0, -1, 599}[i%5], Duration: d, RequestID: strs[(i+3)%len(strs)],
		})
	}
	reqs = append(reqs, logbuf.Request{Method: "zero time"}, logbuf.Request{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), Method: "year"})
	for name, opts := range map[string]*slog.HandlerOptions{
		"Fast":        nil,
		"ReplaceAttr": {ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr { a.Key += "!"; return a }},
	} {
		for _, with := range []bool{false, true} {
			var std, ours bytes.Buffer
			w := logbuf.New(&ours, logbuf.Options{FlushInterval: time.Hour})
			var sh, oh slog.Handler = slog.NewJSONHandler(&std, opts), logbuf.NewJSONHandler(w, opts)
			if with {
				sh, oh = sh.WithAttrs([]slog.Attr{slog.String("function", "auth")}), oh.WithAttrs([]slog.Attr{slog.String("function", "auth")})
			}
			for _, q := range reqs {
				rec := slog.NewRecord(q.Time, slog.LevelInfo, "request", 0)
				rec.AddAttrs(slog.String("method", q.Method), slog.String("route", q.Route), slog.Int("status", q.Status),
					slog.Float64("duration_ms", float64(q.Duration.Microseconds())/1000), slog.String("request_id", q.RequestID))
				sh.Handle(context.Background(), rec)
				var err error
				if h, ok := oh.(*logbuf.JSONHandler); ok {
					err = h.LogRequest(q)
				} else { // WithAttrs of a handler that takes slog's path is slog's
					err = oh.Handle(context.Background(), rec)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			w.Close()
			if got, want := ours.String(), std.String(); got != want {
				gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
				for i := range min(len(gl), len(wl)) {
					if gl[i] != wl[i] {
						t.Fatalf("%s, with %v: line %d:\ngot  %s\nwant %s", name, with, i, gl[i], wl[i])
					}
				}
				t.Fatalf("%s, with %v: %d lines, want %d", name, with, len(gl), len(wl))
			}
		}
	}
}

// BenchmarkJSONHandler: the request line through slog's handler and ours,
// into a Writer as the local server logs it, and with a function's name
// (WithAttrs) straight into a writer as a Lambda function logs it.
func BenchmarkJSONHandler(b *testing.B) {
	for _, bc := range []struct {
		name       string
		newHandler func(w io.Writer) slog.Handler
		lambda     bool
	}{
		{"Slog", func(w io.Writer) slog.Handler { return slog.NewJSONHandler(w, nil) }, false},
		{"Logbuf", func(w io.Writer) slog.Handler { return logbuf.NewJSONHandler(w, nil) }, false},
		{"Slog/Lambda", func(w io.Writer) slog.Handler { return slog.NewJSONHandler(w, nil) }, true},
		{"Logbuf/Lambda", func(w io.Writer) slog.Handler { return logbuf.NewJSONHandler(w, nil) }, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var h slog.Handler
			if bc.lambda {
				h = bc.newHandler(discard{}).WithAttrs([]slog.Attr{slog.String("function", "auth")})
			} else {
				w := logbuf.New(discard{}, logbuf.Options{})
				defer w.Close()
				h = bc.newHandler(w)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				r := slog.NewRecord(time.Now(), slog.LevelInfo, "request", 0)
				r.AddAttrs(slog.String("method", "GET"), slog.String("route", "GET /v1/auth/verify"), slog.Int("status", 200),
					slog.Float64("duration_ms", 0.123), slog.String("request_id", "0123456789abcdef0123456789abcdef"))
				h.Handle(ctx, r)
			}
		})
	}
}

// BenchmarkLogRequest: the same line through LogRequest, into a Writer.
func BenchmarkLogRequest(b *testing.B) {
	w := logbuf.New(discard{}, logbuf.Options{})
	defer w.Close()
	h := logbuf.NewJSONHandler(w, nil)
	b.ReportAllocs()
	for b.Loop() {
		h.LogRequest(logbuf.Request{Time: time.Now(), Method: "GET", Route: "GET /v1/auth/verify", Status: 200,
			Duration: 123 * time.Microsecond, RequestID: "0123456789abcdef0123456789abcdef"})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

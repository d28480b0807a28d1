package logbuf_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"latchkey/pkg/logbuf"
)

// countingWriter records each write it receives.
type countingWriter struct {
	mu     sync.Mutex
	writes []string
	err    error
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = append(c.writes, string(p))
	return len(p), c.err
}

func (c *countingWriter) get() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.writes...)
}

// TestWriter_Batches: lines wait in the buffer, and go out together, in
// order, on Flush; a write that would overflow the buffer sends what is
// waiting first.
func TestWriter_Batches(t *testing.T) {
	out := &countingWriter{}
	w := logbuf.New(out, logbuf.Options{FlushInterval: time.Hour, MaxBuffered: 100})
	defer w.Close()
	line := strings.Repeat("a", 39) + "\n"
	w.Write([]byte(line))
	w.Write([]byte(line))
	if got := out.get(); len(got) != 0 {
		t.Fatalf("written before a flush: %q", got)
	}
	w.Write([]byte(line)) // 120 bytes would not fit
	if got := out.get(); len(got) != 1 || got[0] != line+line {
		t.Fatalf("after overflowing: got %q, want the first two lines in one write", got)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := out.get(); len(got) != 2 || got[1] != line {
		t.Fatalf("after Flush: got %q, want the third line", got)
	}
	big := strings.Repeat("b", 150) + "\n"
	w.Write([]byte(big))
	if got := out.get(); len(got) != 3 || got[2] != big {
		t.Fatalf("a line longer than the buffer: got %q, want it written whole", got)
	}
}

// TestWriter_FlushInterval: a line no one flushes is written by the timer.
func TestWriter_FlushInterval(t *testing.T) {
	out := &countingWriter{}
	w := logbuf.New(out, logbuf.Options{FlushInterval: 10 * time.Millisecond})
	defer w.Close()
	w.Write([]byte("one\n"))
	deadline := time.Now().Add(10 * time.Second) // generous: a busy machine delays timers
	for len(out.get()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the line was never written by the interval flush")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := out.get(); got[0] != "one\n" {
		t.Fatalf("got %q", got)
	}
}

// TestWriter_Close: Close writes what is buffered; later lines go straight
// through.
func TestWriter_Close(t *testing.T) {
	out := &countingWriter{}
	w := logbuf.New(out, logbuf.Options{FlushInterval: time.Hour})
	w.Write([]byte("before\n"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("after\n"))
	if got := out.get(); len(got) != 2 || got[0] != "before\n" || got[1] != "after\n" {
		t.Fatalf("got %q, want both lines, each in its own write", got)
	}
}

// TestWriter_Error: a failed write is reported, once, by the next call.
func TestWriter_Error(t *testing.T) {
	out := &countingWriter{err: errors.New("disk full")}
	w := logbuf.New(out, logbuf.Options{FlushInterval: time.Hour})
	w.Write([]byte("x\n"))
	if err := w.Flush(); err == nil {
		t.Fatal("Flush: got nil error, want the write error")
	}
	out.mu.Lock()
	out.err = nil
	out.mu.Unlock()
	if err := w.Flush(); err != nil {
		t.Fatalf("second Flush: got %v, want nil", err)
	}
}

// TestWriter_Concurrent: lines from many goroutines arrive whole and all of
// them. Run with -race.
func TestWriter_Concurrent(t *testing.T) {
	out := &countingWriter{}
	w := logbuf.New(out, logbuf.Options{FlushInterval: time.Millisecond, MaxBuffered: 512})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				fmt.Fprintf(w, "goroutine %d line %d %s\n", g, i, strings.Repeat("x", i%50))
			}
		})
	}
	wg.Wait()
	w.Close()
	lines := strings.Split(strings.TrimSuffix(strings.Join(out.get(), ""), "\n"), "\n")
	if len(lines) != 8*500 {
		t.Fatalf("got %d lines, want %d", len(lines), 8*500)
	}
	seen := map[string]bool{}
	for _, l := range lines {
		var g, i int
		var pad string
		if n, _ := fmt.Sscanf(l, "goroutine %d line %d %s", &g, &i, &pad); n < 2 || (i%50 > 0 && len(pad) != i%50) {
			t.Fatalf("torn line %q", l)
		}
		seen[l] = true
	}
	if len(seen) != 8*500 {
		t.Fatalf("got %d distinct lines, want %d", len(seen), 8*500)
	}
}

// BenchmarkRequestLine: one request's log line, as httpapi logs it, to a
// file: straight (one write system call per line) and through a Writer.
func BenchmarkRequestLine(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "log"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	line := func(b *testing.B, out io.Writer) {
		logger := slog.New(slog.NewJSONHandler(out, nil))
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			logger.LogAttrs(ctx, slog.LevelInfo, "request",
				slog.String("method", "GET"), slog.String("route", "GET /v1/auth/verify"),
				slog.Int("status", 200), slog.Float64("duration_ms", 0.123),
				slog.String("request_id", "0123456789abcdef0123456789abcdef"))
		}
	}
	b.Run("Direct", func(b *testing.B) { line(b, f) })
	b.Run("Buffered", func(b *testing.B) {
		w := logbuf.New(f, logbuf.Options{})
		defer w.Close()
		line(b, w)
	})
}

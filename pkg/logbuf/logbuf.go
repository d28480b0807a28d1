// Package logbuf batches a server's log lines into fewer writes.
//
// A server that logs one line per request makes one write system call per
// request when it logs straight to a file descriptor; under load that costs
// as much CPU as answering the request. A Writer collects whole lines and
// writes them together, and bounds how long a line may wait: a line is
// written no later than FlushInterval after it was logged, sooner when
// MaxBuffered bytes are waiting, and at once on Flush or Close. So a
// process that dies without closing it (SIGKILL, a fatal runtime error)
// loses at most the lines of its last FlushInterval, never more than
// MaxBuffered bytes of them.
package logbuf

import (
	"io"
	"sync"
	"time"
)

// Defaults of Options.
const (
	// DefaultFlushInterval bounds the age of a buffered line: short enough
	// that a person watching the log sees a request as it happens, long
	// enough that under load one write carries hundreds of lines.
	DefaultFlushInterval = 100 * time.Millisecond
	// DefaultMaxBuffered is the most bytes held before a write: about 400
	// request lines.
	DefaultMaxBuffered = 64 << 10
)

// Options tune a Writer. Zero fields take the defaults.
type Options struct {
	FlushInterval time.Duration
	MaxBuffered   int
}

// Writer is an io.Writer for a log handler (slog.NewJSONHandler) that
// writes each Write call whole, never split across two writes of the
// underlying writer, and in order. Safe for concurrent use.
type Writer struct {
	out      io.Writer
	interval time.Duration
	max      int

	mu     sync.Mutex
	buf    []byte
	timer  *time.Timer
	armed  bool // timer will flush
	closed bool
	err    error // the first write error since the last Flush
}

// New returns a Writer that writes to out.
func New(out io.Writer, opts Options) *Writer {
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = DefaultFlushInterval
	}
	if opts.MaxBuffered <= 0 {
		opts.MaxBuffered = DefaultMaxBuffered
	}
	w := &Writer{out: out, interval: opts.FlushInterval, max: opts.MaxBuffered, buf: make([]byte, 0, opts.MaxBuffered)}
	w.timer = time.AfterFunc(time.Hour, w.flushByTimer)
	w.timer.Stop()
	return w
}

// Write buffers p, one log line, and returns len(p). An error from an
// earlier write to the underlying writer is returned (once) instead of
// failing silently; p is buffered all the same. After Close, p is written
// through at once.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.out.Write(p)
	}
	if len(w.buf)+len(p) > w.max {
		w.flushLocked()
	}
	if len(p) >= w.max {
		_, err := w.out.Write(p)
		return len(p), w.takeErr(err)
	}
	w.buf = append(w.buf, p...)
	if !w.armed {
		w.armed = true
		w.timer.Reset(w.interval)
	}
	return len(p), w.takeErr(nil)
}

// Flush writes whatever is buffered and returns the first write error
// since the last Flush.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
	return w.takeErr(nil)
}

// Close flushes and stops the timer. Later writes go straight through, so
// that a line logged while a process exits is not lost.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
	w.timer.Stop()
	w.armed = false
	w.closed = true
	return w.takeErr(nil)
}

func (w *Writer) flushByTimer() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed = false
	w.flushLocked()
}

func (w *Writer) flushLocked() {
	if len(w.buf) == 0 {
		return
	}
	if _, err := w.out.Write(w.buf); err != nil && w.err == nil {
		w.err = err
	}
	w.buf = w.buf[:0]
}

// takeErr returns err, or else the stored write error, which it clears.
func (w *Writer) takeErr(err error) error {
	if err != nil {
		return err
	}
	err, w.err = w.err, nil
	return err
}

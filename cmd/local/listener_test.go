package main

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// accepted is the result of one Accept call made in the background.
type accepted struct {
	conn net.Conn
	err  error
}

func acceptAsync(l net.Listener) <-chan accepted {
	ch := make(chan accepted, 1)
	go func() {
		c, err := l.Accept()
		ch <- accepted{c, err}
	}()
	return ch
}

func newTestLimitListener(t *testing.T, max int) *limitListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newLimitListener(ln, max)
	t.Cleanup(func() { l.Close() })
	return l
}

func dial(t *testing.T, l net.Listener) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitForAccept returns once an Accept call of l waits for a place.
func waitForAccept(t *testing.T, l *limitListener) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		l.mu.Lock()
		waiting := l.waiting
		l.mu.Unlock()
		if waiting > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no Accept waits for a place after 30 s")
		}
	}
}

// TestLimitListener: a connection in the middle of a request keeps its
// place; the next connection waits until one turns idle, which is then
// closed to make room.
func TestLimitListener(t *testing.T) {
	l := newTestLimitListener(t, 1)
	client1 := dial(t, l)
	first, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	l.connState(first, http.StateNew)
	l.connState(first, http.StateActive)

	dial(t, l)
	next := acceptAsync(l)
	// Once Accept waits for a place, only connState or Close can wake it.
	waitForAccept(t, l)
	select {
	case a := <-next:
		t.Fatalf("a second connection was accepted (%v) while the only place was held by a request", a.err)
	default:
	}

	l.connState(first, http.StateIdle)
	select {
	case a := <-next:
		if a.err != nil {
			t.Fatalf("Accept: %v", a.err)
		}
		defer a.conn.Close()
	case <-time.After(30 * time.Second):
		t.Fatal("the second connection waited on after the first turned idle")
	}
	client1.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := client1.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("the idle connection: read %v, want EOF (closed to make room)", err)
	}
}

// TestLimitListener_Close: closing the listener ends an Accept that waits
// for a place, so a server shutting down is not held by it.
func TestLimitListener_Close(t *testing.T) {
	l := newTestLimitListener(t, 1)
	dial(t, l)
	first, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	l.connState(first, http.StateActive)

	dial(t, l)
	next := acceptAsync(l)
	waitForAccept(t, l)
	l.Close()
	select {
	case a := <-next:
		if a.err == nil {
			a.conn.Close()
			t.Fatal("Accept returned a connection after Close")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Accept still waiting 30 s after Close")
	}
}

package main

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// limitListener holds at most max connections open at once, so that one
// client cannot take every file descriptor and make accept fail for
// everyone. When all are taken, the next connection takes the place of the
// one that has been idle longest between requests (closing an idle
// keep-alive connection is always allowed in HTTP/1.1: clients reconnect).
// A connection in the middle of a request keeps its place, bounded by the
// server's read and write timeouts; while every place is so held, new
// connections wait in the kernel's accept queue.
//
// golang.org/x/net/netutil.LimitListener caps connections too, but only by
// blocking Accept: idle keep-alive connections would then keep everyone
// else out until the idle timeout. Making room needs the server's view of
// which connections are idle, which ConnState gives.
type limitListener struct {
	net.Listener
	max int

	mu     sync.Mutex
	cond   *sync.Cond // signalled when a place frees, a connection turns idle, or Close
	open   int
	idle   map[*limitedConn]time.Time // since when
	closed bool
	// waiting counts the Accept calls waiting for a place, so that a test
	// can tell one is waiting without a sleep.
	waiting int
}

func newLimitListener(l net.Listener, max int) *limitListener {
	ll := &limitListener{Listener: l, max: max, idle: make(map[*limitedConn]time.Time)}
	ll.cond = sync.NewCond(&ll.mu)
	return ll
}

// Accept waits for a connection, then for a place for it.
func (l *limitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if err := l.acquire(); err != nil {
		c.Close()
		return nil, err
	}
	return &limitedConn{Conn: c, l: l}, nil
}

func (l *limitListener) acquire() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.open >= l.max {
		if l.closed {
			return net.ErrClosed
		}
		if c := l.longestIdle(); c != nil {
			delete(l.idle, c)
			l.mu.Unlock()
			c.Close() // gives its place back
			l.mu.Lock()
			continue
		}
		l.waiting++
		l.cond.Wait()
		l.waiting--
	}
	l.open++
	return nil
}

func (l *limitListener) longestIdle() *limitedConn {
	var oldest *limitedConn
	var since time.Time
	for c, t := range l.idle {
		if oldest == nil || t.Before(since) {
			oldest, since = c, t
		}
	}
	return oldest
}

// Close stops Accept, including one waiting for a place.
func (l *limitListener) Close() error {
	l.mu.Lock()
	l.closed = true
	l.cond.Broadcast()
	l.mu.Unlock()
	return l.Listener.Close()
}

// connState is the server's http.Server.ConnState hook: it tells the
// listener which connections are idle between requests.
func (l *limitListener) connState(nc net.Conn, state http.ConnState) {
	c, ok := nc.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if state == http.StateIdle && !c.released {
		l.idle[c] = time.Now()
		l.cond.Broadcast()
	} else {
		delete(l.idle, c)
	}
}

// limitedConn holds one of the listener's places until it is closed.
type limitedConn struct {
	net.Conn
	l        *limitListener
	released bool // guarded by l.mu
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	l := c.l
	l.mu.Lock()
	if !c.released {
		c.released = true
		l.open--
		delete(l.idle, c)
		l.cond.Broadcast()
	}
	l.mu.Unlock()
	return err
}

// CloseWrite lets net/http half-close the connection after an error
// response (so the client reads it before the connection is reset), as it
// does for a bare *net.TCPConn.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

package boltstore

import (
	"bytes"

	bolt "go.etcd.io/bbolt"
)

// The operators of a range: '=', '<', opLE, '>', opGE, 'B' (between) and
// 'b' (begins with).
const (
	opLE = 'l' // <=
	opGE = 'g' // >=
)

// maxQueryPage is DynamoDB's limit on the data one Query reads, 1 MB.
const maxQueryPage = 1 << 20

// rangeCond is a query's range of sort keys, over the key's bytes: op is
// 0 (none), '=', '<', opLE, '>', opGE, 'B' (between a and b) or 'b'
// (begins with a). The keys it admits are one contiguous run.
type rangeCond struct {
	op   byte
	a, b []byte
}

// where places rk against the run: -1 before it, 0 in it, 1 after it.
func (r rangeCond) where(rk []byte) int {
	switch r.op {
	case '=':
		return bytes.Compare(rk, r.a)
	case '<':
		if bytes.Compare(rk, r.a) < 0 {
			return 0
		}
		return 1
	case opLE:
		if bytes.Compare(rk, r.a) <= 0 {
			return 0
		}
		return 1
	case '>':
		if bytes.Compare(rk, r.a) > 0 {
			return 0
		}
		return -1
	case opGE:
		if bytes.Compare(rk, r.a) >= 0 {
			return 0
		}
		return -1
	case 'B':
		if bytes.Compare(rk, r.a) < 0 {
			return -1
		}
		if bytes.Compare(rk, r.b) > 0 {
			return 1
		}
		return 0
	case 'b':
		if bytes.HasPrefix(rk, r.a) {
			return 0
		}
		return bytes.Compare(rk, r.a)
	}
	return 0
}

// low is where a forward walk of the partition starts (escaped, to follow
// the partition's prefix); nil for the partition's start.
func (r rangeCond) low() []byte {
	switch r.op {
	case '=', '>', opGE, 'B', 'b':
		return appendKeyPrefix(nil, r.a)
	}
	return nil
}

// high is where a backward walk starts: the walk begins at the last key
// before it. nil for the partition's end.
func (r rangeCond) high() []byte {
	switch r.op {
	case '=', '<', opLE:
		return append(appendKeyPrefix(nil, r.a), keyPastEnd...)
	case 'B':
		return append(appendKeyPrefix(nil, r.b), keyPastEnd...)
	case 'b':
		// The first value past every one that begins with a.
		p := bytes.Clone(r.a)
		for len(p) > 0 && p[len(p)-1] == 0xFF {
			p = p[:len(p)-1]
		}
		if len(p) == 0 {
			return nil
		}
		p[len(p)-1]++
		return appendKeyPrefix(nil, p)
	}
	return nil
}

func step(c *bolt.Cursor, forward bool) []byte {
	if forward {
		k, _ := c.Next()
		return k
	}
	k, _ := c.Prev()
	return k
}

// partitionEnd is the first key past a partition.
func partitionEnd(partition []byte) []byte {
	end := bytes.Clone(partition)
	return append(end[:len(end)-len(keyEnd)], keyPastEnd...)
}

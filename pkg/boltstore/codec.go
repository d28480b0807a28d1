package boltstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"strconv"

	"latchkey/pkg/tablestore"
)

// The Table's stored forms. An item is a compact, length-prefixed encoding
// of its attributes: the count of attributes, then for each its
// name (uvarint length, bytes) and its value (a tag byte, then what the
// type needs). Decoding converts the whole stored value to one string
// once, and every string in the item (names, S and N values, set members)
// is a substring of it: one allocation for all the text of an item.
//
// A bbolt key is made of key values escaped so that byte order is kept
// and any byte may occur: 0x00 becomes 0x00 0xFF and each value ends with
// 0x00 0x01, which sorts below any byte that may follow in a longer value.
// The table bucket's key is hash then range: one partition is one
// contiguous run, ordered by its range key's bytes, as DynamoDB orders it.

// Value tags of the item encoding. Stored in files: never renumber.
const (
	tagS byte = iota + 1
	tagN
	tagB
	tagTrue
	tagFalse
	tagNull
	tagSS
	tagNS
	tagBS
	tagL
	tagM
)

var errCorrupt = errors.New("boltstore: corrupt item encoding")

// appendItem appends the encoding of item to b.
func appendItem(b []byte, item map[string]tablestore.Value) ([]byte, error) {
	b = binary.AppendUvarint(b, uint64(len(item)))
	for name, v := range item {
		b = appendBytes(b, name)
		var err error
		if b, err = appendValue(b, v); err != nil {
			return nil, fmt.Errorf("attribute %q: %w", name, err)
		}
	}
	return b, nil
}

func appendBytes[T string | []byte](b []byte, s T) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendValue(b []byte, v tablestore.Value) ([]byte, error) {
	switch v := v.(type) {
	case tablestore.S:
		return appendBytes(append(b, tagS), string(v)), nil
	case tablestore.N:
		return appendBytes(append(b, tagN), strconv.FormatInt(int64(v), 10)), nil
	case tablestore.B:
		return appendBytes(append(b, tagB), []byte(v)), nil
	case tablestore.Bool:
		if v {
			return append(b, tagTrue), nil
		}
		return append(b, tagFalse), nil
	case tablestore.Null:
		return append(b, tagNull), nil
	case tablestore.L:
		b = binary.AppendUvarint(append(b, tagL), uint64(len(v)))
		for _, e := range v {
			var err error
			if b, err = appendValue(b, e); err != nil {
				return nil, err
			}
		}
		return b, nil
	case tablestore.M:
		return appendItem(append(b, tagM), v)
	}
	return nil, fmt.Errorf("unsupported value %T", v)
}

// decoder reads one encoded item. s is the whole encoding as a string, so
// that its strings are substrings of it: one allocation for all the text
// of an item.
type decoder struct {
	s   string
	off int
}

// decodeItem decodes an item stored by appendItem. data may be bbolt's
// memory: nothing returned refers to it.
func decodeItem(data []byte) (tablestore.Item, error) {
	d := decoder{s: string(data)}
	m, err := d.item()
	if err != nil || d.off != len(d.s) {
		return nil, errCorrupt
	}
	return tablestore.Item(m), nil
}

func (d *decoder) uvarint() (int, error) {
	var x uint64
	var shift uint
	for i := 0; i < binary.MaxVarintLen64; i++ {
		if d.off >= len(d.s) {
			return 0, errCorrupt
		}
		c := d.s[d.off]
		d.off++
		if c < 0x80 {
			x |= uint64(c) << shift
			if x > uint64(len(d.s)) {
				// No count or length can exceed the encoding's size.
				return 0, errCorrupt
			}
			return int(x), nil
		}
		x |= uint64(c&0x7f) << shift
		shift += 7
	}
	return 0, errCorrupt
}

func (d *decoder) str() (string, error) {
	n, err := d.uvarint()
	if err != nil || n > len(d.s)-d.off {
		return "", errCorrupt
	}
	s := d.s[d.off : d.off+n]
	d.off += n
	return s, nil
}

func (d *decoder) item() (tablestore.M, error) {
	n, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	m := make(tablestore.M, n)
	for range n {
		name, err := d.str()
		if err != nil {
			return nil, err
		}
		if m[name], err = d.value(); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// value decodes one value. The set tags (SS, NS, BS) are in files of no
// Latchkey release; they are read as lists, of strings.
func (d *decoder) value() (tablestore.Value, error) {
	if d.off >= len(d.s) {
		return nil, errCorrupt
	}
	tag := d.s[d.off]
	d.off++
	switch tag {
	case tagS:
		s, err := d.str()
		return tablestore.S(s), err
	case tagN:
		s, err := d.str()
		if err != nil {
			return nil, err
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("boltstore: number %q is not an integer", s)
		}
		return tablestore.N(n), nil
	case tagB:
		s, err := d.str()
		return tablestore.B(s), err
	case tagTrue, tagFalse:
		return tablestore.Bool(tag == tagTrue), nil
	case tagNull:
		return tablestore.Null{}, nil
	case tagSS, tagNS, tagBS:
		n, err := d.uvarint()
		if err != nil {
			return nil, err
		}
		l := make(tablestore.L, n)
		for i := range l {
			s, err := d.str()
			if err != nil {
				return nil, err
			}
			l[i] = tablestore.S(s)
		}
		return l, nil
	case tagL:
		n, err := d.uvarint()
		if err != nil {
			return nil, err
		}
		l := make(tablestore.L, n)
		for i := range l {
			if l[i], err = d.value(); err != nil {
				return nil, err
			}
		}
		return l, nil
	case tagM:
		return d.item()
	}
	return nil, errCorrupt
}

// Key escaping (see the comment at the top).
var (
	keyEnd     = []byte{0x00, 0x01}
	keyPastEnd = []byte{0x00, 0x02}
)

// appendKeyPart appends v escaped and terminated.
func appendKeyPart(b, v []byte) []byte {
	for {
		i := bytes.IndexByte(v, 0)
		if i < 0 {
			break
		}
		b = append(b, v[:i+1]...)
		b = append(b, 0xFF)
		v = v[i+1:]
	}
	b = append(b, v...)
	return append(b, keyEnd...)
}

// appendKeyPrefix appends v escaped but not terminated: every key part
// that begins with v begins with it.
func appendKeyPrefix(b, v []byte) []byte {
	b = appendKeyPart(b, v)
	return b[:len(b)-len(keyEnd)]
}

// cutKeyPart splits an escaped part from the front of k and returns it
// unescaped, and the rest of k.
func cutKeyPart(k []byte) (part, rest []byte, ok bool) {
	for i := 0; i+1 < len(k); i++ {
		if k[i] != 0 {
			continue
		}
		switch k[i+1] {
		case 0x01:
			if part == nil {
				return k[:i], k[i+2:], true
			}
			return append(part, k[:i]...), k[i+2:], true
		case 0xFF:
			part = append(part, k[:i+1]...)
			k = k[i+2:]
			i = -1
		default:
			return nil, nil, false
		}
	}
	return nil, nil, false
}

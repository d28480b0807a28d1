package boltstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The Table's stored forms. An item is a compact, length-prefixed encoding
// of its map of AttributeValues: the count of attributes, then for each its
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
func appendItem(b []byte, item map[string]types.AttributeValue) ([]byte, error) {
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

func appendValue(b []byte, v types.AttributeValue) ([]byte, error) {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return appendBytes(append(b, tagS), v.Value), nil
	case *types.AttributeValueMemberN:
		return appendBytes(append(b, tagN), v.Value), nil
	case *types.AttributeValueMemberB:
		return appendBytes(append(b, tagB), v.Value), nil
	case *types.AttributeValueMemberBOOL:
		if v.Value {
			return append(b, tagTrue), nil
		}
		return append(b, tagFalse), nil
	case *types.AttributeValueMemberNULL:
		return append(b, tagNull), nil
	case *types.AttributeValueMemberSS:
		b = binary.AppendUvarint(append(b, tagSS), uint64(len(v.Value)))
		for _, s := range v.Value {
			b = appendBytes(b, s)
		}
		return b, nil
	case *types.AttributeValueMemberNS:
		b = binary.AppendUvarint(append(b, tagNS), uint64(len(v.Value)))
		for _, s := range v.Value {
			b = appendBytes(b, s)
		}
		return b, nil
	case *types.AttributeValueMemberBS:
		b = binary.AppendUvarint(append(b, tagBS), uint64(len(v.Value)))
		for _, s := range v.Value {
			b = appendBytes(b, s)
		}
		return b, nil
	case *types.AttributeValueMemberL:
		b = binary.AppendUvarint(append(b, tagL), uint64(len(v.Value)))
		for _, e := range v.Value {
			var err error
			if b, err = appendValue(b, e); err != nil {
				return nil, err
			}
		}
		return b, nil
	case *types.AttributeValueMemberM:
		b = append(b, tagM)
		return appendItem(b, v.Value)
	}
	return nil, fmt.Errorf("unsupported attribute value %T", v)
}

// decoder reads one encoded item. s is the whole encoding as a string, so
// that strings are substrings of it. The S and N values, most of an
// item, are taken from one slice each (slabS, slabN) sized by a first
// pass that counts them: two allocations instead of one per value.
type decoder struct {
	s     string
	off   int
	slabS []types.AttributeValueMemberS
	slabN []types.AttributeValueMemberN
}

// decodeItem decodes an item stored by appendItem. data may be bbolt's
// memory: nothing returned refers to it.
func decodeItem(data []byte) (map[string]types.AttributeValue, error) {
	d := decoder{s: string(data)}
	var counts [2]int
	if err := d.scanItem(&counts); err != nil || d.off != len(d.s) {
		return nil, errCorrupt
	}
	d.off = 0
	d.slabS = make([]types.AttributeValueMemberS, counts[0])
	d.slabN = make([]types.AttributeValueMemberN, counts[1])
	return d.item()
}

// scanItem walks an item without decoding it, counting its S and N values
// (nested ones too) into counts.
func (d *decoder) scanItem(counts *[2]int) error {
	n, err := d.uvarint()
	if err != nil {
		return err
	}
	for range n {
		if _, err := d.str(); err != nil {
			return err
		}
		if err := d.scanValue(counts); err != nil {
			return err
		}
	}
	return nil
}

func (d *decoder) scanValue(counts *[2]int) error {
	if d.off >= len(d.s) {
		return errCorrupt
	}
	tag := d.s[d.off]
	d.off++
	switch tag {
	case tagS, tagN, tagB:
		if tag != tagB {
			counts[tag-tagS]++
		}
		_, err := d.str()
		return err
	case tagTrue, tagFalse, tagNull:
		return nil
	case tagSS, tagNS, tagBS:
		_, err := d.strs()
		return err
	case tagL:
		n, err := d.uvarint()
		if err != nil {
			return err
		}
		for range n {
			if err := d.scanValue(counts); err != nil {
				return err
			}
		}
		return nil
	case tagM:
		return d.scanItem(counts)
	}
	return errCorrupt
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

func (d *decoder) item() (map[string]types.AttributeValue, error) {
	n, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	m := make(map[string]types.AttributeValue, n)
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

func (d *decoder) strs() ([]string, error) {
	n, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	out := make([]string, n)
	for i := range out {
		if out[i], err = d.str(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (d *decoder) value() (types.AttributeValue, error) {
	if d.off >= len(d.s) {
		return nil, errCorrupt
	}
	tag := d.s[d.off]
	d.off++
	switch tag {
	case tagS:
		s, err := d.str()
		v := &d.slabS[0]
		d.slabS, v.Value = d.slabS[1:], s
		return v, err
	case tagN:
		s, err := d.str()
		v := &d.slabN[0]
		d.slabN, v.Value = d.slabN[1:], s
		return v, err
	case tagB:
		s, err := d.str()
		return &types.AttributeValueMemberB{Value: []byte(s)}, err
	case tagTrue, tagFalse:
		return &types.AttributeValueMemberBOOL{Value: tag == tagTrue}, nil
	case tagNull:
		return &types.AttributeValueMemberNULL{Value: true}, nil
	case tagSS:
		ss, err := d.strs()
		return &types.AttributeValueMemberSS{Value: ss}, err
	case tagNS:
		ss, err := d.strs()
		return &types.AttributeValueMemberNS{Value: ss}, err
	case tagBS:
		ss, err := d.strs()
		bs := make([][]byte, len(ss))
		for i, s := range ss {
			bs[i] = []byte(s)
		}
		return &types.AttributeValueMemberBS{Value: bs}, err
	case tagL:
		n, err := d.uvarint()
		if err != nil {
			return nil, err
		}
		l := make([]types.AttributeValue, n)
		for i := range l {
			if l[i], err = d.value(); err != nil {
				return nil, err
			}
		}
		return &types.AttributeValueMemberL{Value: l}, nil
	case tagM:
		m, err := d.item()
		return &types.AttributeValueMemberM{Value: m}, err
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

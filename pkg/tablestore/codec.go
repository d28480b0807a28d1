package tablestore

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"latchkey/pkg/account"
)

// The items' codec: the private items of items.go, by their dynamodbav
// tags, to and from the port's Values, with the encoding the SDK's
// attributevalue gives them (every item stored so far has it; the test
// compares the two): strings, integers, booleans, []byte as B, times as
// RFC 3339 strings (numbers of seconds with ",unixtime"), slices as L,
// maps and structs as M, nil slices, maps and pointers as Null, and
// ",omitempty" leaving out a zero value. Only the kinds the items use.

var timeType = reflect.TypeFor[time.Time]()

// field is one attribute of a struct.
type field struct {
	name      string
	index     []int
	omitEmpty bool
	unixTime  bool
}

var fieldsCache sync.Map // reflect.Type -> []field

// fieldsOf returns the attributes of the struct type t, those of its
// embedded structs included.
func fieldsOf(t reflect.Type) []field {
	if fs, ok := fieldsCache.Load(t); ok {
		return fs.([]field)
	}
	var fs []field
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("dynamodbav")
		if tag == "-" {
			continue
		}
		if sf.Anonymous && sf.Type.Kind() == reflect.Struct && tag == "" {
			for _, f := range fieldsOf(sf.Type) {
				f.index = append([]int{i}, f.index...)
				fs = append(fs, f)
			}
			continue
		}
		if !sf.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = sf.Name
		}
		f := field{name: name, index: []int{i}}
		for _, o := range strings.Split(opts, ",") {
			f.omitEmpty = f.omitEmpty || o == "omitempty"
			f.unixTime = f.unixTime || o == "unixtime"
		}
		fs = append(fs, f)
	}
	fieldsCache.Store(t, fs)
	return fs
}

// encode returns the Value of v.
func encode(v any) (Value, error) {
	return encodeValue(reflect.ValueOf(v), false)
}

// marshal returns the Item of v, a struct.
func marshal(v any) (Item, error) {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		rv = rv.Elem()
	}
	m, err := encodeStruct(rv)
	if err != nil {
		return nil, account.Internal(err)
	}
	return Item(m), nil
}

func isZero(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Map, reflect.Slice, reflect.Pointer, reflect.Interface:
		return v.IsNil()
	case reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	}
	return false
}

func encodeStruct(v reflect.Value) (M, error) {
	m := M{}
	for _, f := range fieldsOf(v.Type()) {
		fv := v.FieldByIndex(f.index)
		if f.omitEmpty && isZero(fv) {
			continue
		}
		x, err := encodeValue(fv, f.unixTime)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		m[f.name] = x
	}
	return m, nil
}

func encodeValue(v reflect.Value, unixTime bool) (Value, error) {
	switch v.Kind() {
	case reflect.Invalid:
		return Null{}, nil
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return Null{}, nil
		}
		return encodeValue(v.Elem(), unixTime)
	case reflect.String:
		return S(v.String()), nil
	case reflect.Bool:
		return Bool(v.Bool()), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return N(v.Int()), nil
	case reflect.Slice:
		if v.IsNil() {
			return Null{}, nil
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return B(append([]byte{}, v.Bytes()...)), nil
		}
		l := make(L, v.Len())
		for i := range l {
			var err error
			if l[i], err = encodeValue(v.Index(i), false); err != nil {
				return nil, err
			}
		}
		return l, nil
	case reflect.Map:
		if v.IsNil() {
			return Null{}, nil
		}
		if v.Type().Key().Kind() != reflect.String {
			return nil, fmt.Errorf("a map keyed by %s", v.Type().Key())
		}
		m := make(M, v.Len())
		for it := v.MapRange(); it.Next(); {
			x, err := encodeValue(it.Value(), false)
			if err != nil {
				return nil, err
			}
			m[it.Key().String()] = x
		}
		return m, nil
	case reflect.Struct:
		if v.Type() == timeType {
			t := v.Interface().(time.Time)
			if unixTime {
				return N(t.Unix()), nil
			}
			return S(t.Format(time.RFC3339Nano)), nil
		}
		return encodeStruct(v)
	}
	return nil, fmt.Errorf("a value of kind %s, which no item holds", v.Kind())
}

// unmarshal decodes item into out, a pointer to a struct. Attributes out
// has no field for are left; a Null leaves the field zero.
func unmarshal(item Item, out any) error {
	v := reflect.ValueOf(out)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return account.Internal(errors.New("tablestore: unmarshal into a non-pointer"))
	}
	if err := decodeStruct(M(item), v.Elem()); err != nil {
		return account.Internal(err)
	}
	return nil
}

func decodeStruct(m M, v reflect.Value) error {
	for _, f := range fieldsOf(v.Type()) {
		x, ok := m[f.name]
		if !ok {
			continue
		}
		if err := decodeValue(x, v.FieldByIndex(f.index)); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
	}
	return nil
}

func decodeValue(x Value, v reflect.Value) error {
	if _, null := x.(Null); null {
		v.SetZero()
		return nil
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return decodeValue(x, v.Elem())
	}
	wrong := func() error { return fmt.Errorf("a %T for a %s", x, v.Type()) }
	switch x := x.(type) {
	case S:
		switch {
		case v.Kind() == reflect.String:
			v.SetString(string(x))
		case v.Type() == timeType:
			t, err := time.Parse(time.RFC3339, string(x))
			if err != nil {
				return err
			}
			v.Set(reflect.ValueOf(t))
		default:
			return wrong()
		}
	case N:
		switch {
		case v.CanInt():
			v.SetInt(int64(x))
		case v.Type() == timeType:
			v.Set(reflect.ValueOf(time.Unix(int64(x), 0)))
		default:
			return wrong()
		}
	case Bool:
		if v.Kind() != reflect.Bool {
			return wrong()
		}
		v.SetBool(bool(x))
	case B:
		if v.Kind() != reflect.Slice || v.Type().Elem().Kind() != reflect.Uint8 {
			return wrong()
		}
		v.SetBytes(append([]byte{}, x...))
	case L:
		if v.Kind() != reflect.Slice {
			return wrong()
		}
		s := reflect.MakeSlice(v.Type(), len(x), len(x))
		for i, e := range x {
			if err := decodeValue(e, s.Index(i)); err != nil {
				return err
			}
		}
		v.Set(s)
	case M:
		switch v.Kind() {
		case reflect.Struct:
			return decodeStruct(x, v)
		case reflect.Map:
			if v.Type().Key().Kind() != reflect.String {
				return wrong()
			}
			mv := reflect.MakeMapWithSize(v.Type(), len(x))
			for k, e := range x {
				ev := reflect.New(v.Type().Elem()).Elem()
				if err := decodeValue(e, ev); err != nil {
					return err
				}
				mv.SetMapIndex(reflect.ValueOf(k).Convert(v.Type().Key()), ev)
			}
			v.Set(mv)
		default:
			return wrong()
		}
	default:
		return wrong()
	}
	return nil
}

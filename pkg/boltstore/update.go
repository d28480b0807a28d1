package boltstore

import (
	"bytes"
	"maps"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// checkUpdate refuses, before any item is read, an update that DynamoDB
// refuses whatever the item: one that writes a key attribute, or writes
// one attribute twice.
func (e *env) checkUpdate(u *update, keys []string) error {
	seen := map[string]bool{}
	for _, p := range u.paths() {
		n, err := e.name(p)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if n == k {
				return invalid("One or more parameter values were invalid: Cannot update attribute %s. This attribute is part of the key", n)
			}
		}
		if seen[n] {
			return invalid("Invalid UpdateExpression: Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [%s], path two: [%s]", n, n)
		}
		seen[n] = true
	}
	return nil
}

// applyUpdate returns the item that u makes of old (which it does not
// change) and the names of the attributes it wrote. Every right-hand side
// is evaluated against old, as DynamoDB does.
func (e *env) applyUpdate(u *update, old map[string]types.AttributeValue) (map[string]types.AttributeValue, []string, error) {
	next := make(map[string]types.AttributeValue, len(old)+len(u.set)+len(u.add))
	maps.Copy(next, old)
	var written []string
	for _, a := range u.set {
		n, err := e.name(a.path)
		if err != nil {
			return nil, nil, err
		}
		v, err := e.eval(a.value, old)
		if err != nil {
			return nil, nil, err
		}
		if v == nil {
			return nil, nil, invalid("The provided expression refers to an attribute that does not exist in the item")
		}
		next[n] = v
		written = append(written, n)
	}
	for _, p := range u.remove {
		n, err := e.name(p)
		if err != nil {
			return nil, nil, err
		}
		delete(next, n)
		written = append(written, n)
	}
	for _, a := range u.add {
		n, err := e.combine(a, old, next, addValue)
		if err != nil {
			return nil, nil, err
		}
		written = append(written, n)
	}
	for _, a := range u.delete {
		n, err := e.combine(a, old, next, deleteFromSet)
		if err != nil {
			return nil, nil, err
		}
		written = append(written, n)
	}
	return next, written, nil
}

// combine is one ADD or DELETE action: op joins a's value to the
// attribute's value in old, and the result goes in next; a nil result
// takes the attribute away. It returns the attribute's name.
func (e *env) combine(a setAction, old, next map[string]types.AttributeValue,
	op func(cur, v types.AttributeValue) (types.AttributeValue, error)) (string, error) {
	n, err := e.name(a.path)
	if err != nil {
		return "", err
	}
	v, err := e.eval(a.value, old)
	if err != nil {
		return "", err
	}
	r, err := op(old[n], v)
	if err != nil {
		return "", err
	}
	if r == nil {
		delete(next, n)
	} else {
		next[n] = r
	}
	return n, nil
}

var errOperandType = invalid("An operand in the update expression has an incorrect data type")

// addValue is ADD: a number added to a number (or to nothing), a set
// joined to a set of its type (or to nothing).
func addValue(cur, v types.AttributeValue) (types.AttributeValue, error) {
	switch v := v.(type) {
	case *types.AttributeValueMemberN:
		if cur == nil {
			return v, nil
		}
		c, ok := cur.(*types.AttributeValueMemberN)
		if !ok {
			return nil, errOperandType
		}
		sum, ok := addNumbers(c.Value, v.Value, false)
		if !ok {
			return nil, invalid("Number overflow. Attempting to store a number with magnitude larger than supported range")
		}
		return &types.AttributeValueMemberN{Value: sum}, nil
	case *types.AttributeValueMemberSS:
		if cur == nil {
			return v, nil
		}
		c, ok := cur.(*types.AttributeValueMemberSS)
		if !ok {
			return nil, errOperandType
		}
		return &types.AttributeValueMemberSS{Value: union(c.Value, v.Value, func(x, y string) bool { return x == y })}, nil
	case *types.AttributeValueMemberNS:
		if cur == nil {
			return v, nil
		}
		c, ok := cur.(*types.AttributeValueMemberNS)
		if !ok {
			return nil, errOperandType
		}
		return &types.AttributeValueMemberNS{Value: union(c.Value, v.Value, func(x, y string) bool { return compareNumbers(x, y) == 0 })}, nil
	case *types.AttributeValueMemberBS:
		if cur == nil {
			return v, nil
		}
		c, ok := cur.(*types.AttributeValueMemberBS)
		if !ok {
			return nil, errOperandType
		}
		return &types.AttributeValueMemberBS{Value: union(c.Value, v.Value, bytes.Equal)}, nil
	}
	return nil, errOperandType
}

func union[T any](a, b []T, eq func(T, T) bool) []T {
	out := append([]T(nil), a...)
	for _, y := range b {
		if !subset([]T{y}, a, eq) {
			out = append(out, y)
		}
	}
	return out
}

func minus[T any](a, b []T, eq func(T, T) bool) []T {
	var out []T
	for _, x := range a {
		if !subset([]T{x}, b, eq) {
			out = append(out, x)
		}
	}
	return out
}

// deleteFromSet is DELETE: the members of v taken from the set cur. nil
// when none is left (DynamoDB has no empty sets: the attribute goes).
func deleteFromSet(cur, v types.AttributeValue) (types.AttributeValue, error) {
	if cur == nil {
		switch v.(type) {
		case *types.AttributeValueMemberSS, *types.AttributeValueMemberNS, *types.AttributeValueMemberBS:
			return nil, nil
		}
		return nil, errOperandType
	}
	switch v := v.(type) {
	case *types.AttributeValueMemberSS:
		if c, ok := cur.(*types.AttributeValueMemberSS); ok {
			if r := minus(c.Value, v.Value, func(x, y string) bool { return x == y }); len(r) > 0 {
				return &types.AttributeValueMemberSS{Value: r}, nil
			}
			return nil, nil
		}
	case *types.AttributeValueMemberNS:
		if c, ok := cur.(*types.AttributeValueMemberNS); ok {
			if r := minus(c.Value, v.Value, func(x, y string) bool { return compareNumbers(x, y) == 0 }); len(r) > 0 {
				return &types.AttributeValueMemberNS{Value: r}, nil
			}
			return nil, nil
		}
	case *types.AttributeValueMemberBS:
		if c, ok := cur.(*types.AttributeValueMemberBS); ok {
			if r := minus(c.Value, v.Value, bytes.Equal); len(r) > 0 {
				return &types.AttributeValueMemberBS{Value: r}, nil
			}
			return nil, nil
		}
	}
	return nil, errOperandType
}

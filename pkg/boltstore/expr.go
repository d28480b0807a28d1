package boltstore

import (
	"bytes"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// A small evaluator of DynamoDB's expression language: the grammar of the
// condition, filter, key condition, update and projection expressions the
// SDK's expression builder writes, over top-level attributes (Latchkey
// names no nested path; one is refused, not misread). Parsed expressions
// are cached by their text, which the builder keeps stable, so a hot path
// parses once per process.
//
// Semantics are DynamoDB's: a comparison with a missing attribute, or
// between values of different types, is false, except <>, which is then
// true (DynamoDB Local agrees: see tabletest); numbers compare as numbers, strings and binaries
// by their bytes; NOT negates whatever is under it.

// exprError is an expression the table cannot take: a ValidationException.
type exprError struct{ msg string }

func (e *exprError) Error() string { return e.msg }

func invalid(format string, args ...any) error {
	return &exprError{msg: fmt.Sprintf(format, args...)}
}

// ---- lexer ----

type token struct {
	kind byte // 'i' identifier or keyword, '#' name, ':' value, or the punctuation itself; 0 at the end
	text string
}

// Two-character operators get one-byte kinds of their own.
const (
	tokNE = 'n' // <>
	tokLE = 'l' // <=
	tokGE = 'g' // >=
)

func lex(s string) ([]token, error) {
	var out []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '<' && i+1 < len(s) && s[i+1] == '>':
			out, i = append(out, token{kind: tokNE, text: "<>"}), i+2
		case c == '<' && i+1 < len(s) && s[i+1] == '=':
			out, i = append(out, token{kind: tokLE, text: "<="}), i+2
		case c == '>' && i+1 < len(s) && s[i+1] == '=':
			out, i = append(out, token{kind: tokGE, text: ">="}), i+2
		case strings.IndexByte("()=<>,+-.[]", c) >= 0:
			out, i = append(out, token{kind: c, text: s[i : i+1]}), i+1
		case c == '#' || c == ':' || isIdent(c):
			j := i + 1
			for j < len(s) && isIdent(s[j]) {
				j++
			}
			kind := byte('i')
			if c == '#' || c == ':' {
				kind = c
				if j == i+1 {
					return nil, invalid("Invalid expression: Syntax error; token: %q", s[i:j])
				}
			}
			out, i = append(out, token{kind: kind, text: s[i:j]}), j
		default:
			return nil, invalid("Invalid expression: Syntax error; token: %q", s[i:i+1])
		}
	}
	return out, nil
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

type parser struct {
	toks []token
	pos  int
}

func (p *parser) peek() token {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return token{}
}

func (p *parser) next() token {
	t := p.peek()
	if p.pos < len(p.toks) {
		p.pos++
	}
	return t
}

func (p *parser) keyword(w string) bool {
	if t := p.peek(); t.kind == 'i' && strings.EqualFold(t.text, w) {
		p.pos++
		return true
	}
	return false
}

func (p *parser) expect(kind byte) (token, error) {
	t := p.next()
	if t.kind != kind {
		return t, p.syntax(t)
	}
	return t, nil
}

func (p *parser) syntax(t token) error {
	if t.kind == 0 {
		return invalid("Invalid expression: Syntax error; token: <EOF>")
	}
	return invalid("Invalid expression: Syntax error; token: %q", t.text)
}

// ---- operands ----

// operand is a path (an attribute of the item), a value placeholder, or a
// function of them that yields a value (size, if_not_exists, +, -).
type operand struct {
	kind  byte   // 'p' path, 'v' value, 's' size(path), 'f' if_not_exists(path, operand), '+' or '-'
	name  string // the path (#placeholder or literal name) or the :placeholder
	left  *operand
	right *operand
}

func (p *parser) path() (string, error) {
	t := p.next()
	if t.kind != '#' && t.kind != 'i' {
		return "", p.syntax(t)
	}
	if k := p.peek().kind; k == '.' || k == '[' {
		return "", invalid("Invalid expression: nested document paths are not supported by this table")
	}
	if t.kind == 'i' && reserved(t.text) {
		return "", invalid("Invalid expression: Attribute name is a reserved keyword; reserved keyword: %s", t.text)
	}
	return t.text, nil
}

// operand parses a path, a value, size(path) or, in an update's SET,
// if_not_exists(path, value) and a + or - of two operands.
func (p *parser) operand(update bool) (*operand, error) {
	t := p.peek()
	var o *operand
	switch {
	case t.kind == ':':
		p.pos++
		o = &operand{kind: 'v', name: t.text}
	case t.kind == 'i' && p.pos+1 < len(p.toks) && p.toks[p.pos+1].kind == '(':
		fn := strings.ToLower(t.text)
		p.pos += 2
		switch {
		case fn == "size":
			path, err := p.path()
			if err != nil {
				return nil, err
			}
			o = &operand{kind: 's', name: path}
		case fn == "if_not_exists" && update:
			path, err := p.path()
			if err != nil {
				return nil, err
			}
			if _, err := p.expect(','); err != nil {
				return nil, err
			}
			v, err := p.operand(false)
			if err != nil {
				return nil, err
			}
			o = &operand{kind: 'f', name: path, right: v}
		default:
			return nil, invalid("Invalid expression: Invalid function name; function: %s", t.text)
		}
		if _, err := p.expect(')'); err != nil {
			return nil, err
		}
	default:
		path, err := p.path()
		if err != nil {
			return nil, err
		}
		o = &operand{kind: 'p', name: path}
	}
	if update {
		if k := p.peek().kind; k == '+' || k == '-' {
			p.pos++
			r, err := p.operand(false)
			if err != nil {
				return nil, err
			}
			o = &operand{kind: k, left: o, right: r}
		}
	}
	return o, nil
}

// ---- conditions ----

// cond is a node of a condition: 'A' and, 'O' or, 'N' not, a comparison
// ('=', tokNE, '<', tokLE, '>', tokGE), 'B' between, 'I' in, or a
// function: 'e' attribute_exists, 'x' attribute_not_exists, 'b'
// begins_with, 'c' contains, 't' attribute_type.
type cond struct {
	op   byte
	l, r *cond
	args []*operand
}

func (p *parser) or() (*cond, error) {
	l, err := p.and()
	if err != nil {
		return nil, err
	}
	for p.keyword("OR") {
		r, err := p.and()
		if err != nil {
			return nil, err
		}
		l = &cond{op: 'O', l: l, r: r}
	}
	return l, nil
}

func (p *parser) and() (*cond, error) {
	l, err := p.not()
	if err != nil {
		return nil, err
	}
	for p.keyword("AND") {
		r, err := p.not()
		if err != nil {
			return nil, err
		}
		l = &cond{op: 'A', l: l, r: r}
	}
	return l, nil
}

func (p *parser) not() (*cond, error) {
	if p.keyword("NOT") {
		c, err := p.not()
		if err != nil {
			return nil, err
		}
		return &cond{op: 'N', l: c}, nil
	}
	return p.primary()
}

var condFuncs = map[string]struct {
	op    byte
	nargs int
}{
	"attribute_exists":     {'e', 1},
	"attribute_not_exists": {'x', 1},
	"begins_with":          {'b', 2},
	"contains":             {'c', 2},
	"attribute_type":       {'t', 2},
}

func (p *parser) primary() (*cond, error) {
	t := p.peek()
	if t.kind == '(' {
		p.pos++
		c, err := p.or()
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(')'); err != nil {
			return nil, err
		}
		return c, nil
	}
	if f, ok := condFuncs[strings.ToLower(t.text)]; ok && t.kind == 'i' && p.pos+1 < len(p.toks) && p.toks[p.pos+1].kind == '(' {
		p.pos += 2
		c := &cond{op: f.op}
		for i := range f.nargs {
			if i > 0 {
				if _, err := p.expect(','); err != nil {
					return nil, err
				}
			}
			o, err := p.operand(false)
			if err != nil {
				return nil, err
			}
			c.args = append(c.args, o)
		}
		if (f.op == 'e' || f.op == 'x') && c.args[0].kind != 'p' {
			return nil, invalid("Invalid ConditionExpression: Operator or function requires a document path; operator or function: %s", t.text)
		}
		if _, err := p.expect(')'); err != nil {
			return nil, err
		}
		return c, nil
	}
	l, err := p.operand(false)
	if err != nil {
		return nil, err
	}
	switch op := p.next(); {
	case op.kind == '=' || op.kind == tokNE || op.kind == '<' || op.kind == tokLE || op.kind == '>' || op.kind == tokGE:
		r, err := p.operand(false)
		if err != nil {
			return nil, err
		}
		return &cond{op: op.kind, args: []*operand{l, r}}, nil
	case op.kind == 'i' && strings.EqualFold(op.text, "BETWEEN"):
		lo, err := p.operand(false)
		if err != nil {
			return nil, err
		}
		if !p.keyword("AND") {
			return nil, p.syntax(p.peek())
		}
		hi, err := p.operand(false)
		if err != nil {
			return nil, err
		}
		return &cond{op: 'B', args: []*operand{l, lo, hi}}, nil
	case op.kind == 'i' && strings.EqualFold(op.text, "IN"):
		if _, err := p.expect('('); err != nil {
			return nil, err
		}
		c := &cond{op: 'I', args: []*operand{l}}
		for {
			o, err := p.operand(false)
			if err != nil {
				return nil, err
			}
			c.args = append(c.args, o)
			if t := p.next(); t.kind == ')' {
				break
			} else if t.kind != ',' {
				return nil, p.syntax(t)
			}
		}
		if len(c.args) > 101 {
			return nil, invalid("Invalid ConditionExpression: The IN operator is provided with too many operands; number of operands: %d", len(c.args)-1)
		}
		return c, nil
	default:
		return nil, p.syntax(op)
	}
}

// ---- updates ----

type update struct {
	set    []setAction
	remove []string
	add    []setAction // ADD path :value
	delete []setAction // DELETE path :value
}

type setAction struct {
	path  string
	value *operand
}

func (p *parser) update() (*update, error) {
	u := &update{}
	seen := map[string]bool{}
	for p.peek().kind != 0 {
		clause := strings.ToUpper(p.next().text)
		if seen[clause] {
			return nil, invalid("Invalid UpdateExpression: The \"%s\" section can only be used once in an update expression;", clause)
		}
		seen[clause] = true
		for {
			switch clause {
			case "SET":
				path, err := p.path()
				if err != nil {
					return nil, err
				}
				if _, err := p.expect('='); err != nil {
					return nil, err
				}
				v, err := p.operand(true)
				if err != nil {
					return nil, err
				}
				u.set = append(u.set, setAction{path, v})
			case "REMOVE":
				path, err := p.path()
				if err != nil {
					return nil, err
				}
				u.remove = append(u.remove, path)
			case "ADD", "DELETE":
				path, err := p.path()
				if err != nil {
					return nil, err
				}
				v, err := p.expect(':')
				if err != nil {
					return nil, err
				}
				a := setAction{path, &operand{kind: 'v', name: v.text}}
				if clause == "ADD" {
					u.add = append(u.add, a)
				} else {
					u.delete = append(u.delete, a)
				}
			default:
				return nil, invalid("Invalid UpdateExpression: Syntax error; token: %q", clause)
			}
			if p.peek().kind != ',' {
				break
			}
			p.pos++
		}
	}
	if len(seen) == 0 {
		return nil, invalid("Invalid UpdateExpression: The expression can not be empty;")
	}
	return u, nil
}

// paths returns every path the update writes, in order.
func (u *update) paths() []string {
	var out []string
	for _, a := range u.set {
		out = append(out, a.path)
	}
	out = append(out, u.remove...)
	for _, a := range u.add {
		out = append(out, a.path)
	}
	for _, a := range u.delete {
		out = append(out, a.path)
	}
	return out
}

// ---- parsing, cached ----

var (
	condCache   sync.Map // string -> *cond
	updateCache sync.Map // string -> *update
	projCache   sync.Map // string -> []string
)

// maxCached bounds each cache: Latchkey's expressions are a few dozen
// texts; past that, a caller is making them up and they are not kept.
const maxCached = 4096

var cacheSize struct {
	sync.Mutex
	n int
}

func remember(m *sync.Map, k string, v any) {
	cacheSize.Lock()
	defer cacheSize.Unlock()
	if cacheSize.n < maxCached {
		cacheSize.n++
		m.Store(k, v)
	}
}

func parseCondition(s, what string) (*cond, error) {
	if c, ok := condCache.Load(s); ok {
		return c.(*cond), nil
	}
	toks, err := lex(s)
	if err != nil {
		return nil, invalid("Invalid %s: %s", what, strings.TrimPrefix(err.Error(), "Invalid expression: "))
	}
	p := &parser{toks: toks}
	c, err := p.or()
	if err == nil && p.peek().kind != 0 {
		err = p.syntax(p.peek())
	}
	if err != nil {
		return nil, invalid("Invalid %s: %s", what, strings.TrimPrefix(err.Error(), "Invalid expression: "))
	}
	remember(&condCache, s, c)
	return c, nil
}

func parseUpdate(s string) (*update, error) {
	if u, ok := updateCache.Load(s); ok {
		return u.(*update), nil
	}
	toks, err := lex(s)
	if err != nil {
		return nil, invalid("Invalid UpdateExpression: %s", strings.TrimPrefix(err.Error(), "Invalid expression: "))
	}
	u, err := (&parser{toks: toks}).update()
	if err != nil {
		return nil, invalid("Invalid UpdateExpression: %s", strings.TrimPrefix(strings.TrimPrefix(err.Error(), "Invalid UpdateExpression: "), "Invalid expression: "))
	}
	remember(&updateCache, s, u)
	return u, nil
}

func parseProjection(s string) ([]string, error) {
	if v, ok := projCache.Load(s); ok {
		return v.([]string), nil
	}
	toks, err := lex(s)
	if err != nil {
		return nil, invalid("Invalid ProjectionExpression: %s", strings.TrimPrefix(err.Error(), "Invalid expression: "))
	}
	p := &parser{toks: toks}
	var out []string
	for {
		path, err := p.path()
		if err != nil {
			return nil, invalid("Invalid ProjectionExpression: %s", strings.TrimPrefix(err.Error(), "Invalid expression: "))
		}
		out = append(out, path)
		t := p.next()
		if t.kind == 0 {
			break
		}
		if t.kind != ',' {
			return nil, invalid("Invalid ProjectionExpression: Syntax error; token: %q", t.text)
		}
	}
	remember(&projCache, s, out)
	return out, nil
}

// ---- evaluation ----

// env resolves the placeholders of one request's expressions and records
// which it used: DynamoDB refuses a request with an unused one.
type env struct {
	names      map[string]string
	values     map[string]types.AttributeValue
	usedNames  map[string]bool
	usedValues map[string]bool
}

func newEnv(names map[string]string, values map[string]types.AttributeValue) *env {
	return &env{names: names, values: values}
}

// name resolves a path to an attribute name.
func (e *env) name(path string) (string, error) {
	if path[0] != '#' {
		return path, nil
	}
	n, ok := e.names[path]
	if !ok {
		return "", invalid("Invalid expression: An expression attribute name used in the document path is not defined; attribute name: %s", path)
	}
	if e.usedNames == nil {
		e.usedNames = map[string]bool{}
	}
	e.usedNames[path] = true
	return n, nil
}

func (e *env) value(ph string) (types.AttributeValue, error) {
	v, ok := e.values[ph]
	if !ok {
		return nil, invalid("Invalid expression: An expression attribute value used in expression is not defined; attribute value: %s", ph)
	}
	if e.usedValues == nil {
		e.usedValues = map[string]bool{}
	}
	e.usedValues[ph] = true
	return v, nil
}

// checkUnused refuses placeholders the expressions did not use, as
// DynamoDB does.
func (e *env) checkUnused() error {
	for k := range e.names {
		if !e.usedNames[k] {
			return invalid("Value provided in ExpressionAttributeNames unused in expressions: keys: {%s}", k)
		}
	}
	for k := range e.values {
		if !e.usedValues[k] {
			return invalid("Value provided in ExpressionAttributeValues unused in expressions: keys: {%s}", k)
		}
	}
	return nil
}

// resolve walks an expression once without an item, so that an undefined
// placeholder is an error before any item is read, and the placeholders
// it uses are counted.
func (e *env) resolveCond(c *cond) error {
	if c == nil {
		return nil
	}
	if err := e.resolveCond(c.l); err != nil {
		return err
	}
	if err := e.resolveCond(c.r); err != nil {
		return err
	}
	for _, a := range c.args {
		if err := e.resolveOperand(a); err != nil {
			return err
		}
	}
	return nil
}

func (e *env) resolveOperand(o *operand) error {
	if o == nil {
		return nil
	}
	switch o.kind {
	case 'v':
		if _, err := e.value(o.name); err != nil {
			return err
		}
	case 'p', 's', 'f':
		if _, err := e.name(o.name); err != nil {
			return err
		}
	}
	if err := e.resolveOperand(o.left); err != nil {
		return err
	}
	return e.resolveOperand(o.right)
}

func (e *env) resolveUpdate(u *update) error {
	for _, list := range [][]setAction{u.set, u.add, u.delete} {
		for _, a := range list {
			if _, err := e.name(a.path); err != nil {
				return err
			}
			if err := e.resolveOperand(a.value); err != nil {
				return err
			}
		}
	}
	for _, p := range u.remove {
		if _, err := e.name(p); err != nil {
			return err
		}
	}
	return nil
}

// eval returns an operand's value in item; nil when it names an attribute
// the item does not have.
func (e *env) eval(o *operand, item map[string]types.AttributeValue) (types.AttributeValue, error) {
	switch o.kind {
	case 'v':
		return e.value(o.name)
	case 'p':
		n, err := e.name(o.name)
		if err != nil {
			return nil, err
		}
		return item[n], nil
	case 's':
		n, err := e.name(o.name)
		if err != nil {
			return nil, err
		}
		v := item[n]
		size := -1
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			size = len(v.Value)
		case *types.AttributeValueMemberB:
			size = len(v.Value)
		case *types.AttributeValueMemberSS:
			size = len(v.Value)
		case *types.AttributeValueMemberNS:
			size = len(v.Value)
		case *types.AttributeValueMemberBS:
			size = len(v.Value)
		case *types.AttributeValueMemberL:
			size = len(v.Value)
		case *types.AttributeValueMemberM:
			size = len(v.Value)
		}
		if size < 0 {
			return nil, nil
		}
		return &types.AttributeValueMemberN{Value: fmt.Sprint(size)}, nil
	case 'f':
		n, err := e.name(o.name)
		if err != nil {
			return nil, err
		}
		if v, ok := item[n]; ok {
			return v, nil
		}
		return e.eval(o.right, item)
	case '+', '-':
		l, err := e.eval(o.left, item)
		if err != nil {
			return nil, err
		}
		r, err := e.eval(o.right, item)
		if err != nil {
			return nil, err
		}
		if l == nil || r == nil {
			return nil, invalid("The provided expression refers to an attribute that does not exist in the item")
		}
		ln, lok := l.(*types.AttributeValueMemberN)
		rn, rok := r.(*types.AttributeValueMemberN)
		if !lok || !rok {
			return nil, invalid("An operand in the update expression has an incorrect data type")
		}
		sum, ok := addNumbers(ln.Value, rn.Value, o.kind == '-')
		if !ok {
			return nil, invalid("Number overflow. Attempting to store a number with magnitude larger than supported range")
		}
		return &types.AttributeValueMemberN{Value: sum}, nil
	}
	return nil, invalid("Invalid expression")
}

// match evaluates a condition on item (nil or empty when there is none).
func (e *env) match(c *cond, item map[string]types.AttributeValue) (bool, error) {
	switch c.op {
	case 'A':
		l, err := e.match(c.l, item)
		if err != nil || !l {
			return false, err
		}
		return e.match(c.r, item)
	case 'O':
		l, err := e.match(c.l, item)
		if err != nil || l {
			return l, err
		}
		return e.match(c.r, item)
	case 'N':
		l, err := e.match(c.l, item)
		return !l, err
	}
	args := make([]types.AttributeValue, len(c.args))
	for i, a := range c.args {
		if (c.op == 'e' || c.op == 'x') && i == 0 {
			n, err := e.name(a.name)
			if err != nil {
				return false, err
			}
			_, ok := item[n]
			return ok == (c.op == 'e'), nil
		}
		v, err := e.eval(a, item)
		if err != nil {
			return false, err
		}
		args[i] = v
	}
	switch c.op {
	case '=':
		return args[0] != nil && args[1] != nil && equalValues(args[0], args[1]), nil
	case tokNE:
		// Not "neither = nor missing": <> with a missing side is true.
		return args[0] == nil || args[1] == nil || !equalValues(args[0], args[1]), nil
	case '<', tokLE, '>', tokGE:
		cmp, ok := compareValues(args[0], args[1])
		if !ok {
			return false, nil
		}
		switch c.op {
		case '<':
			return cmp < 0, nil
		case tokLE:
			return cmp <= 0, nil
		case '>':
			return cmp > 0, nil
		}
		return cmp >= 0, nil
	case 'B':
		if lo, hi := args[1], args[2]; lo != nil && hi != nil {
			if cmp, ok := compareValues(lo, hi); ok && cmp > 0 {
				return false, invalid("Invalid ConditionExpression: The BETWEEN operator requires upper bound to be greater than or equal to lower bound")
			}
		}
		lo, ok1 := compareValues(args[0], args[1])
		hi, ok2 := compareValues(args[0], args[2])
		return ok1 && ok2 && lo >= 0 && hi <= 0, nil
	case 'I':
		if args[0] == nil {
			return false, nil
		}
		for _, v := range args[1:] {
			if v != nil && equalValues(args[0], v) {
				return true, nil
			}
		}
		return false, nil
	case 'b':
		switch v := args[0].(type) {
		case *types.AttributeValueMemberS:
			p, ok := args[1].(*types.AttributeValueMemberS)
			return ok && strings.HasPrefix(v.Value, p.Value), nil
		case *types.AttributeValueMemberB:
			p, ok := args[1].(*types.AttributeValueMemberB)
			return ok && bytes.HasPrefix(v.Value, p.Value), nil
		}
		return false, nil
	case 'c':
		return contains(args[0], args[1]), nil
	case 't':
		want, ok := args[1].(*types.AttributeValueMemberS)
		if !ok {
			return false, invalid("Invalid ConditionExpression: Incorrect operand type for operator or function; operator or function: attribute_type")
		}
		return args[0] != nil && typeName(args[0]) == want.Value, nil
	}
	return false, invalid("Invalid expression")
}

func typeName(v types.AttributeValue) string {
	switch v.(type) {
	case *types.AttributeValueMemberS:
		return "S"
	case *types.AttributeValueMemberN:
		return "N"
	case *types.AttributeValueMemberB:
		return "B"
	case *types.AttributeValueMemberBOOL:
		return "BOOL"
	case *types.AttributeValueMemberNULL:
		return "NULL"
	case *types.AttributeValueMemberSS:
		return "SS"
	case *types.AttributeValueMemberNS:
		return "NS"
	case *types.AttributeValueMemberBS:
		return "BS"
	case *types.AttributeValueMemberL:
		return "L"
	case *types.AttributeValueMemberM:
		return "M"
	}
	return ""
}

// compareValues orders two scalars of one type that DynamoDB orders (S, N,
// B); ok is false for anything else, which makes <, <=, >, >= false.
func compareValues(a, b types.AttributeValue) (int, bool) {
	switch a := a.(type) {
	case *types.AttributeValueMemberS:
		if b, ok := b.(*types.AttributeValueMemberS); ok {
			return strings.Compare(a.Value, b.Value), true
		}
	case *types.AttributeValueMemberN:
		if b, ok := b.(*types.AttributeValueMemberN); ok {
			return compareNumbers(a.Value, b.Value), true
		}
	case *types.AttributeValueMemberB:
		if b, ok := b.(*types.AttributeValueMemberB); ok {
			return bytes.Compare(a.Value, b.Value), true
		}
	}
	return 0, false
}

// equalValues is DynamoDB's = : same type and same value, numbers by
// value, sets regardless of order.
func equalValues(a, b types.AttributeValue) bool {
	switch a := a.(type) {
	case *types.AttributeValueMemberS, *types.AttributeValueMemberN, *types.AttributeValueMemberB:
		c, ok := compareValues(a, b)
		return ok && c == 0
	case *types.AttributeValueMemberBOOL:
		b, ok := b.(*types.AttributeValueMemberBOOL)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberNULL:
		_, ok := b.(*types.AttributeValueMemberNULL)
		return ok
	case *types.AttributeValueMemberSS:
		b, ok := b.(*types.AttributeValueMemberSS)
		return ok && sameSet(a.Value, b.Value, func(x, y string) bool { return x == y })
	case *types.AttributeValueMemberNS:
		b, ok := b.(*types.AttributeValueMemberNS)
		return ok && sameSet(a.Value, b.Value, func(x, y string) bool { return compareNumbers(x, y) == 0 })
	case *types.AttributeValueMemberBS:
		b, ok := b.(*types.AttributeValueMemberBS)
		return ok && sameSet(a.Value, b.Value, bytes.Equal)
	case *types.AttributeValueMemberL:
		b, ok := b.(*types.AttributeValueMemberL)
		if !ok || len(a.Value) != len(b.Value) {
			return false
		}
		for i := range a.Value {
			if !equalValues(a.Value[i], b.Value[i]) {
				return false
			}
		}
		return true
	case *types.AttributeValueMemberM:
		b, ok := b.(*types.AttributeValueMemberM)
		if !ok || len(a.Value) != len(b.Value) {
			return false
		}
		for k, v := range a.Value {
			w, ok := b.Value[k]
			if !ok || !equalValues(v, w) {
				return false
			}
		}
		return true
	}
	return false
}

func sameSet[T any](a, b []T, eq func(T, T) bool) bool {
	return len(a) == len(b) && subset(a, b, eq)
}

func subset[T any](a, b []T, eq func(T, T) bool) bool {
	for _, x := range a {
		found := false
		for _, y := range b {
			if eq(x, y) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// contains is DynamoDB's contains(a, b): a substring of a string, a member
// of a set, or an element of a list.
func contains(a, b types.AttributeValue) bool {
	if b == nil {
		return false
	}
	switch a := a.(type) {
	case *types.AttributeValueMemberS:
		s, ok := b.(*types.AttributeValueMemberS)
		return ok && strings.Contains(a.Value, s.Value)
	case *types.AttributeValueMemberB:
		s, ok := b.(*types.AttributeValueMemberB)
		return ok && bytes.Contains(a.Value, s.Value)
	case *types.AttributeValueMemberSS:
		s, ok := b.(*types.AttributeValueMemberS)
		return ok && subset([]string{s.Value}, a.Value, func(x, y string) bool { return x == y })
	case *types.AttributeValueMemberNS:
		s, ok := b.(*types.AttributeValueMemberN)
		return ok && subset([]string{s.Value}, a.Value, func(x, y string) bool { return compareNumbers(x, y) == 0 })
	case *types.AttributeValueMemberBS:
		s, ok := b.(*types.AttributeValueMemberB)
		return ok && subset([][]byte{s.Value}, a.Value, bytes.Equal)
	case *types.AttributeValueMemberL:
		for _, v := range a.Value {
			if equalValues(v, b) {
				return true
			}
		}
	}
	return false
}

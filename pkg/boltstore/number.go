package boltstore

import (
	"math/big"
	"strconv"
	"strings"
)

// DynamoDB numbers are decimals of up to 38 significant digits, sent as
// strings. They are compared and added exactly here: as int64 when both
// fit, else as big.Rat, which holds any decimal exactly. A float64 would
// not (it has 15 to 17 significant digits).

// maxNumberDigits is DynamoDB's precision: more significant digits are an
// error, not a rounding.
const maxNumberDigits = 38

// parseNumber parses a DynamoDB number.
func parseNumber(s string) (*big.Rat, bool) {
	if s == "" || strings.ContainsAny(s, "_/xXpP") {
		// big.Rat would take a fraction, underscores or hex; DynamoDB
		// takes decimals only.
		return nil, false
	}
	if strings.EqualFold(strings.TrimLeft(s, "+-"), "inf") || strings.Contains(strings.ToLower(s), "nan") {
		return nil, false
	}
	// big.Rat computes 10^exponent: "1e999999999" would take gigabytes.
	// No number DynamoDB takes has an exponent larger than its digits
	// can bring back into range.
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		exp, err := strconv.Atoi(s[i+1:])
		if err != nil || exp > maxExponent+len(s) || exp < -maxExponent-len(s) {
			return nil, false
		}
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}

// maxExponent bounds the exponents parseNumber accepts (with the number's
// length): above DynamoDB's range of 1E-130 to 1E+126.
const maxExponent = 200

// isCanonicalInt reports whether s is an integer as DynamoDB writes one:
// an optional minus, and no leading zero unless it is "0". Most numbers
// are, and need no other work.
func isCanonicalInt(s string) bool {
	d := strings.TrimPrefix(s, "-")
	if d == "" || len(d) > maxNumberDigits || d[0] == '0' && (len(d) > 1 || len(s) > 1) {
		return false
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return false
		}
	}
	return true
}

// canonicalNumber returns s as DynamoDB returns a number it stored (no
// exponent, no leading or trailing zeros), and false when s is not a
// number DynamoDB takes.
func canonicalNumber(s string) (string, bool) {
	if isCanonicalInt(s) {
		return s, true
	}
	r, ok := parseNumber(s)
	if !ok {
		return "", false
	}
	out := formatNumber(r)
	if significantDigits(out) > maxNumberDigits || !inRange(out) {
		return "", false
	}
	return out, true
}

// inRange reports whether a formatted number is 0 or of a magnitude
// DynamoDB stores: from 1E-130 to below 1E+126.
func inRange(s string) bool {
	s = strings.TrimPrefix(s, "-")
	whole, frac, _ := strings.Cut(s, ".")
	if whole != "0" {
		return len(whole) <= 126
	}
	if frac == "" {
		return true
	}
	// 0.000ddd: the first digit that is not zero is the (zeros+1)th.
	zeros := len(frac) - len(strings.TrimLeft(frac, "0"))
	return zeros < 130
}

// formatNumber writes r, which must be a finite decimal, in full.
func formatNumber(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	// The denominator of a decimal is 2^a·5^b; max(a, b) digits after the
	// point write it exactly.
	d := new(big.Int).Set(r.Denom())
	two, five, q, m := big.NewInt(2), big.NewInt(5), new(big.Int), new(big.Int)
	a, b := 0, 0
	for {
		q.QuoRem(d, two, m)
		if m.Sign() != 0 {
			break
		}
		d.Set(q)
		a++
	}
	for {
		q.QuoRem(d, five, m)
		if m.Sign() != 0 {
			break
		}
		d.Set(q)
		b++
	}
	s := r.FloatString(max(a, b))
	return strings.TrimRight(strings.TrimRight(s, "0"), ".")
}

func significantDigits(s string) int {
	s = strings.TrimPrefix(s, "-")
	s = strings.Replace(s, ".", "", 1)
	s = strings.TrimLeft(s, "0")
	s = strings.TrimRight(s, "0")
	return len(s)
}

// compareNumbers compares two stored (valid) numbers.
func compareNumbers(a, b string) int {
	if x, err := strconv.ParseInt(a, 10, 64); err == nil {
		if y, err := strconv.ParseInt(b, 10, 64); err == nil {
			switch {
			case x < y:
				return -1
			case x > y:
				return 1
			}
			return 0
		}
	}
	x, okx := parseNumber(a)
	y, oky := parseNumber(b)
	if !okx || !oky {
		return strings.Compare(a, b)
	}
	return x.Cmp(y)
}

// addNumbers returns a+b (or a-b when negate), and false when the result
// has more digits than DynamoDB keeps.
func addNumbers(a, b string, negate bool) (string, bool) {
	if x, err := strconv.ParseInt(a, 10, 64); err == nil {
		if y, err := strconv.ParseInt(b, 10, 64); err == nil && y != -1<<63 {
			if negate {
				y = -y
			}
			if s := x + y; (s > x) == (y > 0) || y == 0 {
				return strconv.FormatInt(s, 10), true
			}
		}
	}
	x, okx := parseNumber(a)
	y, oky := parseNumber(b)
	if !okx || !oky {
		return "", false
	}
	if negate {
		y.Neg(y)
	}
	out := formatNumber(x.Add(x, y))
	return out, significantDigits(out) <= maxNumberDigits
}

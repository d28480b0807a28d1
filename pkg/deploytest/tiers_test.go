package deploytest_test

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

// tiered is the price of amount under volume tiers: each tier's upper
// bound (cumulative; the last +Inf) and its price per unit.
func tiered(amount float64, bounds, prices []float64) float64 {
	total, below := 0.0, 0.0
	for i, upper := range bounds {
		if amount <= below {
			break
		}
		total += (math.Min(amount, upper) - below) * prices[i]
		below = upper
	}
	return total
}

// TestDocs_100kTiers (issue 34): docs/100k.md's month at 100,000 verifies
// a second is recomputed here with the price tiers it states (API
// Gateway's HTTP API per request, Lambda's logs per GB; the access log
// and everything else at one price), from the cost page's per-request
// inputs; and its totals are the ones the page quotes elsewhere.
func TestDocs_100kTiers(t *testing.T) {
	b, err := os.ReadFile("../../docs/100k.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	const (
		perSecond   = 100_000
		month       = 30 * 24 * 3600 * perSecond // requests
		millions    = month / 1e6
		gb          = 1 << 30
		tb          = 1024 // GB
		gbSecond    = 0.0000133334
		memoryGB    = 0.25
		apiBilledMs = 13 // the cost page's verify through the API (TestDocs_CostArithmetic)
		urlBilledMs = 10 // and through the function URL
		accessBytes = 259
		apiFnBytes  = 2.2 // one success line in 100
		urlFnBytes  = 250 // every request line
	)
	api := tiered(millions, []float64{300, math.Inf(1)}, []float64{1.00, 0.90})
	lambdaLogs := func(bytes float64) float64 {
		return tiered(bytes*month/gb, []float64{10 * tb, 30 * tb, 50 * tb, math.Inf(1)}, []float64{0.50, 0.25, 0.10, 0.05})
	}
	rows := map[string][2]float64{ // through the API, through the URL (0: none)
		"API Gateway":         {api, 0},
		"Lambda requests":     {millions * 0.20, millions * 0.20},
		"Lambda duration":     {month * apiBilledMs / 1000 * memoryGB * gbSecond, month * urlBilledMs / 1000 * memoryGB * gbSecond},
		"DynamoDB, on demand": {millions * 0.125, millions * 0.125},
		"the access log":      {accessBytes * month / gb * 0.50, 0},
		"the function's own":  {lambdaLogs(apiFnBytes), lambdaLogs(urlFnBytes)},
	}
	_, section, ok := strings.Cut(doc, "\n## Price tiers\n")
	if !ok {
		t.Fatal("docs/100k.md has no section \"Price tiers\"")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	cells := func(label string) [2]float64 {
		t.Helper()
		var out [2]float64
		for _, line := range strings.Split(section, "\n") {
			if !strings.HasPrefix(line, "| "+label) {
				continue
			}
			c := strings.Split(strings.Trim(line, "| "), " | ")
			if len(c) != 3 {
				t.Fatalf("row %q: %d cells, want 3", label, len(c))
			}
			for i, v := range c[1:] {
				if v == "none" {
					continue
				}
				if out[i], err = strconv.ParseFloat(strings.ReplaceAll(strings.Trim(v, "*$"), ",", ""), 64); err != nil {
					t.Fatalf("row %q: %v", label, err)
				}
			}
			return out
		}
		t.Fatalf("the price tiers table has no row %q", label)
		return out
	}
	var total [2]float64
	for label, want := range rows {
		got := cells(label)
		for i := range 2 {
			total[i] += want[i]
			if fmt.Sprintf("%.0f", got[i]) != fmt.Sprintf("%.0f", want[i]) {
				t.Errorf("docs/100k.md %s, column %d: $%.0f, computed $%.0f", label, i+1, got[i], want[i])
			}
		}
	}
	got := cells("**A month**")
	for i := range 2 {
		if fmt.Sprintf("%.0f", got[i]) != fmt.Sprintf("%.0f", total[i]) {
			t.Errorf("docs/100k.md, a month, column %d: $%.0f, computed $%.0f", i+1, got[i], total[i])
		}
	}
	// The page quotes the totals elsewhere: each must be these.
	for _, want := range []string{
		fmt.Sprintf("$%s a month**", thousands(total[0])), fmt.Sprintf("$%.2f a million", total[0]/millions),
		fmt.Sprintf("$%s a month**", thousands(total[1])), fmt.Sprintf("$%.2f a million", total[1]/millions),
		fmt.Sprintf("**$%.2f** | **$0.16** |", total[0]/millions), fmt.Sprintf("| $%s |", thousands(total[0])),
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/100k.md does not say %q", want)
		}
	}
}

// thousands formats v, rounded to the dollar, with commas.
func thousands(v float64) string {
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

package console

import (
	"fmt"
	"html/template"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// UsageBucket is one interval's counts of a key or an organization, as
// the usage API answers them: verifications by outcome ("valid", "revoked",
// "rate_limited", …) and token issuances.
type UsageBucket struct {
	Start         time.Time
	Verifications map[string]int64
	TokensIssued  int64
}

// Total is the bucket's verifications, every outcome.
func (b UsageBucket) Total() int64 {
	var n int64
	for _, c := range b.Verifications {
		n += c
	}
	return n
}

// outcomeOrder is the order of the outcomes in a chart, its legend and its
// table: valid first, then verify's refusal reasons; any other after
// them, by name.
var outcomeOrder = []string{"valid", "revoked", "expired", "disabled", "rate_limited", "usage_exceeded"}

// chartSeries is how many series colours the stylesheet has
// (.series-0 … .series-6); outcomes beyond them share the last.
const chartSeries = 7

// chartWindow is one chart: a span of time cut into equal steps.
type chartWindow struct {
	Title string
	From  time.Time
	Step  time.Duration
	Steps int
}

// Chart geometry, in viewBox units: the SVG scales to its container's
// width (phone to desktop), the text with it.
const (
	chartW, chartH          = 640, 220
	chartLeft, chartRight   = 56, 8
	chartTop, chartBottom   = 12, 28
	chartPlotW, chartPlotH  = chartW - chartLeft - chartRight, chartH - chartTop - chartBottom
	chartFont               = 15
	chartBarGap             = 0.15 // of a step's width, between bars
	chartMaxXLabels         = 6
	chartTimeLayout         = "15:04"
	chartDayLayout          = "Jan 2"
	chartTableTimeLayout    = "2006-01-02 15:04 UTC"
	chartTableDayTimeLayout = "2006-01-02"
)

// renderUsageChart draws w's buckets as stacked bars of verifications by
// outcome, one bar a step, in server-rendered SVG with no script: colours
// from the stylesheet (series classes over its light and dark variables),
// axes and text in currentColor, a viewBox that scales to any width. The
// numbers are there for a screen reader twice: the SVG's <title> and <desc>
// sum them up, and a table beside it (in a <details>, open to anyone) holds
// every non-empty step. Buckets outside w are left out; steps with none
// are empty.
func renderUsageChart(id string, w chartWindow, buckets []UsageBucket) template.HTML {
	steps := make([]map[string]int64, w.Steps)
	tokens := make([]int64, w.Steps)
	totals := map[string]int64{}
	var tokensTotal int64
	for _, b := range buckets {
		i := int(b.Start.Sub(w.From) / w.Step)
		if b.Start.Before(w.From) || i >= w.Steps {
			continue
		}
		if steps[i] == nil {
			steps[i] = map[string]int64{}
		}
		for o, n := range b.Verifications {
			if n > 0 {
				steps[i][o] += n
				totals[o] += n
			}
		}
		tokens[i] += b.TokensIssued
		tokensTotal += b.TokensIssued
	}
	outcomes := orderOutcomes(slices.Collect(maps.Keys(totals)))
	var peak int64
	for _, s := range steps {
		var n int64
		for _, c := range s {
			n += c
		}
		peak = max(peak, n)
	}
	top := niceCeil(peak)

	var b strings.Builder
	esc := template.HTMLEscapeString
	fmt.Fprintf(&b, `<figure class="chart" aria-labelledby="%s-caption">`, id)
	fmt.Fprintf(&b, `<figcaption id="%s-caption">%s</figcaption>`, id, esc(w.Title))
	fmt.Fprintf(&b, `<svg viewBox="0 0 %d %d" role="img" aria-labelledby="%s-title %s-desc" focusable="false">`, chartW, chartH, id, id)
	fmt.Fprintf(&b, `<title id="%s-title">%s</title>`, id, esc(w.Title))
	fmt.Fprintf(&b, `<desc id="%s-desc">%s</desc>`, id, esc(describe(w, totals, outcomes, tokensTotal)))

	// The y axis: 0, half and the top, as grid lines.
	for _, v := range []int64{0, top / 2, top} {
		y := chartTop + chartPlotH - float64(v)/float64(top)*chartPlotH
		fmt.Fprintf(&b, `<line class="grid" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/>`, chartLeft, chartW-chartRight, y, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle" font-size="%d" fill="currentColor">%s</text>`,
			chartLeft-6, y, chartFont, shortCount(v))
	}
	// The bars: each step's outcomes stacked in outcomeOrder from the axis.
	stepW := float64(chartPlotW) / float64(w.Steps)
	barW := stepW * (1 - chartBarGap)
	for i, s := range steps {
		x := chartLeft + float64(i)*stepW + (stepW-barW)/2
		base := float64(chartTop + chartPlotH)
		for si, o := range outcomes {
			n := s[o]
			if n == 0 {
				continue
			}
			h := float64(n) / float64(top) * chartPlotH
			base -= h
			fmt.Fprintf(&b, `<rect class="series-%d" x="%.1f" y="%.1f" width="%.1f" height="%.1f"/>`, min(si, chartSeries-1), x, base, barW, h)
		}
	}
	// The x axis: a few step starts, evenly spread.
	every := max(1, (w.Steps+chartMaxXLabels-1)/chartMaxXLabels)
	layout := chartTimeLayout
	if w.Step >= 24*time.Hour {
		layout = chartDayLayout
	}
	for i := 0; i < w.Steps; i += every {
		x := chartLeft + float64(i)*stepW
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="%d" fill="currentColor">%s</text>`,
			x, chartH-8, chartFont, esc(w.From.Add(time.Duration(i)*w.Step).UTC().Format(layout)))
	}
	b.WriteString(`</svg>`)

	// The legend, in the same order as the stacks.
	if len(outcomes) > 0 {
		b.WriteString(`<ul class="legend">`)
		for si, o := range outcomes {
			fmt.Fprintf(&b, `<li><span class="swatch series-%d" aria-hidden="true"></span>%s <span class="muted">%d</span></li>`, min(si, chartSeries-1), esc(o), totals[o])
		}
		b.WriteString(`</ul>`)
	}

	// The numbers, step by step.
	tableLayout := chartTableTimeLayout
	if w.Step >= 24*time.Hour {
		tableLayout = chartTableDayTimeLayout
	}
	fmt.Fprintf(&b, `<details><summary>%s, as a table</summary>`, esc(w.Title))
	if len(outcomes) == 0 && tokensTotal == 0 {
		b.WriteString(`<p class="muted">No verifications and no tokens issued in this period.</p>`)
	} else {
		// Its own scrolling region, reachable by keyboard, where a phone is
		// too narrow for every outcome's column.
		fmt.Fprintf(&b, `<div class="scroll" role="region" tabindex="0" aria-label="%s, as a table">`, esc(w.Title))
		fmt.Fprintf(&b, `<table><caption class="sr-only">%s (UTC), steps with any use</caption><thead><tr><th scope="col">From</th>`, esc(w.Title))
		for _, o := range outcomes {
			fmt.Fprintf(&b, `<th scope="col">%s</th>`, esc(o))
		}
		b.WriteString(`<th scope="col">Tokens issued</th></tr></thead><tbody>`)
		for i, s := range steps {
			if len(s) == 0 && tokens[i] == 0 {
				continue
			}
			fmt.Fprintf(&b, `<tr><th scope="row">%s</th>`, w.From.Add(time.Duration(i)*w.Step).UTC().Format(tableLayout))
			for _, o := range outcomes {
				fmt.Fprintf(&b, `<td>%d</td>`, s[o])
			}
			fmt.Fprintf(&b, `<td>%d</td></tr>`, tokens[i])
		}
		b.WriteString(`</tbody></table></div>`)
	}
	b.WriteString(`</details></figure>`)
	return template.HTML(b.String())
}

// describe sums a chart up in words: its span, every outcome's count and
// the tokens issued.
func describe(w chartWindow, totals map[string]int64, outcomes []string, tokens int64) string {
	end := w.From.Add(time.Duration(w.Steps) * w.Step)
	span := fmt.Sprintf("From %s to %s, by %s", w.From.UTC().Format(chartTableTimeLayout), end.UTC().Format(chartTableTimeLayout), stepName(w.Step))
	if len(outcomes) == 0 {
		return span + ": no verifications; " + plural(tokens, "token") + " issued."
	}
	var parts []string
	var total int64
	for _, o := range outcomes {
		parts = append(parts, fmt.Sprintf("%s %d", o, totals[o]))
		total += totals[o]
	}
	return fmt.Sprintf("%s: %s (%s); %s issued.", span, plural(total, "verification"), strings.Join(parts, ", "), plural(tokens, "token"))
}

func plural(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.FormatInt(n, 10) + " " + word + "s"
}

func stepName(d time.Duration) string {
	switch d {
	case time.Minute:
		return "minute"
	case time.Hour:
		return "hour"
	case 24 * time.Hour:
		return "day"
	}
	return d.String()
}

// orderOutcomes sorts outcomes as outcomeOrder, unknown ones after it by
// name.
func orderOutcomes(outcomes []string) []string {
	rank := func(o string) int {
		if i := slices.Index(outcomeOrder, o); i >= 0 {
			return i
		}
		return len(outcomeOrder)
	}
	slices.SortFunc(outcomes, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	return outcomes
}

// niceCeil is the smallest of 1, 2, 5 times a power of ten not below n,
// and at least 2: the top of a chart's axis.
func niceCeil(n int64) int64 {
	if n <= 1 {
		return 2
	}
	p := int64(math.Pow(10, math.Floor(math.Log10(float64(n)))))
	for _, m := range []int64{1, 2, 5, 10} {
		if m*p >= n {
			return m * p
		}
	}
	return 10 * p
}

// shortCount writes an axis label: 950, 1.5k, 20k, 3M.
func shortCount(n int64) string {
	switch {
	case n >= 1_000_000:
		return strconv.FormatFloat(float64(n)/1e6, 'f', -1, 64) + "M"
	case n >= 10_000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', -1, 64) + "k"
	}
	return strconv.FormatInt(n, 10)
}

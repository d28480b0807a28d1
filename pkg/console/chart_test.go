package console

import (
	"encoding/xml"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestRenderUsageChart(t *testing.T) {
	from := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	w := chartWindow{Title: "Last 24 hours", From: from, Step: time.Hour, Steps: 24}

	t.Run("OK", func(t *testing.T) {
		got := string(renderUsageChart("day", w, []UsageBucket{
			{Start: from, Verifications: map[string]int64{"valid": 30, "revoked": 10}, TokensIssued: 2},
			{Start: from.Add(5 * time.Hour), Verifications: map[string]int64{"rate_limited": 5, "valid": 15, "mystery": 1}},
			{Start: from.Add(-time.Hour), Verifications: map[string]int64{"valid": 999}},     // before the window
			{Start: from.Add(24 * time.Hour), Verifications: map[string]int64{"valid": 999}}, // after it
		}))
		// Well-formed markup, as a browser's SVG parser needs it.
		if err := xml.Unmarshal([]byte(got), new(struct{})); err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, got)
		}
		for _, bad := range []string{"<script", "style=", " on"} {
			if strings.Contains(got, bad) {
				t.Errorf("the chart holds %q: no script and no inline style (the CSP refuses both)", bad)
			}
		}
		for _, want := range []string{
			`viewBox="0 0 640 220"`, `role="img"`, `aria-labelledby="day-title day-desc"`,
			// Summed up in words, outcomes in order: valid, the reasons, others.
			`<desc id="day-desc">From 2026-11-28 00:00 UTC to 2026-11-29 00:00 UTC, by hour: 61 verifications (valid 45, revoked 10, rate_limited 5, mystery 1); 2 tokens issued.</desc>`,
			// The table, a row a non-empty step.
			`<th scope="col">valid</th><th scope="col">revoked</th><th scope="col">rate_limited</th><th scope="col">mystery</th><th scope="col">Tokens issued</th>`,
			`<tr><th scope="row">2026-11-28 00:00 UTC</th><td>30</td><td>10</td><td>0</td><td>0</td><td>2</td></tr>`,
			`<tr><th scope="row">2026-11-28 05:00 UTC</th><td>15</td><td>0</td><td>5</td><td>1</td><td>0</td></tr>`,
			// The legend, with totals.
			`<span class="swatch series-0" aria-hidden="true"></span>valid <span class="muted">45</span>`,
			// The axis: the peak step (40) under a top of 50.
			`>50</text>`, `>25</text>`, `>0</text>`,
		} {
			if !strings.Contains(got, want) {
				t.Errorf("the chart lacks %s\n%s", want, got)
			}
		}
		if n := strings.Count(got, "<tr>"); n != 3 {
			t.Errorf("%d table rows, want a head and 2 steps", n)
		}
		// Stacked bars: one rect an outcome of a step; heights in
		// proportion to the counts over the axis's top (50 for 148 units).
		rects := regexp.MustCompile(`<rect class="(series-\d)" x="([\d.]+)" y="([\d.]+)" width="[\d.]+" height="([\d.]+)"/>`).FindAllStringSubmatch(got, -1)
		type bar struct {
			class string
			x, y  float64
			h     float64
		}
		var bars []bar
		for _, m := range rects {
			x, _ := strconv.ParseFloat(m[2], 64)
			y, _ := strconv.ParseFloat(m[3], 64)
			h, _ := strconv.ParseFloat(m[4], 64)
			bars = append(bars, bar{m[1], x, y, h})
		}
		if len(bars) != 5 {
			t.Fatalf("%d bars, want 5 (2 outcomes at 00:00, 3 at 05:00): %v", len(bars), bars)
		}
		unit := float64(chartPlotH) / 50
		for i, want := range []struct {
			class string
			n     int64
		}{{"series-0", 30}, {"series-1", 10}, {"series-0", 15}, {"series-2", 5}, {"series-3", 1}} {
			if bars[i].class != want.class || abs(bars[i].h-float64(want.n)*unit) > 0.1 {
				t.Errorf("bar %d: %+v, want %s of height %.1f", i, bars[i], want.class, float64(want.n)*unit)
			}
		}
		// Stacked: each bar starts where the one below it ends.
		if abs(bars[1].y+bars[1].h-bars[0].y) > 0.1 || abs(bars[3].y+bars[3].h-bars[2].y) > 0.1 {
			t.Errorf("bars not stacked: %v", bars)
		}
		// Placed by time: 05:00 is five steps right of 00:00.
		if step := float64(chartPlotW) / 24; abs(bars[2].x-bars[0].x-5*step) > 0.1 {
			t.Errorf("the 05:00 bar at x %.1f, the 00:00 one at %.1f: want %.1f apart", bars[2].x, bars[0].x, 5*step)
		}
	})

	t.Run("Empty", func(t *testing.T) {
		got := string(renderUsageChart("none", chartWindow{Title: "Last 30 days", From: from, Step: 24 * time.Hour, Steps: 30}, nil))
		if err := xml.Unmarshal([]byte(got), new(struct{})); err != nil {
			t.Fatalf("not well-formed: %v", err)
		}
		for _, want := range []string{"no verifications; 0 tokens issued.", "No verifications and no tokens issued in this period.", ">Nov 28</text>"} {
			if !strings.Contains(got, want) {
				t.Errorf("the empty chart lacks %q\n%s", want, got)
			}
		}
		if strings.Contains(got, "<rect") || strings.Contains(got, "<table") {
			t.Error("the empty chart draws bars or a table")
		}
	})

	t.Run("Escapes", func(t *testing.T) {
		got := string(renderUsageChart("x", w, []UsageBucket{{Start: from, Verifications: map[string]int64{`<b>"`: 1}}}))
		if strings.Contains(got, `<b>"`) {
			t.Errorf("an outcome's name is not escaped: %s", got)
		}
	})
}

func TestNiceCeil(t *testing.T) {
	for n, want := range map[int64]int64{0: 2, 1: 2, 2: 2, 3: 5, 7: 10, 10: 10, 11: 20, 40: 50, 51: 100, 999: 1000, 1001: 2000} {
		if got := niceCeil(n); got != want {
			t.Errorf("niceCeil(%d) = %d, want %d", n, got, want)
		}
	}
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// Command dashboard draws the CloudWatch dashboard that template.yaml
// defines as an SVG picture of its widget grid: each widget where the
// console places it, with its title, its metrics, statistics and search
// expressions, and no data (there is no AWS account here). docs/operating.md
// shows the picture; a test fails while the committed one differs from
// what this draws from the template, so the two cannot drift.
//
//	go run ./cmd/dashboard > docs/dashboard.svg
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"os"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

func main() {
	tpl := flag.String("template", "template.yaml", "the SAM template")
	id := flag.String("resource", "Dashboard", "the logical id of its AWS::CloudWatch::Dashboard")
	flag.Parse()
	b, err := os.ReadFile(*tpl)
	if err == nil {
		err = Render(os.Stdout, b, *id)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dashboard:", err)
		os.Exit(1)
	}
}

// Body returns the DashboardBody of the dashboard resource id in the
// template, as CloudFormation would make it for a stack that creates its
// table and publishes its events (every condition true), with each
// reference replaced by a readable stand-in: latchkey-<LogicalId>, and
// AWS::Region us-east-1, AWS::StackName latchkey.
func Body(template []byte, id string) (string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(template, &doc); err != nil {
		return "", err
	}
	res := lookup(doc.Content[0], "Resources", id, "Properties", "DashboardBody")
	if res == nil {
		return "", fmt.Errorf("no resource %s with a DashboardBody", id)
	}
	v, err := eval(res, nil)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", errors.New("DashboardBody is not a string")
	}
	return s, nil
}

func lookup(n *yaml.Node, keys ...string) *yaml.Node {
	for _, k := range keys {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				next = n.Content[i+1]
			}
		}
		n = next
	}
	return n
}

var subVar = regexp.MustCompile(`\$\{([^}!]+)\}`)

// stand is the stand-in for a reference to name.
func stand(name string) string {
	switch name {
	case "AWS::Region":
		return "us-east-1"
	case "AWS::StackName":
		return "latchkey"
	}
	name, _, _ = strings.Cut(name, ".")
	return "latchkey-" + name
}

// eval evaluates the intrinsic functions a dashboard body is written
// with: !Join, !Sub (both forms), !If (every condition true), !Ref and
// !GetAtt.
func eval(n *yaml.Node, vars map[string]string) (any, error) {
	tag := strings.TrimPrefix(n.Tag, "!")
	switch tag {
	case "Ref", "GetAtt":
		return stand(n.Value), nil
	case "If":
		if len(n.Content) != 3 {
			return nil, fmt.Errorf("line %d: !If takes 3 arguments", n.Line)
		}
		return eval(n.Content[1], vars)
	case "Join":
		if len(n.Content) != 2 {
			return nil, fmt.Errorf("line %d: !Join takes 2 arguments", n.Line)
		}
		var parts []string
		for _, c := range n.Content[1].Content {
			v, err := eval(c, vars)
			if err != nil {
				return nil, err
			}
			parts = append(parts, fmt.Sprint(v))
		}
		return strings.Join(parts, n.Content[0].Value), nil
	case "Sub":
		text, local := n, map[string]string{}
		if n.Kind == yaml.SequenceNode {
			text = n.Content[0]
			m := n.Content[1]
			for i := 0; i+1 < len(m.Content); i += 2 {
				v, err := eval(m.Content[i+1], vars)
				if err != nil {
					return nil, err
				}
				local[m.Content[i].Value] = fmt.Sprint(v)
			}
		}
		return subVar.ReplaceAllStringFunc(text.Value, func(s string) string {
			name := s[2 : len(s)-1]
			if v, ok := local[name]; ok {
				return v
			}
			return stand(name)
		}), nil
	}
	if n.Kind == yaml.ScalarNode {
		return n.Value, nil
	}
	return nil, fmt.Errorf("line %d: %s is not evaluated here", n.Line, n.Tag)
}

// Widget is one widget of a dashboard body.
type Widget struct {
	Type       string `json:"type"`
	X, Y       int
	Width      int `json:"width"`
	Height     int `json:"height"`
	Properties struct {
		Title   string  `json:"title"`
		Stat    string  `json:"stat"`
		Period  int     `json:"period"`
		Region  string  `json:"region"`
		Metrics [][]any `json:"metrics"`
		// InsightRule: a Contributor Insights rule's top contributors,
		// in place of Metrics.
		InsightRule *struct {
			RuleName            string `json:"ruleName"`
			MaxContributorCount int    `json:"maxContributorCount"`
			OrderBy             string `json:"orderBy"`
		} `json:"insightRule"`
		// Markdown: a text widget's.
		Markdown string `json:"markdown"`
	} `json:"properties"`
}

// Widgets decodes a dashboard body.
func Widgets(body string) ([]Widget, error) {
	var d struct{ Widgets []Widget }
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		return nil, fmt.Errorf("DashboardBody: %w", err)
	}
	return d.Widgets, nil
}

// Series describes one line of a metric widget: its label, and what it is.
func Series(m []any, widgetStat string) (label, what string) {
	var opts map[string]any
	if len(m) > 0 {
		opts, _ = m[len(m)-1].(map[string]any)
	}
	if opts != nil && len(m) == 1 {
		// An expression.
		label, _ = opts["label"].(string)
		expr, _ := opts["expression"].(string)
		return label, expr
	}
	parts := m
	if opts != nil {
		parts = m[:len(m)-1]
	}
	stat := widgetStat
	if s, ok := opts["stat"].(string); ok {
		stat = s
	}
	var dims []string
	for i := 2; i+1 < len(parts); i += 2 {
		dims = append(dims, fmt.Sprintf("%v=%v", parts[i], parts[i+1]))
	}
	what = fmt.Sprintf("%v %v (%s)", parts[0], parts[1], stat)
	if len(dims) > 0 {
		what += " " + strings.Join(dims, " ")
	}
	label, _ = opts["label"].(string)
	if label == "" {
		label = fmt.Sprint(parts[1])
	}
	return label, what
}

// markdownLink is a link of a text widget: [text](target).
var markdownLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// The grid: CloudWatch's 24 columns, and the height of one row unit.
const (
	colWidth  = 50
	rowHeight = 34
	pad       = 6
)

var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"}

// Render draws the dashboard resource id of the template as SVG.
func Render(w io.Writer, template []byte, id string) error {
	body, err := Body(template, id)
	if err != nil {
		return err
	}
	ws, err := Widgets(body)
	if err != nil {
		return err
	}
	height := 0
	for _, wd := range ws {
		height = max(height, (wd.Y+wd.Height)*rowHeight)
	}
	width := 24 * colWidth
	var b strings.Builder
	fmt.Fprintf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"Helvetica, Arial, sans-serif\">\n", width, height+28, width, height+28)
	fmt.Fprintf(&b, "<rect width=\"%d\" height=\"%d\" fill=\"#f2f3f3\"/>\n", width, height+28)
	fmt.Fprintf(&b, "<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"#545b64\">Drawn by cmd/dashboard from template.yaml's %s (DashboardBody); no data: the widgets as CloudWatch lays them out.</text>\n", pad, height+18, html.EscapeString(id))
	for n, wd := range ws {
		x, y := wd.X*colWidth+pad/2, wd.Y*rowHeight+pad/2
		wdt, hgt := wd.Width*colWidth-pad, wd.Height*rowHeight-pad
		// Text longer than the widget is cut at its edge, as the console does.
		fmt.Fprintf(&b, "<clipPath id=\"w%d\"><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/></clipPath>\n", n, x, y, wdt-4, hgt)
		fmt.Fprintf(&b, "<g clip-path=\"url(#w%d)\">\n<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#ffffff\" stroke=\"#d5dbdb\"/>\n", n, x, y, wdt, hgt)
		fmt.Fprintf(&b, "<text x=\"%d\" y=\"%d\" font-size=\"14\" font-weight=\"bold\" fill=\"#16191f\">%s</text>\n", x+10, y+20, html.EscapeString(wd.Properties.Title))
		if wd.Type == "text" {
			// Its markdown with each link's target left out.
			text := markdownLink.ReplaceAllString(wd.Properties.Markdown, "$1")
			fmt.Fprintf(&b, "<text x=\"%d\" y=\"%d\" font-size=\"12\" fill=\"#16191f\">%s</text>\n</g>\n", x+10, y+22, html.EscapeString(strings.ReplaceAll(text, "**", "")))
			continue
		}
		if r := wd.Properties.InsightRule; r != nil {
			fmt.Fprintf(&b, "<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"#16191f\">Contributor Insights <tspan fill=\"#687078\">%s, top %d by %s</tspan></text>\n", x+10, y+hgt-10, html.EscapeString(r.RuleName), r.MaxContributorCount, html.EscapeString(r.OrderBy))
		}
		// The plot area: axes with no line on them.
		px, py, pw, ph := x+40, y+32, wdt-56, hgt-50-16*len(wd.Properties.Metrics)
		if ph < 20 {
			ph = 20
		}
		for i := 0; i <= 3; i++ {
			gy := py + ph*i/3
			fmt.Fprintf(&b, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#eaeded\"/>\n", px, gy, px+pw, gy)
		}
		fmt.Fprintf(&b, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#879596\"/>\n", px, py+ph, px+pw, py+ph)
		fmt.Fprintf(&b, "<text x=\"%d\" y=\"%d\" font-size=\"10\" fill=\"#879596\">period %d s</text>\n", px+pw-60, py+ph+12, wd.Properties.Period)
		for i, m := range wd.Properties.Metrics {
			label, what := Series(m, wd.Properties.Stat)
			ly := py + ph + 24 + 16*i
			fmt.Fprintf(&b, "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/>\n", x+10, ly-9, palette[i%len(palette)])
			fmt.Fprintf(&b, "<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"#16191f\">%s <tspan fill=\"#687078\">%s</tspan></text>\n", x+26, ly, html.EscapeString(label), html.EscapeString(what))
		}
		b.WriteString("</g>\n")
	}
	b.WriteString("</svg>\n")
	_, err = io.WriteString(w, b.String())
	return err
}

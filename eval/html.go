package eval

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// WriteHTML writes dir/index.html: one self-contained page (the plots
// are inline SVG, the style inline; nothing is fetched) with the
// comparison table, precision and recall per config, and cost against F1.
func WriteHTML(dir string, r *Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--html %s: %w", dir, err)
	}
	pr, err := precisionRecallPlot(r)
	if err != nil {
		return fmt.Errorf("plot precision and recall: %w", err)
	}
	cf, err := costF1Plot(r)
	if err != nil {
		return fmt.Errorf("plot cost against F1: %w", err)
	}
	var table, cases bytes.Buffer
	if err := writeTable(&table, r, false); err != nil {
		return err
	}
	if err := writeCases(&cases, r); err != nil {
		return err
	}
	data := htmlData{R: r, PR: template.HTML(pr), CostF1: template.HTML(cf), Table: table.String(), Cases: cases.String(), JudgeOn: r.Judge != nil}
	for _, c := range r.Columns {
		sp, how := c.Score()
		data.Rows = append(data.Rows, htmlRow{C: c, S: sp, How: how, F: c.Heuristic.First})
	}
	var page bytes.Buffer
	if err := pageTemplate.Execute(&page, data); err != nil {
		return err
	}
	path := filepath.Join(dir, "index.html")
	if err := os.WriteFile(path, page.Bytes(), 0o644); err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	return nil
}

type htmlData struct {
	R       *Report
	Rows    []htmlRow
	PR      template.HTML
	CostF1  template.HTML
	Table   string
	Cases   string
	JudgeOn bool
}

type htmlRow struct {
	C   *ColumnReport
	S   Spread
	How string
	F   Score
}

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"f3":  func(v float64) string { return fmt.Sprintf("%.3f", v) },
	"usd": usd,
	"dur": dur,
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>aicr eval: {{.R.Suite}}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em auto;max-width:1100px;color:#1f2328;padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.6em}
table{border-collapse:collapse;font-size:.92em}th,td{border:1px solid #d0d7de;padding:.35em .6em;text-align:right}
th{background:#f6f8fa}td:first-child,th:first-child,td:nth-child(2){text-align:left}
.plots{display:flex;flex-wrap:wrap;gap:1.5em;margin-top:1.2em}.plots figure{margin:0}figcaption{font-size:.9em;color:#57606a}
pre{background:#f6f8fa;padding:1em;overflow:auto;font-size:.82em}
.note{color:#57606a;font-size:.9em}
</style></head><body>
<h1>aicr eval — suite {{.R.Suite}}{{if .R.SuiteVersion}} v{{.R.SuiteVersion}}{{end}}</h1>
<p class="note">{{.R.Cases}} cases ({{.R.CleanCases}} clean), {{.R.Golden}} golden findings, {{.R.Repeat}} repeat(s), line tolerance ±{{.R.Tolerance}}.
{{if .R.Judge}}Judge {{.R.Judge.Model}}, prompt {{.R.Judge.PromptVersion}}, {{.R.Judge.Calls}} requests.{{end}}</p>
<h2>Comparison</h2>
<table><tr><th>Config</th><th>Agent</th><th>TP</th><th>FP</th><th>FN</th><th>Precision</th><th>Recall</th><th>F1</th>
{{if .JudgeOn}}<th>Judge P</th><th>Judge R</th><th>Judge F1</th>{{end}}
<th>Clean cases flagged</th><th>Requests</th><th>Input tok</th><th>Cache read</th><th>Output tok</th><th>Cost</th><th>Wall / review</th><th>Failed</th></tr>
{{range .Rows}}<tr><td>{{.C.Name}}</td><td>{{.C.Agent}}</td><td>{{.F.TP}}</td><td>{{.F.FP}}</td><td>{{.F.FN}}</td>
<td>{{f3 .C.Heuristic.Precision.Mean}}</td><td>{{f3 .C.Heuristic.Recall.Mean}}</td><td>{{f3 .C.Heuristic.F1.Mean}}</td>
{{if $.JudgeOn}}{{with .C.Judged}}<td>{{f3 .Precision.Mean}}</td><td>{{f3 .Recall.Mean}}</td><td>{{f3 .F1.Mean}}</td>{{end}}{{end}}
<td>{{.F.CleanFlagged}}/{{.F.CleanCases}}</td><td>{{.C.Cost.Requests}}</td><td>{{.C.Cost.Input}}</td><td>{{.C.Cost.CacheRead}}</td><td>{{.C.Cost.Output}}</td>
<td>{{usd .C.Cost.USD}}</td><td>{{dur .C.PerReview.Wall}}</td><td>{{.C.Failed}}</td></tr>
{{end}}</table>
<div class="plots">
<figure>{{.PR}}<figcaption>Precision and recall per config (heuristic{{if .JudgeOn}}; the judge's beside it in the table{{end}}).</figcaption></figure>
<figure>{{.CostF1}}<figcaption>Cost per review against F1: up and to the left is better.</figcaption></figure>
</div>
<h2>Terminal report</h2>
<pre>{{.Table}}</pre>
<details><summary>Per case</summary><pre>{{.Cases}}</pre></details>
</body></html>
`))

var (
	precisionColour = color.RGBA{R: 0x1f, G: 0x6f, B: 0xeb, A: 0xff}
	recallColour    = color.RGBA{R: 0xd2, G: 0x99, B: 0x22, A: 0xff}
)

func precisionRecallPlot(r *Report) (string, error) {
	p := plot.New()
	p.Title.Text = "Precision and recall"
	p.Y.Label.Text = "score"
	// Headroom above 1 for the legend, which would cover a perfect bar.
	p.Y.Min, p.Y.Max = 0, 1.25
	p.Y.Tick.Marker = plot.ConstantTicks([]plot.Tick{{Value: 0, Label: "0"}, {Value: 0.25}, {Value: 0.5, Label: "0.5"}, {Value: 0.75}, {Value: 1, Label: "1"}})
	var prec, rec plotter.Values
	var names []string
	for _, c := range r.Columns {
		prec = append(prec, c.Heuristic.Precision.Mean)
		rec = append(rec, c.Heuristic.Recall.Mean)
		names = append(names, c.Name)
	}
	w := vg.Points(18)
	bp, err := plotter.NewBarChart(prec, w)
	if err != nil {
		return "", err
	}
	bp.Color, bp.Offset = precisionColour, -w/2
	br, err := plotter.NewBarChart(rec, w)
	if err != nil {
		return "", err
	}
	br.Color, br.Offset = recallColour, w/2
	p.Add(bp, br)
	p.Legend.Add("precision", bp)
	p.Legend.Add("recall", br)
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs = vg.Points(10)
	p.NominalX(names...)
	return svgOf(p, 5*vg.Inch, 3.6*vg.Inch)
}

func costF1Plot(r *Report) (string, error) {
	p := plot.New()
	p.Title.Text = "Cost per review vs F1"
	p.Y.Label.Text = "F1"
	p.Y.Min, p.Y.Max = 0, 1
	priced := true
	for _, c := range r.Columns {
		priced = priced && c.PerReview.USD != nil
	}
	xs := make(plotter.XYs, len(r.Columns))
	labels := plotter.XYLabels{XYs: xs, Labels: make([]string, len(r.Columns))}
	for i, c := range r.Columns {
		x := float64(c.PerReview.Input + c.PerReview.CacheRead + c.PerReview.CacheWrite + c.PerReview.Output)
		if priced {
			x = *c.PerReview.USD
		}
		xs[i] = plotter.XY{X: x, Y: c.Heuristic.F1.Mean}
		labels.Labels[i] = c.Name
	}
	if priced {
		p.X.Label.Text = "USD per review"
	} else {
		p.X.Label.Text = "tokens per review (no prices configured)"
	}
	p.X.Min = 0
	sc, err := plotter.NewScatter(xs)
	if err != nil {
		return "", err
	}
	sc.GlyphStyle.Color = precisionColour
	sc.GlyphStyle.Radius = vg.Points(4)
	sc.GlyphStyle.Shape = draw.CircleGlyph{}
	lb, err := plotter.NewLabels(labels)
	if err != nil {
		return "", err
	}
	for i := range lb.TextStyle {
		lb.TextStyle[i].XAlign = draw.XLeft
	}
	lb.Offset = vg.Point{X: vg.Points(6), Y: vg.Points(2)}
	p.Add(plotter.NewGrid(), sc, lb)
	if mx := maxX(xs); mx > 0 {
		p.X.Max = mx * 1.3
	} else {
		p.X.Max = 1
	}
	return svgOf(p, 5*vg.Inch, 3.6*vg.Inch)
}

func maxX(xs plotter.XYs) float64 {
	m := 0.0
	for _, v := range xs {
		m = max(m, v.X)
	}
	return m
}

func svgOf(p *plot.Plot, w, h vg.Length) (string, error) {
	c := vgsvg.New(w, h)
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", err
	}
	// Drop the XML prolog: the SVG sits inline in the HTML.
	b := buf.Bytes()
	if i := bytes.Index(b, []byte("<svg")); i > 0 {
		b = b[i:]
	}
	return string(b), nil
}

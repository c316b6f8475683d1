package eval

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteTable prints the comparison a person reads in a terminal: one row
// per column, then recall per category, then what each review cost.
func WriteTable(w io.Writer, r *Report) error { return writeTable(w, r, true) }

// writeTable is WriteTable, with the per-case rows only when cases is set
// (the HTML page folds them away).
func writeTable(w io.Writer, r *Report, cases bool) error {
	fmt.Fprintf(w, "suite %s", r.Suite)
	if r.SuiteVersion != "" {
		fmt.Fprintf(w, " v%s", r.SuiteVersion)
	}
	fmt.Fprintf(w, ": %d cases (%d clean), %d golden findings, %d repeat(s), line tolerance ±%d\n",
		r.Cases, r.CleanCases, r.Golden, r.Repeat, r.Tolerance)
	if r.Judge != nil {
		fmt.Fprintf(w, "judge: %s, prompt %s, %d requests (%d input, %d output tokens)\n", r.Judge.Model, r.Judge.PromptVersion,
			r.Judge.Calls, r.Judge.InputTokens, r.Judge.OutputTokens)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	head := "CONFIG\tAGENT\tTP\tFP\tFN\tPRECISION\tRECALL\tF1"
	if r.Judge != nil {
		head += "\tJUDGE P\tJUDGE R\tJUDGE F1"
	}
	head += "\tCLEAN FLAGGED\tFAILED"
	fmt.Fprintln(tw, head)
	for _, c := range r.Columns {
		s := c.Heuristic.First
		row := fmt.Sprintf("%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s", c.Name, c.Agent, s.TP, s.FP, s.FN,
			stat(c.Heuristic.Precision, r.Repeat), stat(c.Heuristic.Recall, r.Repeat), stat(c.Heuristic.F1, r.Repeat))
		if r.Judge != nil && c.Judged != nil {
			row += fmt.Sprintf("\t%s\t%s\t%s", stat(c.Judged.Precision, r.Repeat), stat(c.Judged.Recall, r.Repeat), stat(c.Judged.F1, r.Repeat))
		}
		row += fmt.Sprintf("\t%d/%d (%d findings)\t%d", s.CleanFlagged, s.CleanCases, s.CleanFP, c.Failed)
		fmt.Fprintln(tw, row)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Repeat > 1 {
		fmt.Fprintf(w, "(mean ±stddev [min–max] over %d repeats; TP/FP/FN of the first)\n", r.Repeat)
	}

	fmt.Fprintln(w, "\nrecall per category (heuristic, first repeat)")
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	cats := categoriesOf(r)
	fmt.Fprint(tw, "CATEGORY")
	for _, c := range r.Columns {
		fmt.Fprintf(tw, "\t%s", c.Name)
	}
	fmt.Fprintln(tw)
	for _, cat := range cats {
		fmt.Fprint(tw, cat)
		for _, c := range r.Columns {
			cs := c.Heuristic.First.Categories[cat]
			fmt.Fprintf(tw, "\t%d/%d", cs.Found, cs.Golden)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	if cases {
		if err := writeCases(w, r); err != nil {
			return err
		}
	}

	fmt.Fprintln(w, "\ncost and time (all reviews; per review in parentheses)")
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONFIG\tPASSES\tREQUESTS\tINPUT\tCACHE READ\tCACHE WRITE\tOUTPUT\tCOST\tWALL")
	for _, c := range r.Columns {
		t, p := c.Cost, c.PerReview
		fmt.Fprintf(tw, "%s\t%d\t%d (%d)\t%d (%d)\t%d\t%d\t%d (%d)\t%s (%s)\t%s (%s)\n", c.Name, t.Passes, t.Requests, p.Requests,
			t.Input, p.Input, t.CacheRead, t.CacheWrite, t.Output, p.Output, usd(t.USD), usd(p.USD), dur(t.Wall), dur(p.Wall))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nwall time of the whole evaluation: %s\n", dur(r.Wall))
	return writeFailures(w, r)
}

// writeCases is one row per case: per column the golden findings found,
// the other problems reported, the review's wall time and cost (first
// repeat).
func writeCases(w io.Writer, r *Report) error {
	if len(r.Columns) == 0 || len(r.Columns[0].Repeats) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nper case (first repeat): found/golden, other problems, wall time, cost")
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprint(tw, "CASE")
	for _, c := range r.Columns {
		fmt.Fprintf(tw, "\t%s", c.Name)
	}
	fmt.Fprintln(tw)
	for i, cr := range r.Columns[0].Repeats[0].Cases {
		name := cr.CaseID
		if cr.Clean {
			name += " (clean)"
		}
		fmt.Fprint(tw, name)
		for _, c := range r.Columns {
			x := c.Repeats[0].Cases[i]
			cell := fmt.Sprintf("%d/%d +%d %s %s", len(x.Pairs), x.Golden, len(x.Problems)-len(x.Pairs), dur(x.Cost.Wall), usd(x.Cost.USD))
			if x.Status == "failed" {
				cell = "failed"
			}
			fmt.Fprintf(tw, "\t%s", cell)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// writeFailures names the reviews that failed: a failed review reports
// nothing, which the score alone would read as a blind reviewer.
func writeFailures(w io.Writer, r *Report) error {
	for _, c := range r.Columns {
		for i, rr := range c.Repeats {
			for _, cr := range rr.Cases {
				if cr.Status == "failed" {
					fmt.Fprintf(w, "failed: %s repeat %d case %s: %s\n", c.Name, i+1, cr.CaseID, firstLine(cr.Error))
				}
			}
		}
	}
	return nil
}

func categoriesOf(r *Report) []string {
	seen := map[string]bool{}
	for _, c := range r.Columns {
		for k := range c.Heuristic.First.Categories {
			seen[k] = true
		}
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func stat(s Stat, repeat int) string {
	if repeat <= 1 {
		return fmt.Sprintf("%.3f", s.Mean)
	}
	return fmt.Sprintf("%.3f ±%.3f [%.3f–%.3f]", s.Mean, s.Stddev, s.Min, s.Max)
}

func usd(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("$%.4f", *v)
}

func dur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Millisecond).String()
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

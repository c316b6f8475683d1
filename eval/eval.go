package eval

import (
	"context"
	"fmt"
	"math"
	"path"
	"time"
)

// Plan is what to measure.
type Plan struct {
	Columns []Column
	// Repeat reviews every case this many times per column (models are
	// not deterministic); 0 is once.
	Repeat int
	// Judge, when set, scores beside the heuristic.
	Judge *Judge
	// Cases, when set, keeps only the cases whose id matches this
	// path.Match pattern.
	Cases string
}

// Report is the outcome of a plan, what every output format shows.
type Report struct {
	Suite        string          `json:"suite"`
	SuiteVersion string          `json:"suite_version,omitempty"`
	Cases        int             `json:"cases"`
	CleanCases   int             `json:"clean_cases"`
	Golden       int             `json:"golden"`
	Repeat       int             `json:"repeat"`
	Tolerance    int             `json:"line_tolerance"`
	Judge        *JudgeInfo      `json:"judge,omitempty"`
	Columns      []*ColumnReport `json:"columns"`
	Wall         time.Duration   `json:"wall_ns"`
}

// JudgeInfo names the judge that scored beside the heuristic.
type JudgeInfo struct {
	PromptVersion string `json:"prompt_version"`
	Model         string `json:"model"`
	// Calls counts the judge's model requests; the tokens are what they
	// spent (not in any column's cost).
	Calls        int `json:"calls"`
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// ColumnReport is one column's figures.
type ColumnReport struct {
	Name  string `json:"name"`
	Agent string `json:"agent"`
	// Heuristic and Judged are the spread over repeats of each repeat's
	// score; Judged is nil without a judge.
	Heuristic Spread  `json:"heuristic"`
	Judged    *Spread `json:"judged,omitempty"`
	// Cost sums every review of every repeat; PerReview is its mean.
	Cost      Cost        `json:"cost"`
	PerReview Cost        `json:"per_review"`
	Repeats   []RepeatRun `json:"repeats"`
	Failed    int         `json:"failed_reviews"`
}

// RepeatRun is one repeat of one column.
type RepeatRun struct {
	Heuristic Score        `json:"heuristic"`
	Judged    *Score       `json:"judged,omitempty"`
	Cases     []CaseReport `json:"cases"`
}

// CaseReport is one case in one repeat.
type CaseReport struct {
	*CaseRun
	Clean  bool   `json:"clean"`
	Golden int    `json:"golden"`
	Pairs  []Pair `json:"matched"`
	Judged []Pair `json:"judged,omitempty"`
}

// Spread is the mean, minimum, maximum and population standard deviation
// of the repeats' precision, recall and F1; the rest of the first
// repeat's score (counts, categories, clean cases) comes with it.
type Spread struct {
	Precision Stat  `json:"precision"`
	Recall    Stat  `json:"recall"`
	F1        Stat  `json:"f1"`
	First     Score `json:"score"`
}

// Stat summarises one figure over the repeats.
type Stat struct {
	Mean   float64 `json:"mean"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Stddev float64 `json:"stddev"`
}

// Filter keeps the cases whose id matches pattern (path.Match); "" keeps all.
func (s *Suite) Filter(pattern string) (*Suite, error) {
	if pattern == "" {
		return s, nil
	}
	out := *s
	out.Cases = nil
	for _, c := range s.Cases {
		ok, err := path.Match(pattern, c.ID)
		if err != nil {
			return nil, fmt.Errorf("--cases %q: %w", pattern, err)
		}
		if ok {
			out.Cases = append(out.Cases, c)
		}
	}
	if len(out.Cases) == 0 {
		return nil, fmt.Errorf("--cases %q matches no case of suite %s", pattern, s.Name)
	}
	return &out, nil
}

// Evaluate replays the suite for every column and repeat and scores it.
func Evaluate(ctx context.Context, s *Suite, plan Plan, opts Options) (*Report, error) {
	start := time.Now()
	s, err := s.Filter(plan.Cases)
	if err != nil {
		return nil, err
	}
	if plan.Repeat <= 0 {
		plan.Repeat = 1
	}
	rep := &Report{Suite: s.Name, SuiteVersion: s.Version, Cases: len(s.Cases), Repeat: plan.Repeat, Tolerance: LineTolerance}
	for _, c := range s.Cases {
		rep.Golden += len(c.Golden)
		if c.Clean {
			rep.CleanCases++
		}
	}
	replay, err := NewReplay(ctx, s, opts)
	if err != nil {
		return nil, err
	}
	defer replay.Close()
	for _, col := range plan.Columns {
		cr := &ColumnReport{Name: col.Name, Agent: col.AgentKind()}
		var hs, js []Score
		reviews := 0
		for r := 1; r <= plan.Repeat; r++ {
			runs, err := replay.Run(ctx, col, r)
			if err != nil {
				return nil, err
			}
			rr, err := scoreRepeat(ctx, s, runs, plan.Judge)
			if err != nil {
				return nil, fmt.Errorf("column %s: %w", col.Name, err)
			}
			for _, run := range runs {
				cr.Cost.Add(run.Cost, reviews == 0)
				reviews++
				if run.Status == "failed" {
					cr.Failed++
				}
			}
			hs = append(hs, rr.Heuristic)
			if rr.Judged != nil {
				js = append(js, *rr.Judged)
			}
			cr.Repeats = append(cr.Repeats, rr)
		}
		cr.Heuristic = spread(hs)
		if len(js) > 0 {
			j := spread(js)
			cr.Judged = &j
		}
		cr.PerReview = cr.Cost.mean(reviews)
		rep.Columns = append(rep.Columns, cr)
	}
	if plan.Judge != nil {
		u := plan.Judge.Usage()
		rep.Judge = &JudgeInfo{PromptVersion: JudgePromptVersion, Model: plan.Judge.Model(), Calls: plan.Judge.Calls(),
			InputTokens: u.Prompt(), OutputTokens: u.Output}
	}
	rep.Wall = time.Since(start)
	return rep, nil
}

// ScoreRuns scores one repeat's reviews; the judge may be nil.
func scoreRepeat(ctx context.Context, s *Suite, runs []*CaseRun, judge *Judge) (RepeatRun, error) {
	var rr RepeatRun
	var hs, js []Scored
	for i, c := range s.Cases {
		run := runs[i]
		pairs, err := MatchCase(ctx, Heuristic{}, c.Golden, run.Problems)
		if err != nil {
			return rr, err
		}
		cr := CaseReport{CaseRun: run, Clean: c.Clean, Golden: len(c.Golden), Pairs: nonNil(pairs)}
		hs = append(hs, Scored{Case: c, Run: run, Pairs: pairs})
		if judge != nil {
			jp, err := MatchCase(ctx, judge, c.Golden, run.Problems)
			if err != nil {
				return rr, fmt.Errorf("judge case %s: %w", c.ID, err)
			}
			cr.Judged = nonNil(jp)
			js = append(js, Scored{Case: c, Run: run, Pairs: jp})
		}
		rr.Cases = append(rr.Cases, cr)
	}
	rr.Heuristic = Tally(hs)
	if judge != nil {
		j := Tally(js)
		rr.Judged = &j
	}
	return rr, nil
}

func nonNil(p []Pair) []Pair {
	if p == nil {
		return []Pair{}
	}
	return p
}

func spread(scores []Score) Spread {
	sp := Spread{First: scores[0]}
	pick := func(f func(Score) float64) Stat {
		st := Stat{Min: math.Inf(1), Max: math.Inf(-1)}
		for _, s := range scores {
			v := f(s)
			st.Mean += v
			st.Min = math.Min(st.Min, v)
			st.Max = math.Max(st.Max, v)
		}
		st.Mean /= float64(len(scores))
		for _, s := range scores {
			d := f(s) - st.Mean
			st.Stddev += d * d
		}
		st.Stddev = math.Sqrt(st.Stddev / float64(len(scores)))
		return st
	}
	sp.Precision = pick(func(s Score) float64 { return s.Precision })
	sp.Recall = pick(func(s Score) float64 { return s.Recall })
	sp.F1 = pick(func(s Score) float64 { return s.F1 })
	return sp
}

func (c Cost) mean(n int) Cost {
	if n == 0 {
		return c
	}
	m := Cost{Passes: c.Passes / n, Requests: c.Requests / n, Input: c.Input / n, CacheRead: c.CacheRead / n,
		CacheWrite: c.CacheWrite / n, Output: c.Output / n, Wall: c.Wall / time.Duration(n)}
	if c.USD != nil {
		v := *c.USD / float64(n)
		m.USD = &v
	}
	return m
}

// Score is the column's headline score: the judge's when there is one
// (public benchmarks are judge-scored), else the heuristic's.
func (c *ColumnReport) Score() (Spread, string) {
	if c.Judged != nil {
		return *c.Judged, "judge"
	}
	return c.Heuristic, "heuristic"
}

// GateFailure is one column below a threshold.
type GateFailure struct {
	Column, Figure, Scoring string
	Got, Min                float64
}

func (g GateFailure) String() string {
	return fmt.Sprintf("%s: %s %.3f (%s) is below --min-%s %.3f", g.Column, g.Figure, g.Got, g.Scoring, g.Figure, g.Min)
}

// Gate lists the columns whose mean F1 or recall is below minF1 or
// minRecall (a negative threshold is not checked).
func (r *Report) Gate(minF1, minRecall float64) []GateFailure {
	var out []GateFailure
	for _, c := range r.Columns {
		sp, how := c.Score()
		if minF1 >= 0 && sp.F1.Mean < minF1 {
			out = append(out, GateFailure{Column: c.Name, Figure: "f1", Scoring: how, Got: sp.F1.Mean, Min: minF1})
		}
		if minRecall >= 0 && sp.Recall.Mean < minRecall {
			out = append(out, GateFailure{Column: c.Name, Figure: "recall", Scoring: how, Got: sp.Recall.Mean, Min: minRecall})
		}
	}
	return out
}

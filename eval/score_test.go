package eval

import (
	"context"
	"reflect"
	"testing"

	"github.com/aicr-dev/aicr/review"
)

func TestHeuristicMatchRules(t *testing.T) {
	g := Golden{File: "src/ring.c", StartLine: 10, EndLine: 12, Category: "off-by-one", Keywords: []string{"Bound", "<="}, Description: "x"}
	noKw := Golden{File: "src/ring.c", StartLine: 10, EndLine: 12, Category: "off-by-one", Description: "x"}
	p := func(file string, line, end int, cat, msg string) review.Problem {
		return review.Problem{File: file, Line: line, EndLine: end, Category: cat, Message: msg}
	}
	for _, tc := range []struct {
		name string
		g    Golden
		p    review.Problem
		want bool
	}{
		{"inside", g, p("src/ring.c", 11, 0, "bug", "loop bound wrong"), true},
		{"tolerance: 3 above the start", g, p("src/ring.c", 7, 0, "bug", "bound"), true},
		{"tolerance: 4 above the start", g, p("src/ring.c", 6, 0, "bug", "bound"), false},
		{"tolerance: 3 below the end", g, p("src/ring.c", 15, 0, "bug", "bound"), true},
		{"tolerance: 4 below the end", g, p("src/ring.c", 16, 0, "bug", "bound"), false},
		{"a range reaching into the tolerance", g, p("src/ring.c", 1, 7, "bug", "bound"), true},
		{"a range ending before it", g, p("src/ring.c", 1, 6, "bug", "bound"), false},
		{"another file", g, p("src/other.c", 11, 0, "bug", "bound"), false},
		{"the same file spelled ./", g, p("./src/ring.c", 11, 0, "bug", "bound"), true},
		{"keyword case-insensitive", g, p("src/ring.c", 11, 0, "bug", "the BOUND check"), true},
		{"keyword in the suggestion", g, review.Problem{File: "src/ring.c", Line: 11, Category: "bug", Message: "wrong", Suggestion: "use < not <="}, true},
		{"no keyword, other category", g, p("src/ring.c", 11, 0, "bug", "something is off"), false},
		{"no keyword, same category", g, p("src/ring.c", 11, 0, "Off By One", "something is off"), true},
		{"no keywords given: place only", noKw, p("src/ring.c", 11, 0, "style", "anything"), true},
		{"builtin's category name", Golden{File: "a.py", StartLine: 3, EndLine: 3, Category: "leaked-credential", Keywords: []string{"zzz"}, Description: "x"},
			p("a.py", 3, 0, "hard-coded-credential", "secret"), true},
		{"a golden finding without a place", Golden{Description: "x"}, p("a.py", 3, 0, "bug", "x"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, _ := (Heuristic{}).Match(context.Background(), tc.g, tc.p); got != tc.want {
				t.Errorf("match %v, want %v", got, tc.want)
			}
		})
	}
}

// Each golden finding matches at most once, each problem at most once,
// greedily in (file, line) order: a duplicate report is a false
// positive, and two goldens next to each other take one problem each.
func TestMatchCaseEachGoldenOnce(t *testing.T) {
	golden := []Golden{
		{File: "b.c", StartLine: 20, EndLine: 20, Description: "second"},
		{File: "b.c", StartLine: 10, EndLine: 10, Description: "first"},
	}
	problems := []review.Problem{
		{File: "b.c", Line: 11, Message: "z"},
		{File: "b.c", Line: 10, Message: "dup"},
		{File: "b.c", Line: 19, Message: "y"},
		{File: "b.c", Line: 12, Message: "a"},
	}
	pairs, err := MatchCase(context.Background(), Heuristic{}, golden, problems)
	if err != nil {
		t.Fatal(err)
	}
	// golden 1 (line 10) first: problems in line order are 10, 11, 12, 19
	// → index 1; golden 0 (line 20) takes line 19 (index 2).
	want := []Pair{{Golden: 0, Problem: 2}, {Golden: 1, Problem: 1}}
	if !reflect.DeepEqual(pairs, want) {
		t.Fatalf("pairs %+v, want %+v", pairs, want)
	}
	c := &Case{ID: "x", Golden: golden}
	s := Tally([]Scored{{Case: c, Run: &CaseRun{Problems: problems}, Pairs: pairs}})
	if s.TP != 2 || s.FP != 2 || s.FN != 0 || s.Precision != 0.5 || s.Recall != 1 {
		t.Errorf("score %+v", s)
	}
}

func TestTallyClean(t *testing.T) {
	clean := &Case{ID: "c", Clean: true}
	flagged := &Case{ID: "d", Clean: true}
	s := Tally([]Scored{
		{Case: clean, Run: &CaseRun{}},
		{Case: flagged, Run: &CaseRun{Problems: []review.Problem{{File: "a"}, {File: "b"}}}},
	})
	if s.CleanCases != 2 || s.CleanFlagged != 1 || s.CleanFP != 2 || s.FP != 2 || s.CleanShare != 0.5 || s.Precision != 0 || s.F1 != 0 {
		t.Errorf("score %+v", s)
	}
}

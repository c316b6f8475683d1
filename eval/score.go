package eval

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/aicr-dev/aicr/review"
)

// LineTolerance widens a golden range on both sides: a reviewer that
// points at the line above the faulty statement still found it.
const LineTolerance = 3

// categoryAliases map what agents call a class (the builtin checks'
// names, common synonyms models use) to the suite's category, after
// review.NormalizeCategory.
var categoryAliases = map[string]string{
	"hard-coded-credential": "leaked-credential",
	"hardcoded-credential":  "leaked-credential",
	"credential":            "leaked-credential",
	"secret":                "leaked-credential",
	"merge-conflict-marker": "conflict-marker",
	"merge-conflict":        "conflict-marker",
	"null-dereference":      "nil-dereference",
	"null-pointer":          "nil-dereference",
	"nil-pointer":           "nil-dereference",
	"sql-injection":         "injection",
	"command-injection":     "injection",
	"memory-leak":           "resource-leak",
	"file-descriptor-leak":  "resource-leak",
	"data-race":             "race",
	"race-condition":        "race",
	"deadlock":              "lock-leak",
	"overflow":              "integer-overflow",
	"deserialization":       "unsafe-deserialization",
	"error-handling-bug":    "error-handling",
	"bounds":                "off-by-one",
}

// NormalCategory is the suite category an agent's category stands for.
func NormalCategory(c string) string {
	n := review.NormalizeCategory(c)
	if a, ok := categoryAliases[n]; ok {
		return a
	}
	return n
}

// Matcher decides whether a reported problem is the golden finding.
type Matcher interface {
	Match(ctx context.Context, g Golden, p review.Problem) (bool, error)
}

// Heuristic is the matching rule of the suite format: same file, line
// ranges overlapping within LineTolerance, and, when the golden finding
// has keywords, one of them in the message or suggestion or the
// problem's category equal to the golden one.
type Heuristic struct{}

// Match implements Matcher.
func (Heuristic) Match(_ context.Context, g Golden, p review.Problem) (bool, error) {
	return heuristicMatch(g, p), nil
}

func heuristicMatch(g Golden, p review.Problem) bool {
	if !g.Located() || cleanPath(g.File) != cleanPath(p.File) {
		return false
	}
	end := max(p.EndLine, p.Line)
	if p.Line > g.EndLine+LineTolerance || end < g.StartLine-LineTolerance {
		return false
	}
	if len(g.Keywords) == 0 {
		return true
	}
	if g.Category != "" && NormalCategory(p.Category) == g.Category {
		return true
	}
	text := strings.ToLower(p.Message + "\n" + p.Suggestion)
	for _, k := range g.Keywords {
		if k != "" && strings.Contains(text, strings.ToLower(k)) {
			return true
		}
	}
	return false
}

func cleanPath(p string) string {
	return strings.TrimPrefix(path.Clean("/"+strings.ReplaceAll(p, "\\", "/")), "/")
}

// Pair is one golden finding matched to one reported problem (indices
// into Case.Golden and CaseRun.Problems).
type Pair struct {
	Golden  int `json:"golden"`
	Problem int `json:"problem"`
}

// MatchCase pairs goldens with problems, each at most once: goldens in
// suite order (file, then start line), each taking the first unmatched
// problem in (file, line, message) order that m accepts. Greedy and
// deterministic, so a rerun of the same answers scores the same.
func MatchCase(ctx context.Context, m Matcher, golden []Golden, problems []review.Problem) ([]Pair, error) {
	gi := make([]int, len(golden))
	for i := range gi {
		gi[i] = i
	}
	sort.SliceStable(gi, func(a, b int) bool {
		x, y := golden[gi[a]], golden[gi[b]]
		if x.File != y.File {
			return x.File < y.File
		}
		return x.StartLine < y.StartLine
	})
	pi := make([]int, len(problems))
	for i := range pi {
		pi[i] = i
	}
	sort.SliceStable(pi, func(a, b int) bool {
		x, y := problems[pi[a]], problems[pi[b]]
		if x.File != y.File {
			return x.File < y.File
		}
		if x.Line != y.Line {
			return x.Line < y.Line
		}
		return x.Message < y.Message
	})
	used := make([]bool, len(problems))
	var pairs []Pair
	for _, g := range gi {
		for _, p := range pi {
			if used[p] {
				continue
			}
			ok, err := m.Match(ctx, golden[g], problems[p])
			if err != nil {
				return nil, fmt.Errorf("match golden %d with problem %d: %w", g, p, err)
			}
			if ok {
				used[p] = true
				pairs = append(pairs, Pair{Golden: g, Problem: p})
				break
			}
		}
	}
	sort.Slice(pairs, func(a, b int) bool { return pairs[a].Golden < pairs[b].Golden })
	return pairs, nil
}

// Score is precision and recall over a set of reviewed cases.
type Score struct {
	TP        int     `json:"tp"`
	FP        int     `json:"fp"`
	FN        int     `json:"fn"`
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
	F1        float64 `json:"f1"`
	// CleanCases counts the clean cases reviewed; CleanFlagged those with
	// any finding; CleanFP the findings on them (also counted in FP).
	CleanCases   int     `json:"clean_cases"`
	CleanFlagged int     `json:"clean_flagged"`
	CleanFP      int     `json:"clean_fp"`
	CleanShare   float64 `json:"clean_flagged_share"`
	// Categories is recall per golden category.
	Categories map[string]CategoryScore `json:"categories,omitempty"`
}

// CategoryScore is how many golden findings of a class were found.
type CategoryScore struct {
	Golden int     `json:"golden"`
	Found  int     `json:"found"`
	Recall float64 `json:"recall"`
}

// Scored is one case's matching.
type Scored struct {
	Case  *Case
	Run   *CaseRun
	Pairs []Pair
}

// Tally sums the scored cases. Precision with nothing reported and
// recall with nothing to find are 0, never NaN: a figure a gate compares.
func Tally(cases []Scored) Score {
	s := Score{Categories: map[string]CategoryScore{}}
	for _, sc := range cases {
		tp := len(sc.Pairs)
		s.TP += tp
		s.FN += len(sc.Case.Golden) - tp
		fp := len(sc.Run.Problems) - tp
		s.FP += fp
		if sc.Case.Clean {
			s.CleanCases++
			s.CleanFP += fp
			if len(sc.Run.Problems) > 0 {
				s.CleanFlagged++
			}
		}
		found := map[int]bool{}
		for _, p := range sc.Pairs {
			found[p.Golden] = true
		}
		for i, g := range sc.Case.Golden {
			cat := g.Category
			if cat == "" {
				cat = "uncategorised"
			}
			cs := s.Categories[cat]
			cs.Golden++
			if found[i] {
				cs.Found++
			}
			s.Categories[cat] = cs
		}
	}
	for k, cs := range s.Categories {
		cs.Recall = ratio(cs.Found, cs.Golden)
		s.Categories[k] = cs
	}
	s.Precision = ratio(s.TP, s.TP+s.FP)
	s.Recall = ratio(s.TP, s.TP+s.FN)
	if s.Precision+s.Recall > 0 {
		s.F1 = 2 * s.Precision * s.Recall / (s.Precision + s.Recall)
	}
	s.CleanShare = ratio(s.CleanFlagged, s.CleanCases)
	return s
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

package eval_test

import (
	"context"
	"os"
	"testing"

	"github.com/aicr-dev/aicr/eval"
	"github.com/aicr-dev/aicr/internal/svntest"
)

func loadTestSuite(t *testing.T) *eval.Suite {
	t.Helper()
	s, err := eval.LoadSuite(os.DirFS("testdata/suite"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The builtin agent finds the credential and the conflict marker and
// nothing else: TP 2, FN 1 (the off-by-one); it reports each of the three
// conflict markers, and the golden finding matches one of them, so FP 2;
// the clean case is left alone. The figures are the suite's, through the real
// svn replay and pipeline.
func TestEvaluateBuiltin(t *testing.T) {
	svntest.Require(t)
	s := loadTestSuite(t)
	rep, err := eval.Evaluate(context.Background(), s, eval.Plan{Columns: []eval.Column{eval.BuiltinColumn()}}, eval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Columns) != 1 {
		t.Fatalf("columns %d", len(rep.Columns))
	}
	c := rep.Columns[0]
	sc := c.Heuristic.First
	if sc.TP != 2 || sc.FN != 1 || sc.FP != 2 || sc.CleanFP != 0 || sc.CleanCases != 1 || sc.CleanFlagged != 0 {
		for _, cr := range c.Repeats[0].Cases {
			t.Logf("%s %s %s %+v", cr.CaseID, cr.Status, cr.Error, cr.Problems)
		}
		t.Fatalf("score %+v", sc)
	}
	for _, cr := range c.Repeats[0].Cases {
		t.Logf("%s %s %+v", cr.CaseID, cr.Status, cr.Problems)
	}
	t.Logf("score %+v cost %+v wall %s", sc, c.Cost, rep.Wall)
}

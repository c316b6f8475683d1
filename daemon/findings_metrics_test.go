package daemon

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/internal/admintest"
)

// A scrape reads the findings from the store: per repo and state, and
// per group, value and outcome.
func TestMetricsFindingsGauges(t *testing.T) {
	fx := admintest.New(t)
	admintest.AddFindings(t, fx)
	store, err := audit.Open(context.Background(), fx.DB)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	m := NewMetrics(store, "test")
	m.watchRepos([]string{"main", "docs"})
	body := scrape(t, m)
	for _, want := range []string{
		`aicr_findings{repo="main",state="open"} 1`,
		`aicr_findings{repo="main",state="resolved"} 1`,
		`aicr_findings{repo="main",state="dismissed"} 1`,
		`aicr_findings{repo="docs",state="open"} 0`,
		`aicr_findings_outcomes{group="category",outcome="reported",value="security"} 2`,
		`aicr_findings_outcomes{group="category",outcome="false_positive",value="security"} 1`,
		`aicr_findings_outcomes{group="category",outcome="resolved",value="style"} 1`,
		`aicr_findings_outcomes{group="model",outcome="reported",value="gpt-test"} 3`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("missing %s", want)
		}
	}
	if t.Failed() {
		t.Log(body)
	}
	// A repo taken out of the config goes from the gauges.
	m.watchRepos([]string{"main"})
	if body := scrape(t, m); strings.Contains(body, `repo="docs"`) {
		t.Error("a removed repo is still exported")
	}
}

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	if rec.Code != 200 {
		t.Fatalf("scrape: %d %s", rec.Code, b)
	}
	return string(b)
}

// However many categories a model invents, a group exports at most
// maxOutcomeValues values plus "other", and a real value named "other"
// or left empty does not make a second series.
func TestFindingsOutcomesAreCapped(t *testing.T) {
	var stats []findings.Stat
	for i := range 30 {
		stats = append(stats, findings.Stat{Group: "category", Value: fmt.Sprintf("c%02d", i), Reported: 100 - i, Open: 1})
	}
	stats = append(stats, findings.Stat{Group: "category", Value: "other", Reported: 1, Open: 1},
		findings.Stat{Group: "category", Value: "", Reported: 2}, findings.Stat{Group: "agent", Value: "llm", Reported: 7})
	got := capOutcomes(stats, maxOutcomeValues)
	seen := map[[2]string]bool{}
	var other findings.Stat
	for _, s := range got {
		k := [2]string{s.Group, s.Value}
		if seen[k] {
			t.Fatalf("two rows for %v", k)
		}
		seen[k] = true
		if k == [2]string{"category", "other"} {
			other = s
		}
	}
	if len(got) != maxOutcomeValues+2 || !seen[[2]string{"category", "c00"}] || seen[[2]string{"category", "c29"}] || !seen[[2]string{"agent", "llm"}] {
		t.Fatalf("capped rows: %+v", got)
	}
	// c20..c29 (80..71), the real "other" (1) and the empty value (2).
	if other.Reported != 755+1+2 || other.Open != 11 {
		t.Fatalf("other = %+v", other)
	}
}

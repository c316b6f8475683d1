package daemon

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/aicr-dev/aicr/audit"
)

const alertsFile = "../configs/prometheus-alerts.yml"

// The shipped alert rules parse, have what Prometheus requires of each
// rule, and name only metrics the daemon exports: a renamed metric would
// otherwise leave an alert that can never fire.
func TestPrometheusAlertRules(t *testing.T) {
	data, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&file); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	exported := exportedMetricNames(t)
	metricRef := regexp.MustCompile(`\baicr_[a-z_]+`)
	seen := map[string]bool{}
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Expr == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("rule %+v: alert, expr, labels.severity and annotations.summary are required", r)
			}
			if r.For != "" {
				if _, err := time.ParseDuration(r.For); err != nil {
					t.Errorf("%s: for %q: %v", r.Alert, r.For, err)
				}
			}
			for _, name := range metricRef.FindAllString(r.Expr, -1) {
				if !exported[name] {
					t.Errorf("%s: expr uses %s, which the daemon does not export (exported: %v)", r.Alert, name, keys(exported))
				}
			}
			seen[r.Alert] = true
		}
	}
	// The four: queue age, dead runs, dispatch failures, daemon down.
	for _, want := range []string{"AicrQueueStalled", "AicrDeadRuns", "AicrDispatchFailures", "AicrDaemonDown"} {
		if !seen[want] {
			t.Errorf("no %s rule", want)
		}
	}
	if promtool, err := exec.LookPath("promtool"); err == nil {
		if out, err := exec.Command(promtool, "check", "rules", alertsFile).CombinedOutput(); err != nil {
			t.Fatalf("promtool check rules: %v\n%s", err, out)
		}
	} else {
		t.Log("promtool not installed (Debian package prometheus): checked the YAML and the metric names only")
	}
}

// exportedMetricNames are the series names a scrape can show, with each
// labelled family touched once so it appears.
func exportedMetricNames(t *testing.T) map[string]bool {
	t.Helper()
	store, err := audit.Open(context.Background(), filepath.Join(t.TempDir(), "aicr.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	m := NewMetrics(store, "test")
	m.event("trigger", "queued")
	m.runFinished(audit.RunFailed, "")
	m.retry("run")
	m.stage("total", time.Second)
	cost := 0.5
	m.agentStats(audit.AgentStats{Agent: "llm", Model: "x", Passes: 1, InputTokens: 1, CostUSD: &cost})
	m.RateLimitWait("c", time.Second)
	m.rateLimited.WithLabelValues("c").Inc()
	m.dispatches.WithLabelValues("c", "dead").Inc()
	m.reloaded(false, "")
	m.reloaded(true, "d")
	families, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
		if f.GetType().String() == "HISTOGRAM" {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				names[f.GetName()+suffix] = true
			}
		}
	}
	return names
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		if strings.HasPrefix(k, "aicr_") {
			out = append(out, k)
		}
	}
	return out
}

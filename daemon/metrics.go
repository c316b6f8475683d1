package daemon

import (
	"context"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/triggers"
)

// durationBuckets reach 30 minutes: a model-backed review of a large
// change, with follow-up passes, takes that long, and a histogram whose
// top bucket is +Inf says nothing about the slow tail.
var durationBuckets = []float64{0.05, 0.25, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 900, 1200, 1800}

// Metrics are the daemon's Prometheus collectors, on a registry of their
// own so nothing another library registers globally is exposed, and so
// two daemons in one test process do not share counters. Every method is
// safe on a nil *Metrics: `aicr review` runs the same pipeline without
// metrics.
type Metrics struct {
	reg         *prometheus.Registry
	runtimeOnce sync.Once

	events        *prometheus.CounterVec
	runs          *prometheus.CounterVec
	passes        *prometheus.CounterVec
	durations     *prometheus.HistogramVec
	dispatches    *prometheus.CounterVec
	retries       *prometheus.CounterVec
	rateWaits     *prometheus.CounterVec
	rateWaitSecs  *prometheus.CounterVec
	rateLimited   *prometheus.CounterVec
	tokens        *prometheus.CounterVec
	cost          *prometheus.CounterVec
	reloads       *prometheus.CounterVec
	configVersion *prometheus.GaugeVec
	// findingActions counts people's actions on findings this process
	// applied (Slack buttons, the web page).
	findingActions *prometheus.CounterVec
	// findingRepos are the repos aicr_findings is labelled with: the
	// running config's (watchRepos), so a removed repo's series go.
	findingRepos atomic.Pointer[[]string]
	// budgets are the [[budget]] gauges (budget_metrics.go); nil without
	// a store.
	budgets *budgetCollector
}

// NewMetrics registers every collector; store is read at each scrape for
// the queue gauges (nil leaves them out).
func NewMetrics(store *audit.Store, version string) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{reg: reg}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "aicr", Name: name, Help: help}, labels)
		reg.MustRegister(c)
		return c
	}
	m.events = counter("events_total", "Events received, by source (trigger, spool, reconcile) and outcome (queued, duplicate, requeued, rejected, unauthenticated, replayed, error).", "source", "outcome")
	m.runs = counter("runs_finished_total", "Runs finished by this process, by status and skip reason.", "status", "skip_reason")
	m.passes = counter("agent_passes_total", "Agent passes on the review ladder, by agent and model.", "agent", "model")
	m.dispatches = counter("dispatch_attempts_total", "Delivery attempts, by channel and outcome (sent, retry, failed, dead, unknown).", "channel", "outcome")
	m.retries = counter("retries_total", "Retries scheduled, by kind (run, dispatch).", "kind")
	m.rateWaits = counter("rate_limit_waits_total", "Deliveries that waited for the channel's rate-limit token.", "channel")
	m.rateWaitSecs = counter("rate_limit_wait_seconds_total", "Time deliveries spent waiting for rate-limit tokens.", "channel")
	m.rateLimited = counter("rate_limited_total", "Delivery attempts the platform refused as over its rate limit.", "channel")
	m.tokens = counter("agent_tokens_total", "Model tokens used by reviews, by model and kind as providers bill them (input: uncached prompt, cache_read, cache_write, output).", "model", "kind")
	m.cost = counter("agent_cost_usd_total", "Review cost in USD, by model; only when [agent.llm] prices are configured.", "model")
	m.reloads = counter("config_reloads_total", "Config reloads (SIGHUP, aicr reload), by result (ok, error).", "result")
	m.findingActions = counter("finding_actions_total", "People's actions on findings this daemon applied, by action (useful, false_positive, wont_fix, accepted_risk, reopen) and via (slack, web).", "action", "via")
	m.durations = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "aicr", Name: "stage_duration_seconds",
		Help: "Duration of a run's stages: fetch, review (the agent ladder), dispatch (one delivery attempt), total (claim to recorded outcome).", Buckets: durationBuckets},
		[]string{"stage"})
	reg.MustRegister(m.durations)
	m.configVersion = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "aicr", Name: "config_info",
		Help: "1 for the config the daemon runs with, labelled by the sha256 of the file's bytes."}, []string{"digest"})
	reg.MustRegister(m.configVersion)
	build := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "aicr", Name: "build_info", Help: "1, labelled by the aicr version.",
		ConstLabels: prometheus.Labels{"version": version}})
	build.Set(1)
	reg.MustRegister(build)
	if store != nil {
		reg.MustRegister(&queueCollector{store: store, now: time.Now})
		reg.MustRegister(&findingsCollector{store: store, repos: m.repos})
		m.budgets = &budgetCollector{spend: store, now: time.Now}
		reg.MustRegister(m.budgets)
	}
	return m
}

// watchRepos sets the repos the findings gauges are labelled with.
func (m *Metrics) watchRepos(names []string) {
	if m == nil {
		return
	}
	names = append([]string(nil), names...)
	m.findingRepos.Store(&names)
}

func (m *Metrics) repos() []string {
	if p := m.findingRepos.Load(); p != nil {
		return *p
	}
	return nil
}

// Handler serves the registry in the Prometheus text format. The Go
// runtime and process collectors join at the first scrape: built at
// start they keep about 5 MB of the executable resident in a daemon
// nobody scrapes (measured: idle RSS 23 MB with them, 18 MB without).
func (m *Metrics) Handler() http.Handler {
	h := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.runtimeOnce.Do(func() {
			m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		})
		h.ServeHTTP(w, r)
	})
}

func (m *Metrics) event(source triggers.Source, outcome string) {
	if m == nil {
		return
	}
	m.events.WithLabelValues(string(source), outcome).Inc()
}

// enqueued counts an accepted event by what the queue made of it.
func (m *Metrics) enqueued(source triggers.Source, res audit.Enqueued) {
	switch {
	case res.Requeued:
		m.event(source, "requeued")
	case res.Duplicate:
		m.event(source, "duplicate")
	default:
		m.event(source, "queued")
	}
}

// intakeRejected counts a refused POST by its error code.
func (m *Metrics) intakeRejected(code string) {
	switch code {
	case "missing_signature", "bad_timestamp", "stale_timestamp", "bad_signature":
		m.event(triggers.SourceTrigger, "unauthenticated")
	case "replayed":
		m.event(triggers.SourceTrigger, "replayed")
	case "store_unavailable":
		m.event(triggers.SourceTrigger, "error")
	default:
		m.event(triggers.SourceTrigger, "rejected")
	}
}

func (m *Metrics) runFinished(status audit.RunStatus, skipReason string) {
	if m == nil {
		return
	}
	m.runs.WithLabelValues(string(status), skipReason).Inc()
}

func (m *Metrics) retry(kind string) {
	if m == nil {
		return
	}
	m.retries.WithLabelValues(kind).Inc()
}

func (m *Metrics) stage(stage string, d time.Duration) {
	if m == nil {
		return
	}
	m.durations.WithLabelValues(stage).Observe(d.Seconds())
}

func (m *Metrics) agentStats(st audit.AgentStats) {
	if m == nil {
		return
	}
	m.passes.WithLabelValues(st.Agent, st.Model).Add(float64(st.Passes))
	model := st.Model
	if model == "" {
		model = st.Agent
	}
	m.tokens.WithLabelValues(model, "input").Add(float64(st.InputTokens))
	m.tokens.WithLabelValues(model, "cache_read").Add(float64(st.CacheReadTokens))
	m.tokens.WithLabelValues(model, "cache_write").Add(float64(st.CacheWriteTokens))
	m.tokens.WithLabelValues(model, "output").Add(float64(st.OutputTokens))
	if st.CostUSD != nil {
		m.cost.WithLabelValues(model).Add(*st.CostUSD)
	}
}

// RateLimitWait is delivery.Options.OnRateLimitWait.
func (m *Metrics) RateLimitWait(channel string, waited time.Duration) {
	if m == nil || waited <= 0 {
		return
	}
	m.rateWaits.WithLabelValues(channel).Inc()
	m.rateWaitSecs.WithLabelValues(channel).Add(waited.Seconds())
}

// FindingAction counts one person's action on a finding, applied.
func (m *Metrics) FindingAction(action findings.Action, via findings.Via) {
	if m == nil {
		return
	}
	m.findingActions.WithLabelValues(string(action), string(via)).Inc()
}

func (m *Metrics) reloaded(ok bool, digest string) {
	if m == nil {
		return
	}
	if !ok {
		m.reloads.WithLabelValues("error").Inc()
		return
	}
	m.reloads.WithLabelValues("ok").Inc()
	m.setConfig(digest)
}

func (m *Metrics) setConfig(digest string) {
	if m == nil {
		return
	}
	m.configVersion.Reset()
	m.configVersion.WithLabelValues(digest).Set(1)
}

// queueCollector reads the queue at scrape time, so the gauges are true
// whichever process (another daemon, aicr review) changed the queue.
type queueCollector struct {
	store *audit.Store
	now   func() time.Time
}

var (
	descStoreUp     = prometheus.NewDesc("aicr_store_up", "1 when the audit database answered this scrape.", nil, nil)
	descQueueDepth  = prometheus.NewDesc("aicr_queue_depth", "Runs queued, including those waiting out a retry delay and those held.", nil, nil)
	descHeld        = prometheus.NewDesc("aicr_runs_held", "Queued runs of paused repos (aicr repo pause), held until resumed.", nil, nil)
	descQueueAge    = prometheus.NewDesc("aicr_queue_oldest_age_seconds", "Age of the oldest queued run that is not held; 0 when none is queued.", nil, nil)
	descRunning     = prometheus.NewDesc("aicr_runs_running", "Runs being reviewed now.", nil, nil)
	descFailedRuns  = prometheus.NewDesc("aicr_runs_failed", "Runs that failed for good and were not retried (in the audit database).", nil, nil)
	descDispatchBad = prometheus.NewDesc("aicr_dispatches_undelivered", "Deliveries given up on, by status (dead, unknown).", []string{"status"}, nil)
)

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descStoreUp, descQueueDepth, descHeld, descQueueAge, descRunning, descFailedRuns, descDispatchBad} {
		ch <- d
	}
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := c.store.QueueStats(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(descStoreUp, prometheus.GaugeValue, 0)
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(descStoreUp, 1)
	gauge(descQueueDepth, float64(st.Queued))
	gauge(descHeld, float64(st.Held))
	gauge(descQueueAge, oldestAge(st, c.now()).Seconds())
	gauge(descRunning, float64(st.Running))
	gauge(descFailedRuns, float64(st.FailedRuns))
	gauge(descDispatchBad, float64(st.DeadDispatches), "dead")
	gauge(descDispatchBad, float64(st.UnknownDispatches), "unknown")
}

func oldestAge(st audit.QueueStats, now time.Time) time.Duration {
	if st.OldestQueuedAt.IsZero() {
		return 0
	}
	return max(now.Sub(st.OldestQueuedAt), 0)
}

// findingsCollector reads the findings at scrape time, as the queue
// gauges do: how many each repo has in each state, and how each
// category, rule, agent and model fared (the precision figures of aicr
// findings stats). Values are capped per group (maxOutcomeValues, the
// rest summed as "other"), so a model that invents categories cannot
// grow the series without bound.
type findingsCollector struct {
	store findings.Store
	repos func() []string
}

// maxOutcomeValues bounds the values of one group in
// aicr_findings_outcomes: the most reported ones, then "other".
const maxOutcomeValues = 20

var (
	descFindings = prometheus.NewDesc("aicr_findings", "Findings by repo and state (open counts reopened ones too).", []string{"repo", "state"}, nil)
	descOutcomes = prometheus.NewDesc("aicr_findings_outcomes",
		"How findings fared, by group (category, rule, agent, model), its value (the most reported ones, the rest as other) and outcome (reported, useful, dismissed, false_positive, resolved, open).",
		[]string{"group", "value", "outcome"}, nil)
)

func (c *findingsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descFindings
	ch <- descOutcomes
}

func (c *findingsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	gauge := func(d *prometheus.Desc, v int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	for _, repo := range c.repos() {
		stats, err := c.store.FindingStats(ctx, findings.StatsFilter{Repo: repo})
		if err != nil {
			ch <- prometheus.NewInvalidMetric(descFindings, err)
			return
		}
		t := repoTotals(stats)
		gauge(descFindings, t.Open, repo, string(findings.StateOpen))
		gauge(descFindings, t.Resolved, repo, string(findings.StateResolved))
		gauge(descFindings, t.Dismissed, repo, string(findings.StateDismissed))
	}
	stats, err := c.store.FindingStats(ctx, findings.StatsFilter{})
	if err != nil {
		ch <- prometheus.NewInvalidMetric(descOutcomes, err)
		return
	}
	for _, s := range capOutcomes(stats, maxOutcomeValues) {
		for _, o := range []struct {
			name string
			n    int
		}{{"reported", s.Reported}, {"useful", s.Useful}, {"dismissed", s.Dismissed}, {"false_positive", s.FalsePositive},
			{"resolved", s.Resolved}, {"open", s.Open}} {
			gauge(descOutcomes, o.n, s.Group, s.Value, o.name)
		}
	}
}

// repoTotals is a repo's findings by state: every finding is in one
// value of each group, so one group's rows add up to all of them (the
// group that counts most, should a store leave a finding out of one).
func repoTotals(stats []findings.Stat) findings.Stat {
	by := map[string]findings.Stat{}
	for _, s := range stats {
		t := by[s.Group]
		t.Reported += s.Reported
		t.Open += s.Open
		t.Resolved += s.Resolved
		t.Dismissed += s.Dismissed
		by[s.Group] = t
	}
	var best findings.Stat
	for _, t := range by {
		if t.Reported > best.Reported {
			best = t
		}
	}
	return best
}

// capOutcomes keeps, per group, the max most reported values and sums the
// rest into one "other" row.
func capOutcomes(stats []findings.Stat, limit int) []findings.Stat {
	groups := map[string][]findings.Stat{}
	var order []string
	for _, s := range stats {
		if _, ok := groups[s.Group]; !ok {
			order = append(order, s.Group)
		}
		if s.Value == "" {
			s.Value = "none"
		}
		groups[s.Group] = append(groups[s.Group], s)
	}
	var out []findings.Stat
	for _, g := range order {
		rows := groups[g]
		sort.SliceStable(rows, func(i, j int) bool { return rows[i].Reported > rows[j].Reported })
		if len(rows) <= limit {
			out = append(out, rows...)
			continue
		}
		for i := limit; i < len(rows); i++ {
			rows[i].Value = "other"
		}
		out = append(out, rows...)
	}
	return mergeStats(out)
}

// mergeStats sums rows with the same group and value (the "other" rows,
// a real value named like one), keeping the first one's place: one
// series per label set.
func mergeStats(rows []findings.Stat) []findings.Stat {
	at := map[[2]string]int{}
	var out []findings.Stat
	for _, s := range rows {
		k := [2]string{s.Group, s.Value}
		i, ok := at[k]
		if !ok {
			at[k] = len(out)
			out = append(out, s)
			continue
		}
		t := &out[i]
		t.Reported += s.Reported
		t.Useful += s.Useful
		t.Dismissed += s.Dismissed
		t.FalsePositive += s.FalsePositive
		t.Resolved += s.Resolved
		t.Open += s.Open
	}
	return out
}

// meteredDispatches is the dispatcher's store with each attempt counted
// and timed, so package delivery stays free of metrics.
type meteredDispatches struct {
	delivery.Store
	m       *Metrics
	mu      sync.Mutex
	claimed map[int64]time.Time // dispatch id → claim time
}

func meterDispatches(s delivery.Store, m *Metrics) delivery.Store {
	if m == nil {
		return s
	}
	return &meteredDispatches{Store: s, m: m, claimed: map[int64]time.Time{}}
}

func (s *meteredDispatches) noteClaim(c *delivery.Claim, err error) (*delivery.Claim, error) {
	if c != nil && err == nil {
		s.mu.Lock()
		s.claimed[c.Dispatch.ID] = time.Now()
		s.mu.Unlock()
	}
	return c, err
}

func (s *meteredDispatches) ClaimDispatch(ctx context.Context, id int64, lease time.Duration) (*delivery.Claim, error) {
	return s.noteClaim(s.Store.ClaimDispatch(ctx, id, lease))
}

func (s *meteredDispatches) ClaimDue(ctx context.Context, channel string, lease time.Duration) (*delivery.Claim, error) {
	return s.noteClaim(s.Store.ClaimDue(ctx, channel, lease))
}

func (s *meteredDispatches) FinishAttempt(ctx context.Context, c *delivery.Claim, r delivery.AttemptResult) (delivery.Dispatch, error) {
	d, err := s.Store.FinishAttempt(ctx, c, r)
	s.mu.Lock()
	at, ok := s.claimed[c.Dispatch.ID]
	delete(s.claimed, c.Dispatch.ID)
	s.mu.Unlock()
	if err != nil {
		return d, err
	}
	if ok {
		s.m.stage("dispatch", time.Since(at))
	}
	s.m.dispatches.WithLabelValues(c.Dispatch.Channel, r.Outcome).Inc()
	if r.Outcome == delivery.OutcomeRetry {
		s.m.retry("dispatch")
	}
	if r.Reason == string(im.ReasonRateLimited) {
		s.m.rateLimited.WithLabelValues(c.Dispatch.Channel).Inc()
	}
	return d, nil
}

// metrics are the ones the components were built with (nil outside the
// daemon).
func (c *Components) metrics() *Metrics {
	if c.Pipeline == nil {
		return nil
	}
	return c.Pipeline.metrics
}

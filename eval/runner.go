package eval

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/daemon"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/triggers"
)

// DefaultParallel is how many cases are reviewed at once: two, so a
// replay on a shared build machine leaves it usable.
const DefaultParallel = 2

// Cost is what one review (or a sum of them) spent, from the same
// accounting as production: the ladder's pass.Stats priced with
// agent.Prices.Cost.
type Cost struct {
	Passes     int `json:"passes"`
	Requests   int `json:"requests"`
	Input      int `json:"input_tokens"`
	CacheRead  int `json:"cache_read_tokens"`
	CacheWrite int `json:"cache_write_tokens"`
	Output     int `json:"output_tokens"`
	// USD is set only when the column's [agent.llm] has prices.
	USD  *float64      `json:"cost_usd,omitempty"`
	Wall time.Duration `json:"wall_ns"`
}

// Add sums o into c; the cost is known only while every part is.
func (c *Cost) Add(o Cost, first bool) {
	c.Passes += o.Passes
	c.Requests += o.Requests
	c.Input += o.Input
	c.CacheRead += o.CacheRead
	c.CacheWrite += o.CacheWrite
	c.Output += o.Output
	c.Wall += o.Wall
	switch {
	case first && o.USD != nil:
		v := *o.USD
		c.USD = &v
	case c.USD != nil && o.USD != nil:
		v := *c.USD + *o.USD
		c.USD = &v
	default:
		c.USD = nil
	}
}

// CaseRun is what one review of one case came to.
type CaseRun struct {
	CaseID   string           `json:"case"`
	Status   audit.RunStatus  `json:"status"`
	Error    string           `json:"error,omitempty"`
	Problems []review.Problem `json:"problems"`
	Cost     Cost             `json:"cost"`
}

// Options tune a replay.
type Options struct {
	// Parallel bounds the cases reviewed at once; 0 is DefaultParallel.
	Parallel int
	// WorkDir holds the scratch repositories and data dirs; "" is a
	// temporary directory removed afterwards.
	WorkDir string
	// AicrBinary is the agent's MCP server (daemon.Deps.AicrBinary).
	AicrBinary string
	Logger     *slog.Logger
	// Progress, when set, is told of each finished review.
	Progress func(column string, repeat int, run *CaseRun)
}

// Replay is the scratch repositories of a suite's cases, built once and
// reviewed by every column and repeat.
type Replay struct {
	suite *Suite
	dir   string
	temp  bool
	repos []repoSpec
	opts  Options
}

// NewReplay builds one scratch SVN repository per case.
func NewReplay(ctx context.Context, s *Suite, opts Options) (*Replay, error) {
	if err := CheckTools(); err != nil {
		return nil, err
	}
	if opts.Parallel <= 0 {
		opts.Parallel = DefaultParallel
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Replay{suite: s, dir: opts.WorkDir, opts: opts}
	if r.dir == "" {
		d, err := os.MkdirTemp("", "aicr-eval-")
		if err != nil {
			return nil, err
		}
		r.dir, r.temp = d, true
	}
	r.repos = make([]repoSpec, len(s.Cases))
	err := parallel(ctx, len(s.Cases), opts.Parallel, func(i int) error {
		c := s.Cases[i]
		dir := filepath.Join(r.dir, "repos", fmt.Sprintf("%03d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		p, err := buildRepo(ctx, dir, c)
		if err != nil {
			return err
		}
		r.repos[i] = repoSpec{name: fmt.Sprintf("case-%03d", i), path: p}
		return nil
	})
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// Close removes the temporary directory NewReplay made.
func (r *Replay) Close() {
	if r.temp {
		_ = os.RemoveAll(r.dir)
	}
}

// Run reviews every case once with col's agent, through daemon.Build's
// pipeline as `aicr review --dry-run` runs it: fetch from the scratch
// repository, the agent ladder (in the sandbox when [sandbox] says so),
// validation, the audit trail of a store of its own; no channel.
func (r *Replay) Run(ctx context.Context, col Column, repeat int) ([]*CaseRun, error) {
	dataDir := filepath.Join(r.dir, "runs", fmt.Sprintf("%s-%d", safeName(col.Name), repeat))
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	cfg, err := col.config(dataDir, r.repos)
	if err != nil {
		return nil, err
	}
	store, err := config.OpenStore(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("column %s: open store: %w", col.Name, err)
	}
	defer store.Close()
	var mu sync.Mutex
	outcomes := map[int64]agent.Outcome{}
	observe := func(runID int64, out agent.Outcome) {
		mu.Lock()
		defer mu.Unlock()
		prev, ok := outcomes[runID]
		if ok {
			out.Stats.Add(prev.Stats)
			out.Passes += prev.Passes
		}
		outcomes[runID] = out
	}
	parts, err := daemon.Build(cfg, daemon.Deps{Store: store, Logger: r.opts.Logger, AicrBinary: r.opts.AicrBinary, AgentOutcome: observe},
		daemon.BuildOptions{NoChannels: true})
	if err != nil {
		return nil, fmt.Errorf("column %s: %w", col.Name, err)
	}
	prices := cfg.Agent.Prices()
	runs := make([]*CaseRun, len(r.suite.Cases))
	err = parallel(ctx, len(r.suite.Cases), r.opts.Parallel, func(i int) error {
		c := r.suite.Cases[i]
		ev := triggers.Event{V: triggers.ProtocolVersion, VCS: "svn", Repo: r.repos[i].name, Revision: "2",
			Source: triggers.SourceManual, SentAt: time.Now().UTC()}
		run, err := store.EnqueueClaimedWith(ctx, ev, time.Now().UTC(), audit.ClaimOptions{DryRun: true})
		if err != nil {
			return fmt.Errorf("case %s: %w", c.ID, err)
		}
		start := time.Now()
		rep, err := parts.Pipeline.Process(ctx, run, daemon.ProcessOptions{DryRun: true, Foreground: true})
		wall := time.Since(start)
		if err != nil {
			return fmt.Errorf("case %s: %w", c.ID, err)
		}
		mu.Lock()
		out := outcomes[run.ID]
		mu.Unlock()
		cr := &CaseRun{CaseID: c.ID, Status: rep.Status, Error: rep.Error, Problems: rep.Result.Problems,
			Cost: costOf(out, prices, wall)}
		if col.AgentKind() == "builtin" {
			// Rules only, no model: it costs nothing, which is known.
			cr.Cost.USD = new(float64)
		}
		if cr.Problems == nil {
			cr.Problems = []review.Problem{}
		}
		runs[i] = cr
		if r.opts.Progress != nil {
			r.opts.Progress(col.Name, repeat, cr)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return runs, nil
}

func costOf(out agent.Outcome, prices agent.Prices, wall time.Duration) Cost {
	c := Cost{Passes: out.Passes, Requests: out.Stats.Turns, Input: out.Stats.InputTokens,
		CacheRead: out.Stats.CacheReadTokens, CacheWrite: out.Stats.CacheWriteTokens, Output: out.Stats.OutputTokens, Wall: wall}
	if usd, ok := prices.Cost(out.Stats); ok {
		c.USD = &usd
	}
	return c
}

// parallel runs f(0..n-1) with at most limit at once and returns the
// first error; the others still finish.
func parallel(ctx context.Context, n, limit int, f func(i int) error) error {
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for i := 0; i < n; i++ {
		if ctx.Err() != nil {
			once.Do(func() { first = ctx.Err() })
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := f(i); err != nil {
				once.Do(func() { first = err })
			}
		}()
	}
	wg.Wait()
	return first
}

func safeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

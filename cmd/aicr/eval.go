package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"sync"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/eval"
	"github.com/aicr-dev/aicr/eval/builtin"
)

// exitGate is aicr eval's exit status when a config scores below
// --min-f1 or --min-recall: a CI job tells "worse than the gate" from
// "the evaluation could not run" (1).
const exitGate = 3

// errGateFailed: the gate's failures are already printed.
var errGateFailed = &silentError{code: exitGate}

// EvalOptions are the inputs of `aicr eval`.
type EvalOptions struct {
	Factory      *Factory
	Suite        string
	ConfigPath   string
	AgentConfigs []string
	JudgeConfig  string
	Repeat       int
	Judge        bool
	Format       string
	HTMLDir      string
	MinF1        float64
	MinRecall    float64
	Cases        string
	Parallel     int
	// suiteFS replaces the suite's files (tests).
	suiteFS fs.FS
}

func newCmdEval(f *Factory, runF func(context.Context, *EvalOptions) error) *cobra.Command {
	opts := &EvalOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "eval SUITE",
		Short: "Measure review quality: replay a suite of changes with known findings and score the agent",
		Long: `Replay every case of SUITE (a directory in the format of docs/eval-suite.md, or
"builtin" for the suite embedded in aicr) through the same pipeline as the
daemon: a scratch SVN repository per case (svnadmin, the case's before/ tree as
r1 and after/ as r2), the configured agent reviewing r2 (builtin, llm or an
agent CLI, in the sandbox when [sandbox] says so), validation and the ladder,
publishing to no channel. Then score what it reported against the golden
findings: precision, recall, F1, false positives on clean cases, per category,
and what the reviews cost (requests, tokens, cost at the configured prices,
wall time).

--config is the base config (its [agent], [agent.llm] and [sandbox]; without
it the builtin agent). Each --agent-config file (only [agent], [agent.llm],
[sandbox]) is one column of the comparison in place of the base. --judge
asks a model (the base config's [agent.llm], or --judge-config) whether each
reported problem is the golden finding, with a fixed, versioned prompt; the
heuristic score is printed beside it. Exit status 3 when a config is below
--min-f1 or --min-recall (the judge's score when --judge is on); 1 when any
review failed (the figures are printed, and undercount).`,
		Example: `  aicr eval builtin
  aicr eval builtin --agent-config qwen.toml --agent-config gpt.toml --html report/
  aicr eval ./our-suite --config /etc/aicr/aicr.toml --repeat 3 --min-f1 0.4`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Suite = args[0]
			if opts.Format == "table" {
				opts.Format = formatText
			}
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			if opts.Repeat < 1 {
				return usageErrorf("--repeat must be at least 1, got %d", opts.Repeat)
			}
			if opts.Parallel < 1 {
				return usageErrorf("--parallel must be at least 1, got %d", opts.Parallel)
			}
			if opts.JudgeConfig != "" && !opts.Judge {
				return usageErrorf("--judge-config needs --judge")
			}
			for _, v := range []struct {
				name string
				val  float64
			}{{"--min-f1", opts.MinF1}, {"--min-recall", opts.MinRecall}} {
				if v.val > 1 {
					return usageErrorf("%s %.3f: a score is between 0 and 1", v.name, v.val)
				}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return evalRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.ConfigPath, "config", "", "base config: its [agent], [agent.llm], [sandbox] (default: the builtin agent)")
	cmd.Flags().StringArrayVar(&opts.AgentConfigs, "agent-config", nil, "a file with [agent], [agent.llm], [sandbox]: one column each (repeatable)")
	cmd.Flags().IntVar(&opts.Repeat, "repeat", 1, "review every case N times per config and report the spread")
	cmd.Flags().BoolVar(&opts.Judge, "judge", false, "also score with a model judge ([agent.llm] of --config or --judge-config)")
	cmd.Flags().StringVar(&opts.JudgeConfig, "judge-config", "", "config file whose [agent.llm] is the judge")
	cmd.Flags().StringVar(&opts.Format, "format", formatText, "output format: table (text) or json")
	cmd.Flags().StringVar(&opts.HTMLDir, "html", "", "also write DIR/index.html with the comparison and plots")
	cmd.Flags().Float64Var(&opts.MinF1, "min-f1", -1, "exit 3 when a config's F1 is below this")
	cmd.Flags().Float64Var(&opts.MinRecall, "min-recall", -1, "exit 3 when a config's recall is below this")
	cmd.Flags().Lookup("min-f1").DefValue = ""
	cmd.Flags().Lookup("min-recall").DefValue = ""
	cmd.Flags().StringVar(&opts.Cases, "cases", "", "only the cases whose id matches this glob (e.g. 'c-*')")
	cmd.Flags().IntVar(&opts.Parallel, "parallel", eval.DefaultParallel, "cases reviewed at once")
	return cmd
}

func evalRun(ctx context.Context, opts *EvalOptions) error {
	f := opts.Factory
	suite, err := loadEvalSuite(opts)
	if err != nil {
		return err
	}
	if n := suite.Unlocated(); n > 0 && !opts.Judge {
		return usageErrorf("suite %s: %d golden findings name no file or line (a public benchmark's comments): only --judge can score them", opts.Suite, n)
	}
	cols, err := eval.Columns(opts.ConfigPath, opts.AgentConfigs)
	if err != nil {
		return asUsage(err)
	}
	// Each column's agent tables load as the daemon would load them: a
	// mistake in one is the operator's to fix before anything runs.
	for _, c := range cols {
		if err := c.Check(); err != nil {
			return asUsage(err)
		}
	}
	plan := eval.Plan{Columns: cols, Repeat: opts.Repeat, Cases: opts.Cases}
	if opts.Judge {
		src := opts.JudgeConfig
		if src == "" {
			src = opts.ConfigPath
		}
		if src == "" {
			return usageErrorf("--judge needs a model: give --config (its [agent.llm]) or --judge-config")
		}
		jc, err := eval.JudgeConfig(src)
		if err != nil {
			return asUsage(err)
		}
		if plan.Judge, err = eval.NewJudge(jc); err != nil {
			return err
		}
	}
	if _, err := suite.Filter(opts.Cases); err != nil {
		return asUsage(err)
	}
	exe, err := f.Executable()
	if err != nil {
		return err
	}
	out := newExporter(f.IOStreams, opts.Format)
	// Cases run in parallel: their progress lines and the daemon's log
	// lines share stderr (and its terminal filter, which holds a split
	// rune between writes), so both write through one lock.
	errOut := &lockedWriter{w: termSafe(f.IOStreams.ErrOut)}
	progress := func(col string, repeat int, run *eval.CaseRun) {
		fmt.Fprintf(errOut, "%s #%d %s: %s, %d problem(s), %s\n", col, repeat, run.CaseID, run.Status, len(run.Problems), run.Cost.Wall.Round(1e6))
	}
	rep, err := eval.Evaluate(ctx, suite, plan, eval.Options{Parallel: opts.Parallel, AicrBinary: exe,
		Logger: verbLoggerTo(errOut, slog.LevelWarn), Progress: progress})
	if err != nil {
		return err
	}
	if err := out.Write(rep, func(w io.Writer) error { return eval.WriteTable(w, rep) }); err != nil {
		return err
	}
	if opts.HTMLDir != "" {
		if err := eval.WriteHTML(opts.HTMLDir, rep); err != nil {
			return err
		}
		out.Status("wrote %s/index.html", opts.HTMLDir)
	}
	// A failed review reported nothing, so the figures undercount the
	// agent: the evaluation did not measure what it says. Exit 1 (not
	// the gate's 3): the setup is broken, not the model worse.
	failed := 0
	for _, c := range rep.Columns {
		failed += c.Failed
	}
	if failed > 0 {
		out.Status("aicr eval: %d review(s) failed (see the report): its figures count them as finding nothing", failed)
		return errSilentFailure
	}
	if fails := rep.Gate(opts.MinF1, opts.MinRecall); len(fails) > 0 {
		for _, g := range fails {
			out.Status("aicr eval: gate failed: %s", g)
		}
		return errGateFailed
	}
	return nil
}

// loadEvalSuite opens SUITE: "builtin" is the embedded suite, anything
// else a directory.
func loadEvalSuite(opts *EvalOptions) (*eval.Suite, error) {
	fsys := opts.suiteFS
	if fsys == nil {
		if opts.Suite == "builtin" {
			fsys = builtin.FS()
		} else {
			st, err := os.Stat(opts.Suite)
			if err != nil {
				return nil, usageErrorf("suite %s: %v (give a suite directory or \"builtin\")", opts.Suite, errors.Unwrap(err))
			}
			if !st.IsDir() {
				return nil, usageErrorf("suite %s is not a directory (a suite is a directory with suite.toml and cases/)", opts.Suite)
			}
			if eval.IsBenchmark(opts.Suite) {
				s, missing, err := eval.LoadBenchmark(opts.Suite)
				if err != nil {
					return nil, asUsage(err)
				}
				for _, m := range missing {
					fmt.Fprintf(termSafe(opts.Factory.IOStreams.ErrOut), "aicr eval: left out %s\n", m)
				}
				return s, nil
			}
			fsys = os.DirFS(opts.Suite)
		}
	}
	s, err := eval.LoadSuite(fsys)
	if err != nil {
		return nil, asUsage(fmt.Errorf("suite %s: %w", opts.Suite, err))
	}
	return s, nil
}

// lockedWriter serializes the Writes of several goroutines to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

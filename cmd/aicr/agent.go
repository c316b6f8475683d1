package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/agent/sandboxed"
	"github.com/aicr-dev/aicr/daemon"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/sandbox"
	"github.com/aicr-dev/aicr/vcs"
)

func newCmdAgent(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "agent", Short: "Check the configured review agent, install agent CLIs"}
	cmd.AddCommand(newCmdAgentTest(f, nil))
	cmd.AddCommand(newCmdAgentPass(f))
	cmd.AddCommand(newCmdAgentInstall(f, nil))
	return cmd
}

// newCmdAgentPass is what the sandbox runs: one pass of the agent that
// <root>/agent/pass.json describes, over the run layout rooted at <root>.
// It reads no config file: everything it may know is in the bundle and
// its environment.
func newCmdAgentPass(f *Factory) *cobra.Command {
	root := sandboxed.Workspace
	cmd := &cobra.Command{
		Use:    "pass",
		Short:  "Run one agent pass inside the sandbox (internal)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			bin, err := f.Executable()
			if err != nil {
				bin = sandbox.BinaryMount
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelInfo}))
			return sandboxed.RunPass(cmd.Context(), sandboxed.InsideOptions{Root: root, Binary: bin, Logger: log})
		},
	}
	cmd.Flags().StringVar(&root, "root", root, "the run layout's root (the agent dir is <root>/agent)")
	return cmd
}

// AgentTestOptions are the inputs of `aicr agent test`.
type AgentTestOptions struct {
	Factory *Factory
	Format  string
}

func newCmdAgentTest(f *Factory, runF func(context.Context, *AgentTestOptions) error) *cobra.Command {
	opts := &AgentTestOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "test",
		Short: "Run the configured agent on a tiny synthetic change",
		Long: `Build the agent [agent] configures, exactly as the daemon does, and run the
review ladder on a synthetic one-file change that hard-codes a password. It
prints whether a model was reached, which aicr tools the agent called, what
it found, and the tokens it used. Exit 0 only when the agent recorded a
structured result (problems, a summary or a skip); nothing is published and
nothing is written to the audit trail.`,
		Example: "  aicr agent test --config /etc/aicr/aicr.toml --format json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return agentTestRun(cmd.Context(), opts)
		},
	}
	addConfigFlag(cmd, f)
	addFormatFlag(cmd, &opts.Format)
	return cmd
}

// agentTestOutput is what --format json prints.
type agentTestOutput struct {
	Agent string `json:"agent"`
	Model string `json:"model,omitempty"`
	// ModelReached: a model answered at least one turn; always false for
	// agents without a model (builtin).
	ModelReached bool `json:"model_reached"`
	// Tools are the aicr tools the agent (the model, for a model agent)
	// called, recorded or refused; the pre-pass's findings are not among
	// them.
	Tools []string `json:"tools"`
	// PrePassFindings counts the problems the builtin pre-pass added that
	// the agent had not reported itself.
	PrePassFindings int `json:"pre_pass_findings"`
	// ServerModels are the models the server lists (GET /models) when it
	// did not know the configured one.
	ServerModels []string         `json:"server_models,omitempty"`
	Passes       int              `json:"passes"`
	Steps        []string         `json:"steps"`
	Turns        int              `json:"turns"`
	InputTokens  int              `json:"input_tokens"`
	OutputTokens int              `json:"output_tokens"`
	Problems     []review.Problem `json:"problems"`
	Summaries    []review.Summary `json:"summaries"`
	Skip         *review.Skip     `json:"skip,omitempty"`
	Rejected     int              `json:"rejected"`
	// Structured is the verdict: the agent recorded a usable result.
	Structured bool   `json:"structured"`
	Error      string `json:"error,omitempty"`
}

// The synthetic change: one new file whose line 4 hard-codes a password.
const (
	agentTestFile   = "service/db.go"
	agentTestSource = "package service\n\n// Connect opens the orders database.\nconst dbPassword = \"Sup3r-Secret-Prod-Pw!\"\n\nfunc Connect() string { return \"postgres://orders:\" + dbPassword + \"@db/orders\" }\n"
)

func agentTestRun(ctx context.Context, opts *AgentTestOptions) error {
	f := opts.Factory
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	deps := daemon.Deps{Logger: f.VerbLogger(slog.LevelWarn), Now: f.Now}
	if exe, err := f.Executable(); err == nil && cfg.Daemon.AicrBinary == "" {
		deps.AicrBinary = exe
	}
	parts, err := daemon.Build(cfg, deps, daemon.BuildOptions{NoChannels: true})
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "aicr-agent-test-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	run, err := syntheticRun(filepath.Join(tmp, "run"))
	if err != nil {
		return err
	}

	res, runErr := parts.Ladder.Run(ctx, run, agent.Target{Revision: "1"})
	prePass := prePassAdded(res.Steps)
	out := agentTestOutput{Agent: res.Stats.Agent, Model: res.Stats.Model, ModelReached: res.Stats.Turns > 0,
		Tools: toolsCalled(run, prePass), PrePassFindings: prePass, Passes: res.Passes, Steps: res.Steps, Turns: res.Stats.Turns,
		InputTokens: res.Stats.InputTokens, OutputTokens: res.Stats.OutputTokens,
		Problems: res.Result.Problems, Summaries: res.Result.Summaries, Skip: res.Result.Skip,
		Rejected: res.Rejected, Structured: runErr == nil}
	if out.Agent == "" {
		out.Agent = cfg.Agent.Kind
	}
	if out.Tools == nil {
		out.Tools = []string{}
	}
	if runErr != nil {
		out.Error = runErr.Error()
	}
	if errors.Is(runErr, llm.ErrUnknownModel) && cfg.Agent.Kind == llm.Kind {
		// The server may say what it does serve; a failure to list is
		// not worth a second error.
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		out.ServerModels, _ = llm.ServerModels(lctx, cfg.Agent.LLM, nil)
		cancel()
	}
	e := newExporter(f.IOStreams, opts.Format)
	if err := e.Write(out, func(w io.Writer) error { printAgentTest(w, out); return nil }); err != nil {
		return err
	}
	if !out.Structured {
		e.Status("agent test failed: %s", out.Error)
		return errSilentFailure
	}
	return nil
}

// syntheticRun lays out a run directory as a fetch would.
func syntheticRun(dir string) (rundir.Layout, error) {
	run := rundir.New(dir)
	if err := run.Create(); err != nil {
		return run, err
	}
	dst, err := run.SrcPath(agentTestFile)
	if err != nil {
		return run, err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o750); err != nil {
		return run, err
	}
	if err := os.WriteFile(dst, []byte(agentTestSource), 0o640); err != nil {
		return run, err
	}
	lines := strings.Count(agentTestSource, "\n")
	var diff strings.Builder
	fmt.Fprintf(&diff, "--- %s\t(nonexistent)\n+++ %s\t(revision 1)\n@@ -0,0 +1,%d @@\n", agentTestFile, agentTestFile, lines)
	for _, l := range strings.SplitAfter(strings.TrimSuffix(agentTestSource, "\n"), "\n") {
		diff.WriteString("+" + strings.TrimSuffix(l, "\n") + "\n")
	}
	if err := os.WriteFile(run.DiffPath(), []byte(diff.String()), 0o640); err != nil {
		return run, err
	}
	change := &vcs.Change{VCS: vcs.KindSVN, Repo: "agent-test", Revision: "1", Author: "aicr",
		Description: "Add the orders database connection", Files: []vcs.FileChange{{
			Path: agentTestFile, Action: vcs.ActionAdd, NodeKind: vcs.NodeFile,
			Added: []vcs.LineRange{{Start: 1, End: lines}}, Hunks: []vcs.LineRange{{Start: 1, End: lines}},
		}}}
	return run, run.WriteChange(change)
}

// prePassAdded reads how many findings the pre-pass added from the
// ladder's "pre-pass:+N" step.
func prePassAdded(steps []string) int {
	n := 0
	for _, s := range steps {
		if v, ok := strings.CutPrefix(s, "pre-pass:+"); ok {
			if k, err := strconv.Atoi(v); err == nil {
				n += k
			}
		}
	}
	return n
}

// toolsCalled lists the tools the state file shows calls of, in the
// contract's order. The last prePass problems are the pre-pass's (the
// ladder appends them after the agent's own), so they are not credited
// to the agent.
func toolsCalled(run rundir.Layout, prePass int) []string {
	st, err := review.LoadState(run.StatePath())
	if err != nil {
		return nil
	}
	called := map[string]bool{}
	called[review.ToolReportProblem] = len(st.Problems) > prePass
	called[review.ToolPublishSummary] = len(st.Summaries) > 0
	called[review.ToolSkip] = st.Skip != nil
	called[review.ToolFetchMoreContext] = len(st.ContextRequests) > 0
	called[review.ToolTryBlame] = len(st.AttributionRequests) > 0
	for _, r := range st.Rejected {
		if name, ok := review.CanonicalToolName(r.Tool); ok {
			called[name] = true
		}
	}
	var tools []string
	for _, name := range review.ToolNames {
		if called[name] {
			tools = append(tools, name)
		}
	}
	return tools
}

func printAgentTest(w io.Writer, o agentTestOutput) {
	fmt.Fprintf(w, "agent: %s", o.Agent)
	if o.Model != "" {
		fmt.Fprintf(w, " (model %s)", im.Sanitize(o.Model))
	}
	fmt.Fprintln(w)
	switch {
	case o.ModelReached:
		fmt.Fprintf(w, "model reached: yes, %d turns, tokens %d in / %d out\n", o.Turns, o.InputTokens, o.OutputTokens)
	case o.Model == "" && o.Turns == 0 && o.Error == "":
		fmt.Fprintln(w, "model reached: no model (this agent needs none)")
	default:
		fmt.Fprintln(w, "model reached: no")
	}
	fmt.Fprintf(w, "passes: %d (%s)\n", o.Passes, strings.Join(o.Steps, ", "))
	who := "the agent"
	if o.Model != "" {
		who = "the model"
	}
	fmt.Fprintf(w, "tools called by %s: %s\n", who, dash(strings.Join(o.Tools, ", ")))
	if o.PrePassFindings > 0 {
		fmt.Fprintf(w, "pre-pass (builtin checks, not %s): %d finding(s) added\n", who, o.PrePassFindings)
	}
	fmt.Fprintf(w, "problems (%d):\n", len(o.Problems))
	for _, p := range o.Problems {
		fmt.Fprintf(w, "  %s [%s] %s: %s\n", im.ProblemLocation(p), p.Severity, p.Category, im.Sanitize(p.Message))
	}
	for _, s := range o.Summaries {
		fmt.Fprintf(w, "summary %s\n%s\n", s.Title, im.Sanitize(s.Markdown))
	}
	if o.Skip != nil {
		fmt.Fprintf(w, "skip: %s\n", o.Skip.Reason)
	}
	if o.Rejected > 0 {
		fmt.Fprintf(w, "refused tool calls: %d\n", o.Rejected)
	}
	if o.Structured {
		fmt.Fprintln(w, "result: structured")
	} else {
		fmt.Fprintf(w, "result: none — %s\n", o.Error)
	}
	if len(o.ServerModels) > 0 {
		names := make([]string, len(o.ServerModels))
		for i, m := range o.ServerModels {
			names[i] = im.Sanitize(m)
		}
		fmt.Fprintf(w, "the server serves these models (set one as [agent.llm] model): %s\n", strings.Join(names, ", "))
	}
}

package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/aicr-dev/aicr/agent/builtin"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/agent/pass"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
)

// The ladder (docs/agent-contract.md, "The review ladder"): one review
// pass; up to MaxFollowUps follow-ups answering the context and blame
// requests the agent recorded; one repair pass when the result is still
// not structured or its summary claims problems it never reported; prose
// normalization of the last pass's text; else the run fails saying why.

// MaxFollowUps bounds the follow-up rounds of one review.
const MaxFollowUps = 2

// RepoRulesFile is where a repository keeps its review instructions; the
// ladder reads it at the reviewed revision, never from the working copy
// of whoever triggered the review.
const RepoRulesFile = ".aicr/instructions.md"

// Size caps: what the agent gets from the repository is bounded so a huge
// file cannot blow the prompt budget on its own.
const (
	maxRepoRulesBytes = 16 << 10
	maxAnswerBytes    = 32 << 10
	// maxRepoFileBytes caps each AGENTS.md and SKILL.md read; it is above
	// the bundle's own caps, so the bundle still sees (and records) a file
	// that is over them.
	maxRepoFileBytes = 64 << 10
	// maxAgentsDirs and maxRepoSkills bound the VCS reads one review spends
	// on instructions: a change touching a thousand directories asks for
	// the root's and the first ones, not a thousand AGENTS.md.
	maxAgentsDirs = 64
	maxRepoSkills = 32
	// defaultAnswerLines is the range of a request without one.
	defaultAnswerLines = 200
)

// overflowBudgetScale is the prompt budget of the one retry after a
// context overflow.
const overflowBudgetScale = 0.5

var (
	// ErrNoResult: the ladder ran out of steps without a structured
	// result; the error names what was missing. Retrying the run would
	// ask the same model the same question, so the pipeline does not.
	ErrNoResult = errors.New("agent recorded no structured result")
	// ErrContextOverflow: the prompt did not fit the model even with the
	// diff clipped. It wraps llm.ErrContextOverflow as well.
	ErrContextOverflow = errors.New("context_overflow")
)

// Replayer answers the requests an agent recorded, at the reviewed
// revision. The vcs/svn and vcs/p4 adapters implement it as they are.
type Replayer interface {
	// Cat writes path's content at rev to w (vcs.ErrNoSuchPath when it
	// is not a file there, vcs.ErrPathOutOfScope outside the repo).
	Cat(ctx context.Context, path, rev string, w io.Writer) error
	// Blame attributes lines start..end of path at rev.
	Blame(ctx context.Context, path, rev string, start, end int) (vcs.BlameResult, error)
}

// PrePass runs deterministic checks before the agent and returns what they
// found; builtin.Scan is the one the daemon uses for model-backed agents.
type PrePass func(ctx context.Context, run rundir.Layout) ([]review.Problem, error)

// Ladder runs an agent through the review ladder over one run directory.
type Ladder struct {
	Agent Agent
	// PrePass, when set, runs before the first pass; its findings are
	// merged into the final result unless the agent reported the same
	// (file, line, category).
	PrePass PrePass
	// Limits are the review server's, used to validate what the ladder
	// itself records (normalized prose, pre-pass findings).
	Limits review.Limits
	// Logger; nil discards.
	Logger *slog.Logger
}

// Target is the reviewed revision and how to read more of it.
type Target struct {
	Revision string
	// Replayer answers context and blame requests and reads the repo's
	// rules; nil answers every request with an error and reads no rules.
	Replayer Replayer
}

// Outcome is what a ladder run came to. Stats and Passes are filled even
// when Run fails, so the audit trail records what a failed review cost.
type Outcome struct {
	Result review.Result `json:"result"`
	// Stats sums every pass.
	Stats pass.Stats `json:"stats"`
	// Passes counts agent passes, a retry after a context overflow too.
	Passes int `json:"passes"`
	// Steps names what the ladder did, in order: "review", "follow-up",
	// "repair", "clip-retry", "prose:lgtm", "pre-pass:+2", ...
	Steps []string `json:"steps"`
	// RepoRules is true when the repository's instructions were found.
	RepoRules bool `json:"repo_rules"`
	// Rejected counts refused tool calls over the whole review.
	Rejected int `json:"rejected"`
	// Usage is each agent pass's tokens, in the order they ran (a
	// clip-retry is a pass of its own), for the audit trail's per-turn
	// accounting.
	Usage []PassUsage `json:"usage,omitempty"`
	// Partial is, when Run fails after the pre-pass ran, what the pre-pass
	// found, validated as the server validates a report: a model that
	// fails for good must not take a leaked credential down with it. Nil
	// when Run succeeds or no pre-pass ran.
	Partial *review.Result `json:"partial,omitempty"`
}

// Run reviews run's change: it clears the state file, reads the repo's
// rules, runs the pre-pass and climbs the ladder. The state file holds the
// final result when Run returns nil.
func (l *Ladder) Run(ctx context.Context, run rundir.Layout, tgt Target) (Outcome, error) {
	var out Outcome
	log := l.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := review.ClearState(run.StatePath()); err != nil {
		return out, fmt.Errorf("clear stale state: %w", err)
	}
	out.RepoRules = l.readRepoFiles(ctx, run, tgt, log)
	var pre []review.Problem
	if l.PrePass != nil {
		var err error
		if pre, err = l.PrePass(ctx, run); err != nil {
			return out, fmt.Errorf("pre-pass (builtin checks): %w", err)
		}
	}

	out, err := l.climb(ctx, run, tgt, pre, out, log)
	if err != nil && l.PrePass != nil {
		out.Partial = l.partial(run, pre, log)
	}
	return out, err
}

// climb runs the agent's passes, the repair and the merge of the pre-pass
// findings pre.
func (l *Ladder) climb(ctx context.Context, run rundir.Layout, tgt Target, pre []review.Problem, out Outcome, log *slog.Logger) (Outcome, error) {
	st, last, err := l.pass(ctx, run, pass.Pass{Number: 1, Kind: pass.Review}, &out)
	if err != nil {
		return out, err
	}
	var asked requestMark
	for round := 0; round < MaxFollowUps; round++ {
		answers := replay(ctx, st, &asked, tgt)
		if len(answers) == 0 {
			break
		}
		p := pass.Pass{Number: out.passNumber(), Kind: pass.FollowUp, Context: answers}
		if st, last, err = l.pass(ctx, run, p, &out); err != nil {
			return out, err
		}
	}
	if missing := whatIsMissing(st); missing != "" {
		// A dishonest summary must not be published as it stands: the
		// repair either backs it with problems or replaces it.
		if flags := review.CheckSummaryHonesty(st); len(flags) > 0 {
			st.Summaries = dropSummaries(st.Summaries, flags)
			if err := review.SaveState(run.StatePath(), st); err != nil {
				return out, err
			}
		}
		p := pass.Pass{Number: out.passNumber(), Kind: pass.Repair, Missing: missing}
		if st, last, err = l.pass(ctx, run, p, &out); err != nil {
			return out, err
		}
		// Claiming the problems again without reporting them does not
		// get the claim published.
		if flags := review.CheckSummaryHonesty(st); len(flags) > 0 {
			st.Summaries = dropSummaries(st.Summaries, flags)
			out.Steps = append(out.Steps, "summary-withdrawn")
			if err := review.SaveState(run.StatePath(), st); err != nil {
				return out, err
			}
		}
		if !structured(st) {
			if err := l.normalize(run, st, last.Text, &out); err != nil {
				return out, err
			}
		}
		if !structured(st) {
			return out, fmt.Errorf("%w after %d passes: %s", ErrNoResult, out.Passes, missing)
		}
	}
	if len(pre) > 0 {
		if err := l.mergePrePass(run, st, pre, &out, log); err != nil {
			return out, err
		}
	}
	out.Rejected = st.RejectedTotal
	out.Result = st.Result()
	return out, nil
}

// partial validates the pre-pass findings on their own, for a run whose
// agent failed: what the agent recorded before it failed is left out, so
// the partial review is exactly what its notice says ran.
func (l *Ladder) partial(run rundir.Layout, pre []review.Problem, log *slog.Logger) *review.Result {
	st := review.NewState()
	if len(pre) > 0 {
		lim := l.Limits.WithDefaults()
		lim.MaxProblems = max(lim.MaxProblems, len(pre))
		change, err := run.ReadChange()
		if err != nil {
			log.Warn("pre-pass findings of a failed review", "err", err)
			return nil
		}
		calls := make([]review.ToolCall, len(pre))
		for i, p := range pre {
			calls[i] = review.ToolCall{Name: review.ToolReportProblem, Arguments: problemArgs(p)}
		}
		for _, o := range review.ApplyCalls(review.NewValidator(change, run.SrcDir(), lim), st, calls) {
			if o.Err != nil {
				log.Warn("pre-pass finding refused", "code", o.Err.Code, "message", o.Err.Message)
			}
		}
	}
	res := st.Result()
	return &res
}

// passNumber is the Number of the next pass.
func (o *Outcome) passNumber() int { return o.Passes + 1 }

// pass runs one pass (and its one clipped retry after a context overflow)
// and reads the state back. A missing state file is an empty state: the
// agent may have printed its answer instead (the prose normalization).
func (l *Ladder) pass(ctx context.Context, run rundir.Layout, p pass.Pass, out *Outcome) (*review.State, pass.Stats, error) {
	stats, err := l.step(ctx, run, p, out)
	if errors.Is(err, llm.ErrContextOverflow) {
		p.BudgetScale = overflowBudgetScale
		out.Steps = append(out.Steps, "clip-retry")
		stats, err = l.step(ctx, run, p, out)
		if errors.Is(err, llm.ErrContextOverflow) {
			return nil, stats, fmt.Errorf("%w: the prompt did not fit the model's context window even with the diff clipped to %d%% of its budget; configure a model with a larger context or a smaller prompt budget (%w)",
				ErrContextOverflow, int(overflowBudgetScale*100), err)
		}
	}
	if errors.Is(err, llm.ErrAuth) {
		// The agent's error carries the remedy, naming the key's source;
		// a second, vaguer one here only repeated it.
		return nil, stats, fmt.Errorf("%s pass: %w", p.Kind, err)
	}
	if err != nil {
		return nil, stats, fmt.Errorf("agent %s pass %d: %w", p.Kind, p.Number, err)
	}
	st, err := review.LoadState(run.StatePath())
	if errors.Is(err, review.ErrNoState) {
		return review.NewState(), stats, nil
	}
	if err != nil {
		return nil, stats, fmt.Errorf("read agent state: %w", err)
	}
	return st, stats, nil
}

func (l *Ladder) step(ctx context.Context, run rundir.Layout, p pass.Pass, out *Outcome) (pass.Stats, error) {
	if p.BudgetScale == 0 {
		out.Steps = append(out.Steps, string(p.Kind))
	}
	stats, err := l.Agent.Review(ctx, run, p)
	out.Passes++
	out.Stats.Add(stats)
	out.Usage = append(out.Usage, PassUsage{Seq: out.Passes, Stats: stats})
	return stats, err
}

// PassUsage is what one agent pass used; Seq numbers the passes of a
// review from 1, in the order they ran.
type PassUsage struct {
	Seq   int        `json:"seq"`
	Stats pass.Stats `json:"stats"`
}

// structured: the state holds something a report can stand on.
func structured(st *review.State) bool {
	return st.Skip != nil || len(st.Summaries) > 0 || len(st.Problems) > 0
}

// whatIsMissing says, in words the agent can act on, why its result
// needs a repair pass; "" when it does not.
func whatIsMissing(st *review.State) string {
	if flags := review.CheckSummaryHonesty(st); len(flags) > 0 {
		reasons := make([]string, len(flags))
		for i, f := range flags {
			reasons[i] = f.Reason
		}
		return strings.Join(reasons, "; ") + ". That summary was withdrawn. Report each problem you described with " +
			review.ToolReportProblem + " (file, line, severity, category, message), then publish the summary again with " +
			review.ToolPublishSummary + "; or, if there is nothing to report, call " + review.ToolSkip + ` with reason "lgtm".`
	}
	if st.Skip != nil || len(st.Summaries) > 0 {
		return ""
	}
	if len(st.Problems) > 0 {
		return fmt.Sprintf("you reported %d problem(s) but published no summary: call %s with a short Markdown summary of the review",
			len(st.Problems), review.ToolPublishSummary)
	}
	return "no result was recorded: report each problem with " + review.ToolReportProblem + " and then call " +
		review.ToolPublishSummary + `, or call ` + review.ToolSkip + ` with reason "lgtm" when there is nothing to report (or "no_reviewable_code" when the change has no code)`
}

func dropSummaries(sums []review.Summary, flags []review.Flag) []review.Summary {
	drop := map[int]bool{}
	for _, f := range flags {
		drop[f.Summary] = true
	}
	kept := []review.Summary{}
	for i, s := range sums {
		if !drop[i] {
			kept = append(kept, s)
		}
	}
	return kept
}

// normalize applies what review.ParseAgentOutput recovers from the last
// pass's prose ("no problems" → skip lgtm, tool calls printed instead of
// made) through the review server's validation, and saves the state.
func (l *Ladder) normalize(run rundir.Layout, st *review.State, text string, out *Outcome) error {
	fr := review.ParseAgentOutput(text)
	if fr.Kind == review.FallbackUnparsable || len(fr.Calls) == 0 {
		return nil
	}
	v, err := l.validator(run)
	if err != nil {
		return err
	}
	review.ApplyCalls(v, st, fr.Calls)
	out.Steps = append(out.Steps, "prose:"+string(fr.Kind))
	return review.SaveState(run.StatePath(), st)
}

func (l *Ladder) validator(run rundir.Layout) (*review.Validator, error) {
	change, err := run.ReadChange()
	if err != nil {
		return nil, err
	}
	return review.NewValidator(change, run.SrcDir(), l.Limits), nil
}

// mergePrePass adds the pre-pass findings the agent did not report itself
// (same file, line and category), through the server's validation. A
// "nothing to report" skip does not survive a deterministic finding.
func (l *Ladder) mergePrePass(run rundir.Layout, st *review.State, pre []review.Problem, out *Outcome, log *slog.Logger) error {
	type key struct {
		file, category string
		line           int
	}
	seen := map[key]bool{}
	for _, p := range st.Problems {
		seen[key{p.File, review.NormalizeCategory(p.Category), p.Line}] = true
	}
	var calls []review.ToolCall
	for _, p := range pre {
		k := key{p.File, review.NormalizeCategory(p.Category), p.Line}
		if seen[k] {
			continue
		}
		seen[k] = true
		calls = append(calls, review.ToolCall{Name: review.ToolReportProblem, Arguments: problemArgs(p)})
	}
	if len(calls) == 0 {
		return nil
	}
	// Room above the agent's problem limit: a model that used it up must
	// not crowd out a leaked credential the deterministic checks found.
	lim := l.Limits.WithDefaults()
	lim.MaxProblems += len(calls)
	change, err := run.ReadChange()
	if err != nil {
		return err
	}
	v := review.NewValidator(change, run.SrcDir(), lim)
	added := 0
	for _, o := range review.ApplyCalls(v, st, calls) {
		if o.Err == nil {
			added++
		} else {
			log.Warn("pre-pass finding refused", "code", o.Err.Code, "message", o.Err.Message)
		}
	}
	if added > 0 && st.Skip != nil && (st.Skip.Reason == review.SkipReasonLGTM || st.Skip.Reason == review.SkipReasonNoReviewableCode) {
		st.Skip = nil
	}
	out.Steps = append(out.Steps, fmt.Sprintf("pre-pass:+%d", added))
	return review.SaveState(run.StatePath(), st)
}

var errCapped = errors.New("output over the cap")

// cappedBuffer keeps the first limit bytes and then refuses more, which
// stops the VCS read early.
type cappedBuffer struct {
	buf    []byte
	limit  int
	capped bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	room := c.limit - len(c.buf)
	if len(p) > room {
		c.buf = append(c.buf, p[:max(room, 0)]...)
		c.capped = true
		return max(room, 0), errCapped
	}
	c.buf = append(c.buf, p...)
	return len(p), nil
}

// NewLadder is the ladder the daemon runs a (timeout-bounded) agent built
// from cfg with: every agent but the builtin one gets the builtin checks
// as a deterministic pre-pass.
func NewLadder(cfg Config, a Agent, logger *slog.Logger) *Ladder {
	l := &Ladder{Agent: a, Limits: cfg.Limits(), Logger: logger}
	if cfg.Kind != KindBuiltin {
		l.PrePass = builtin.Scan
	}
	return l
}

package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/aicr-dev/aicr/agent/pass"
	"github.com/aicr-dev/aicr/agent/prompt"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/secret"
)

// Kind is the config name of this agent.
const Kind = "llm"

// Options configure the llm agent.
type Options struct {
	// Config is the [agent.llm] table, relative paths already resolved.
	Config Config
	// Limits bound what one pass may record; zero fields keep the review
	// server's defaults.
	Limits review.Limits
	// OperatorRules yields the operator's review rules for each pass
	// (prompt.RulesFromFile, prompt.RulesText); nil: none.
	OperatorRules prompt.RulesSource
	// Logger receives progress and refused tool calls; nil discards.
	Logger *slog.Logger
	// NewModel builds the provider client for a pass; nil is NewModel.
	// Tests pass scripted models.
	NewModel func(ModelOptions) (Model, error)
	// HTTPClient is handed to the provider client; nil is its default.
	HTTPClient *http.Client
	// Headers, when not nil, are the extra request headers instead of
	// Config.HeadersFile: the sandboxed pass gets them from the host,
	// which read headers_file for this pass. Their values are treated as
	// secrets (scrubbed from errors).
	Headers map[string]string
}

// Agent reviews a change by talking to a model server directly.
type Agent struct {
	cfg      Config
	limits   review.Limits
	rules    prompt.RulesSource
	log      *slog.Logger
	newModel func(ModelOptions) (Model, error)
	http     *http.Client
	headers  map[string]string
	// quirks outlive a pass: a server that refused parallel_tool_calls
	// once is not asked with it again by this agent.
	quirks *Quirks
}

// New checks the config and returns the agent. Nothing is read or
// contacted yet: the key and the headers are read at every pass, so a
// rotated key needs no restart.
func New(o Options) (*Agent, error) {
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	if o.Config.API == APIGemini {
		return nil, fmt.Errorf("agent.llm.api: %q is spoken by [agent] kind = \"gemini-cli\", not by the llm agent (use %s, %s or %s)",
			APIGemini, APIOpenAIChat, APIOpenAIResponses, APIAnthropic)
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	nm := o.NewModel
	if nm == nil {
		nm = NewModel
	}
	return &Agent{cfg: o.Config.WithDefaults(), limits: o.Limits, rules: o.OperatorRules,
		log: log.With("agent", Kind), newModel: nm, http: o.HTTPClient, headers: o.Headers, quirks: &Quirks{}}, nil
}

// Review runs one pass over run: the prompt for p, then the tool loop
// until the model ends the review. What it found is in run.StatePath().
func (a *Agent) Review(ctx context.Context, run rundir.Layout, p pass.Pass) (pass.Stats, error) {
	stats := pass.Stats{Agent: Kind}
	change, err := run.ReadChange()
	if err != nil {
		return stats, err
	}
	diff, err := readOptional(run.DiffPath())
	if err != nil {
		return stats, fmt.Errorf("read diff: %w", err)
	}
	var operatorRules string
	if a.rules != nil {
		if operatorRules, err = a.rules(); err != nil {
			return stats, err
		}
	}
	// The ladder writes it before the first pass when the repository has one.
	repoRules, err := readOptional(run.RepoRulesPath())
	if err != nil {
		return stats, fmt.Errorf("read repository rules: %w", err)
	}
	// The daemon's reviewer writes it before the ladder runs when people
	// dismissed findings in the change's paths.
	dismissed, err := prompt.ReadDismissals(run.DismissedPath())
	if err != nil {
		return stats, err
	}
	lang, err := prompt.ReadOutputLanguage(run.OutputLanguagePath())
	if err != nil {
		return stats, err
	}
	model, secrets, err := a.connect()
	if err != nil {
		return stats, err
	}
	session, err := review.NewToolSession(review.ServerOptions{StatePath: run.StatePath(), ChangePath: run.ChangePath(),
		SrcDir: run.SrcDir(), Limits: a.limits})
	if err != nil {
		return stats, fmt.Errorf("review tools: %w", err)
	}
	tools := newToolSet(session.Tools())
	pr := prompt.BuildScaled(prompt.Input{Change: change, Diff: diff, OperatorRules: operatorRules, RepoRules: repoRules,
		Dismissed: dismissed, Pass: p, Tools: tools.offered, OutputLanguage: lang}, a.cfg.PromptBudget(), p.Scale())
	log := a.log.With("pass", p.Number, "kind", string(p.Kind))
	if len(pr.Clipped) > 0 {
		log.Info("diff clipped to the prompt budget", "files_left_out", len(pr.Clipped), "context_window", a.cfg.ContextWindow)
	}
	l := &loop{model: model, exec: session, tools: tools, maxTurns: a.cfg.MaxTurns, maxOutputTokens: a.cfg.MaxOutputTokens, log: log,
		guard: newTurnGuard(p.Allowance, a.cfg.ContextWindow)}
	stats, err = l.run(ctx, pr.System, Message{Role: RoleUser, Text: pr.User, Stable: pr.Stable})
	stats.Clipped = pr.Clipped
	if stats.Model == "" {
		stats.Model = a.cfg.Model
	}
	if cerr := session.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil {
		return stats, a.explain(scrub(err, secrets...))
	}
	log.Info("llm pass done", "model", stats.Model, "turns", stats.Turns,
		"input_tokens", stats.InputTokens, "cache_read_tokens", stats.CacheReadTokens,
		"cache_write_tokens", stats.CacheWriteTokens, "output_tokens", stats.OutputTokens)
	return stats, nil
}

// connect reads the key and the headers now and builds the client. The
// key and header values go to the client and nowhere else; they are
// returned only so errors can be scrubbed of them.
func (a *Agent) connect() (Model, []string, error) {
	key, err := a.cfg.ReadAPIKey()
	if err != nil {
		// A key that cannot be read fails like a refused one: waiting
		// does not make it appear. The read error already says what to do.
		return nil, nil, &keyReadError{err: err}
	}
	headers := a.headers
	if headers == nil {
		if headers, err = a.cfg.ReadHeaders(); err != nil {
			return nil, nil, err
		}
	}
	secrets := []string{key.Reveal()}
	for _, v := range headers {
		secrets = append(secrets, v)
	}
	m, err := a.newModel(ModelOptions{API: a.cfg.API, BaseURL: a.cfg.BaseURL, Model: a.cfg.Model, APIKey: key.Reveal(),
		Headers: headers, Timeout: a.cfg.Timeout, HTTPClient: a.http, Stream: a.cfg.Stream,
		PromptCache: a.cfg.CachePrompts(), Quirks: a.quirks})
	if err != nil {
		return nil, nil, a.explain(scrub(fmt.Errorf("%s client: %w", a.cfg.API, err), secrets...))
	}
	return m, secrets, nil
}

// explain adds the operator's remedy to the errors that need one, once.
func (a *Agent) explain(err error) error {
	switch {
	case errors.Is(err, ErrAuth):
		if src := a.cfg.KeySource(); src != "" {
			return fmt.Errorf("%w (check the key in %s and that it may use model %q at %s)", err, src, a.cfg.Model, a.cfg.BaseURL)
		}
		return fmt.Errorf("%w (no key is configured: put the key in a file named by agent.llm.api_key_file, or an environment variable named by api_key_env)", err)
	case errors.Is(err, ErrToolsOff):
		return fmt.Errorf("%w (the llm agent needs tool calling: start vLLM with --enable-auto-tool-choice --tool-call-parser <name> "+
			"(hermes for Qwen2.5, qwen3_xml for Qwen3-Coder, llama3_json, mistral, openai for gpt-oss, ...); on Ollama use a model "+
			"with tool support (`ollama show %s` lists \"tools\" among its capabilities); start llama.cpp's server with --jinja. "+
			"Tool calls printed as text are only a fallback and are no substitute)", err, a.cfg.Model)
	case errors.Is(err, ErrUnknownModel):
		return fmt.Errorf("%w (check agent.llm.model %q against the models the server at %s serves)", err, a.cfg.Model, a.cfg.BaseURL)
	case errors.Is(err, ErrBadRequest):
		return fmt.Errorf("%w (check agent.llm.api %q, base_url %s and model %q against the server)", err, a.cfg.API, a.cfg.BaseURL, a.cfg.Model)
	}
	return err
}

func readOptional(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return string(b), err
}

// scrub keeps a key out of an error's text (a server or SDK that echoes
// the credential it refused) while errors.Is still sees the chain.
func scrub(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, s := range secrets {
		if s != "" && strings.Contains(msg, s) {
			return &scrubbedError{err: err, secrets: secrets}
		}
	}
	return err
}

type scrubbedError struct {
	err     error
	secrets []string
}

func (e *scrubbedError) Error() string { return secret.Scrub(e.err.Error(), e.secrets...) }
func (e *scrubbedError) Unwrap() error { return e.err }

// keyReadError is a key that could not be read: ErrAuth for errors.Is,
// but its text is the read error alone, which names the source and the
// remedy already.
type keyReadError struct{ err error }

func (e *keyReadError) Error() string   { return ErrAuth.Error() + ": " + e.err.Error() }
func (e *keyReadError) Unwrap() []error { return []error{ErrAuth, e.err} }

package llm

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/secret"
)

// Defaults of the [agent.llm] table.
const (
	DefaultMaxTurns        = 24
	DefaultMaxOutputTokens = 4096
)

// Base URLs used when base_url is not set: the providers' own endpoints.
// Like every base_url they end in the API version, /v1.
const (
	DefaultOpenAIBaseURL    = "https://api.openai.com/v1"
	DefaultAnthropicBaseURL = "https://api.anthropic.com/v1"
	// DefaultGeminiBaseURL is the server root: Gemini clients add
	// /v1beta/models/… themselves.
	DefaultGeminiBaseURL = "https://generativelanguage.googleapis.com"
)

// maxHeadersFileBytes bounds headers_file: a few headers, not a document.
const maxHeadersFileBytes = 64 << 10

// Config is the [agent.llm] table: which model server to talk to and how
// far one pass may go.
type Config struct {
	// API is the wire protocol: openai-chat, openai-responses or anthropic.
	API string `toml:"api"`
	// BaseURL is the API root ending in /v1 (http://gpu-box:8000/v1);
	// empty means the provider's own endpoint for openai-* and anthropic.
	BaseURL string `toml:"base_url"`
	// Model is the model name the server knows.
	Model string `toml:"model"`
	// APIKeyEnv / APIKeyFile name where the key lives, never the key;
	// both empty for servers without authentication. Read at every pass.
	APIKeyEnv  string `toml:"api_key_env"`
	APIKeyFile string `toml:"api_key_file"`
	// KeyOrigin, set by the host for a sandboxed pass (whose key arrives
	// in an environment variable of aicr's own), is KeySource as the
	// operator configured it, so remedies name the operator's file.
	KeyOrigin string `toml:"-"`
	// HeadersFile holds extra request headers, one "Name: value" per line
	// (a gateway's tenant header); read at every pass, never logged.
	HeadersFile string `toml:"headers_file"`
	// MaxTurns bounds model round trips per pass.
	MaxTurns int `toml:"max_turns"`
	// MaxOutputTokens bounds each model answer.
	MaxOutputTokens int `toml:"max_output_tokens"`
	// ContextWindow is the model's context in tokens; when set, the prompt
	// is clipped to fit it. Zero: no budget.
	ContextWindow int `toml:"context_window"`
	// Timeout is the wall clock of one pass; zero: [agent] timeout.
	Timeout time.Duration `toml:"timeout"`
	// Stream asks the server for Server-Sent Events: proxies and gateways
	// that cut a connection idle for minutes (a large model thinking
	// before its first token) keep a streamed answer alive. The review is
	// the same either way.
	Stream bool `toml:"stream"`
	// PricePerMTokIn / PricePerMTokOut price a million input / output
	// tokens, for the cost in the audit trail (the ladder prices each
	// review with them); zero: no cost reported.
	PricePerMTokIn  float64 `toml:"price_per_mtok_in"`
	PricePerMTokOut float64 `toml:"price_per_mtok_out"`
	// PricePerMTokCachedIn / PricePerMTokCacheWrite price a million prompt
	// tokens read from / written to the provider's prompt cache; zero: the
	// API's published multiple of price_per_mtok_in (CacheMultipliers).
	PricePerMTokCachedIn   float64 `toml:"price_per_mtok_cached_in"`
	PricePerMTokCacheWrite float64 `toml:"price_per_mtok_cache_write"`
}

// CacheMultipliers are the provider's published prices of a cache read and
// a cache write as multiples of its input price: Anthropic bills a read
// at 0.1× and a (5-minute) write at 1.25×; OpenAI bills cached input at
// 0.5× and Gemini its implicit cache at 0.25×, neither charging for the
// write, so a token they might report as written costs the input price.
// An API aicr does not know is priced as if nothing were cached.
func CacheMultipliers(api string) (read, write float64) {
	switch api {
	case APIAnthropic:
		return 0.1, 1.25
	case APIOpenAIChat, APIOpenAIResponses:
		return 0.5, 1
	case APIGemini:
		return 0.25, 1
	}
	return 1, 1
}

// CachePrices are the prices of a million prompt tokens read from and
// written to the cache: price_per_mtok_cached_in and _cache_write, or the
// API's multiples of price_per_mtok_in where they are not given.
func (c Config) CachePrices() (read, write float64) {
	mr, mw := CacheMultipliers(c.API)
	read, write = c.PricePerMTokCachedIn, c.PricePerMTokCacheWrite
	if read == 0 {
		read = mr * c.PricePerMTokIn
	}
	if write == 0 {
		write = mw * c.PricePerMTokIn
	}
	return read, write
}

// APIs lists the APIs the llm agent speaks.
var APIs = []string{APIOpenAIChat, APIOpenAIResponses, APIAnthropic}

// ConfigAPIs are the values [agent.llm] api accepts: the llm agent's APIs
// and the Gemini API of the gemini-cli agent.
var ConfigAPIs = []string{APIOpenAIChat, APIOpenAIResponses, APIAnthropic, APIGemini}

// WithDefaults fills max_turns, max_output_tokens and base_url when the
// config leaves them out.
func (c Config) WithDefaults() Config {
	if c.MaxTurns == 0 {
		c.MaxTurns = DefaultMaxTurns
	}
	if c.MaxOutputTokens == 0 {
		c.MaxOutputTokens = DefaultMaxOutputTokens
	}
	if c.BaseURL == "" {
		switch c.API {
		case APIOpenAIChat, APIOpenAIResponses:
			c.BaseURL = DefaultOpenAIBaseURL
		case APIAnthropic:
			c.BaseURL = DefaultAnthropicBaseURL
		case APIGemini:
			c.BaseURL = DefaultGeminiBaseURL
		}
	}
	return c
}

// InDir resolves relative api_key_file and headers_file against dir (the
// config file's directory).
func (c Config) InDir(dir string) Config {
	c.APIKeyFile = secret.Ref{File: c.APIKeyFile}.InDir(dir).File
	if c.HeadersFile != "" && dir != "" && !filepath.IsAbs(c.HeadersFile) {
		c.HeadersFile = filepath.Join(dir, c.HeadersFile)
	}
	return c
}

// Validate reports every problem, each naming its key
// ("agent.llm.base_url: ..."). It reads no file and no variable: the key
// and the headers are read when a pass uses them.
func (c Config) Validate() error {
	var errs []error
	fail := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("agent.llm.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	switch c.API {
	case APIOpenAIChat, APIOpenAIResponses, APIAnthropic, APIGemini:
	case "":
		fail("api", "is required (one of: %s)", strings.Join(ConfigAPIs, ", "))
	default:
		fail("api", "unknown API %q (one of: %s)", c.API, strings.Join(ConfigAPIs, ", "))
	}
	if c.BaseURL != "" {
		if msg := checkBaseURL(c.BaseURL); msg != "" {
			fail("base_url", "%s", msg)
		}
	}
	if strings.TrimSpace(c.Model) == "" {
		fail("model", "is required: the model name the server knows (e.g. qwen2.5-coder-32b)")
	}
	if c.APIKeyEnv != "" && c.APIKeyFile != "" {
		fail("api_key_file", "set api_key_env or api_key_file, not both")
	}
	if c.MaxTurns < 0 {
		fail("max_turns", "must not be negative, got %d", c.MaxTurns)
	}
	if c.MaxOutputTokens < 0 {
		fail("max_output_tokens", "must not be negative, got %d", c.MaxOutputTokens)
	}
	d := c.WithDefaults()
	switch {
	case c.ContextWindow < 0:
		fail("context_window", "must not be negative, got %d", c.ContextWindow)
	case c.ContextWindow > 0 && c.ContextWindow <= d.MaxOutputTokens:
		fail("context_window", "%d tokens leave no room for the prompt next to max_output_tokens = %d; raise context_window or lower max_output_tokens",
			c.ContextWindow, d.MaxOutputTokens)
	}
	if c.Timeout < 0 {
		fail("timeout", "must not be negative, got %s", c.Timeout)
	}
	if c.PricePerMTokIn < 0 {
		fail("price_per_mtok_in", "must not be negative, got %g", c.PricePerMTokIn)
	}
	if c.PricePerMTokOut < 0 {
		fail("price_per_mtok_out", "must not be negative, got %g", c.PricePerMTokOut)
	}
	if c.PricePerMTokCachedIn < 0 {
		fail("price_per_mtok_cached_in", "must not be negative, got %g", c.PricePerMTokCachedIn)
	}
	if c.PricePerMTokCacheWrite < 0 {
		fail("price_per_mtok_cache_write", "must not be negative, got %g", c.PricePerMTokCacheWrite)
	}
	return errors.Join(errs...)
}

func checkBaseURL(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Sprintf("not a URL: %v", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("must be an http:// or https:// URL, got %q", raw)
	case u.Host == "":
		return fmt.Sprintf("has no host: %q", raw)
	case u.User != nil:
		// A URL is logged and shown in errors; a credential in it would be too.
		return "must not carry credentials; put the key in api_key_env or api_key_file"
	case u.RawQuery != "" || u.Fragment != "":
		return "must not have a query or fragment; give the API root, e.g. http://gpu-box:8000/v1"
	}
	return ""
}

// KeyRef names where the API key lives.
func (c Config) KeyRef() secret.Ref {
	return secret.Ref{Env: c.APIKeyEnv, File: c.APIKeyFile}
}

// KeySource names where the key came from, for remedies: the file or the
// environment variable and the config key that names it; "" for none.
func (c Config) KeySource() string {
	switch {
	case c.KeyOrigin != "":
		return c.KeyOrigin
	case c.APIKeyFile != "":
		return "the file " + c.APIKeyFile + " (agent.llm.api_key_file)"
	case c.APIKeyEnv != "":
		return "the environment variable " + c.APIKeyEnv + " (agent.llm.api_key_env)"
	}
	return ""
}

// ReadAPIKey reads the key now. No key configured is the zero Value and
// no error (servers without authentication); a key configured but
// unreadable or empty is an error naming the key's config key.
func (c Config) ReadAPIKey() (secret.Value, error) {
	ref := c.KeyRef()
	if ref.IsZero() {
		return secret.Value{}, nil
	}
	v, err := ref.Read()
	if err != nil {
		key := "api_key_file"
		if c.APIKeyEnv != "" {
			key = "api_key_env"
		}
		return secret.Value{}, fmt.Errorf("agent.llm.%s: %w", key, err)
	}
	return v, nil
}

// ReadHeaders reads headers_file now: one "Name: value" per line; blank
// lines and lines starting with # are skipped. Errors name the file and
// the line, never a value (a header may carry a token).
func (c Config) ReadHeaders() (map[string]string, error) {
	if c.HeadersFile == "" {
		return nil, nil
	}
	// Read like a secret file (it holds tokens): bounded, never blocking.
	data, err := secret.ReadFile(c.HeadersFile, maxHeadersFileBytes)
	if err != nil {
		return nil, fmt.Errorf("agent.llm.headers_file: %w", err)
	}
	return parseHeaders(c.HeadersFile, data)
}

func parseHeaders(name string, data []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxHeadersFileBytes)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch {
		case !ok:
			return nil, fmt.Errorf("agent.llm.headers_file: %s:%d: want \"Name: value\"", name, n)
		case !validHeaderName(k):
			return nil, fmt.Errorf("agent.llm.headers_file: %s:%d: %q is not a header name", name, n, k)
		case v == "":
			return nil, fmt.Errorf("agent.llm.headers_file: %s:%d: header %s has no value", name, n, k)
		}
		out[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("agent.llm.headers_file: %s: %w", name, err)
	}
	return out, nil
}

// validHeaderName accepts RFC 9110 token characters.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("!#$%&'*+-.^_`|~", r):
		default:
			return false
		}
	}
	return true
}

// PromptBudget is how many tokens the prompt may use: the context window
// less one answer and a margin for the tool schemas and the conversation
// the tool loop adds; zero when no context_window is configured.
func (c Config) PromptBudget() int {
	if c.ContextWindow <= 0 {
		return 0
	}
	d := c.WithDefaults()
	room := c.ContextWindow - d.MaxOutputTokens
	// The five tool schemas take about 1.5k tokens; each tool round trip
	// adds a little more. A quarter of what is left keeps room for them.
	return max(room*3/4-toolSchemaTokens, room/4)
}

const toolSchemaTokens = 1500

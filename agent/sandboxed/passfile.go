// Package sandboxed runs every agent pass through a sandbox.Runner: the
// host side (Agent) materialises the run's bundle, starts the egress proxy
// for network "llm-only" and runs `aicr agent pass` in the container; the
// inside side (RunPass) builds the configured agent over /workspace and
// runs that one pass. The ladder and the validation of what the agent
// recorded stay on the host, against the run's own change.json.
package sandboxed

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/agent/pass"
)

// APIKeyEnv is the variable the llm agent inside reads its key from; the
// host passes it as Spec.SecretEnv, never in a file or on a command line.
const APIKeyEnv = "AICR_LLM_API_KEY"

// HeadersEnv carries [agent.llm] headers_file's headers, read on the host
// at each pass, as one JSON object on one line: header values may be
// secrets (a gateway token), so they travel like the key.
const HeadersEnv = "AICR_LLM_HEADERS"

// headersFromEnv decodes HeadersEnv; nil when it is not set.
func headersFromEnv(getenv func(string) string) (map[string]string, error) {
	v := getenv(HeadersEnv)
	if v == "" {
		return nil, nil
	}
	var h map[string]string
	if err := json.Unmarshal([]byte(v), &h); err != nil {
		// The value is not echoed: it holds secrets.
		return nil, fmt.Errorf("%s is not a JSON object of header names to values", HeadersEnv)
	}
	return h, nil
}

// PassFile is pass.json (rundir.PassFileName): the pass description the
// host writes into the bundle; it holds no secret (the bundle's guard
// checks it).
type PassFile struct {
	// Agent is [agent] with its secret sources cleared: the key comes from
	// APIKeyEnv, the operator's rules from OperatorRules.
	Agent agent.Config `json:"agent"`
	// OperatorRules is [agent] rules_file's content, read on the host.
	OperatorRules string    `json:"operator_rules,omitempty"`
	Pass          pass.Pass `json:"pass"`
	// EgressSocket is the proxy's socket inside the container for network
	// "llm-only"; empty: the agent's HTTP client is the default one.
	EgressSocket string `json:"egress_socket,omitempty"`
}

// PassStats is pass-stats.json (rundir.PassStatsFileName), written by the
// agent inside: pass.Stats with the final prose, which pass.Stats keeps
// out of JSON.
type PassStats struct {
	pass.Stats
	Text string `json:"text"`
	// ErrorClass names the model error the pass failed with (errorClasses),
	// so the host's error wraps the same sentinel and the pipeline fails a
	// refused key at once instead of retrying it for retry_for.
	ErrorClass string `json:"error_class,omitempty"`
}

// errorClasses are the model errors a pass's class can name; the order
// is the one errors.Is is tried in.
var errorClasses = []struct {
	name string
	err  error
}{
	{"context_overflow", llm.ErrContextOverflow},
	{"auth", llm.ErrAuth},
	{"bad_request", llm.ErrBadRequest},
	{"transient", llm.ErrTransient},
}

// classOf is the class of a pass's error, "" for none of errorClasses.
func classOf(err error) string {
	for _, c := range errorClasses {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	return ""
}

// sentinelOf is the error a class names; nil for an unknown one.
func sentinelOf(class string) error {
	for _, c := range errorClasses {
		if c.name == class {
			return c.err
		}
	}
	return nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return nil
}

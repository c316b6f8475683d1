// Package sandbox runs one agent pass in a container (Podman) or, when the
// operator says so explicitly, natively. Both runners build the child's
// environment only from the Spec: nothing of the daemon's own environment
// (and so none of its secrets) reaches the agent by accident.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// ErrUnavailable is wrapped when the sandbox cannot run at all: podman
// missing or broken, the image missing. The message says what and the
// remedy. Nothing then runs natively in its place.
var ErrUnavailable = errors.New("sandbox unavailable")

// Container paths every run sees.
const (
	AgentMount  = "/workspace/agent"
	SrcMount    = "/workspace/src"
	BinaryMount = "/opt/aicr/aicr"
)

// OutputCap bounds each of stdout and stderr kept in the run dir: an agent
// printing without end must not fill the daemon's disk.
const OutputCap = 1 << 20

// Mount is an extra bind mount (e.g. the egress socket dir).
type Mount struct {
	Host, Container string
	ReadOnly        bool
}

// Spec is one run of one pass.
type Spec struct {
	RunID     int64 // container name aicr-run-<RunID>-<Pass>-<random>
	Pass      int
	AgentDir  string // host dir → /workspace/agent (rw; workdir; HOME and XDG dirs inside)
	SrcDir    string // host dir → /workspace/src (ro)
	Binary    string // host path of the static aicr binary → /opt/aicr/aicr (ro)
	Args      []string
	Env       []string // NAME=value, non-secret, allowlisted by the caller
	SecretEnv []string // NAME=value secrets; never on a command line or in a mount
	Mounts    []Mount
	Network   string        // "none" | "llm-only" | "host"; "" is the config's
	Timeout   time.Duration // 0: the config's
	// StdoutPath and StderrPath receive the output, capped at OutputCap
	// each; empty discards it.
	StdoutPath, StderrPath string
}

// Result is how the pass ended. A non-zero ExitCode is not an error: the
// caller decides what the agent's failure means.
type Result struct {
	ExitCode  int
	TimedOut  bool
	OOMKilled bool
	Duration  time.Duration
}

// Runner runs one Spec to its end.
type Runner interface {
	Run(ctx context.Context, s Spec) (Result, error)
}

// New returns the runner cfg.Kind names. cfg should be defaulted
// (ApplyDefaults) and valid.
func New(cfg Config) (Runner, error) {
	switch cfg.Kind {
	case "podman":
		return &podmanRunner{cfg: cfg}, nil
	case "none":
		return &nativeRunner{cfg: cfg}, nil
	}
	return nil, fmt.Errorf(`sandbox.kind: unknown sandbox kind %q (use "podman" or "none")`, cfg.Kind)
}

func (s Spec) validate() error {
	if len(s.Args) == 0 {
		return errors.New("sandbox: Spec.Args is empty: nothing to run")
	}
	if s.AgentDir == "" {
		return errors.New("sandbox: Spec.AgentDir is empty")
	}
	for _, kv := range append(append([]string(nil), s.Env...), s.SecretEnv...) {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" || strings.ContainsAny(name, " \t\n") {
			// The value is not echoed: it may be a secret.
			return fmt.Errorf("sandbox: environment entry %q is not NAME=value", name)
		}
		if strings.Contains(kv, "\n") {
			return fmt.Errorf("sandbox: environment variable %s has a newline in its value, which an env file cannot carry", name)
		}
	}
	switch s.Network {
	case "", "none", "llm-only", "host":
	default:
		return fmt.Errorf(`sandbox: unknown network %q (use "none", "llm-only" or "host")`, s.Network)
	}
	return nil
}

// homeEnv points HOME and the XDG dirs into the agent dir: the agent's
// tools keep their state in the run, never in a home shared across runs.
func homeEnv(agentDir string) []string {
	return []string{
		"HOME=" + agentDir,
		"XDG_CONFIG_HOME=" + agentDir + "/.config",
		"XDG_CACHE_HOME=" + agentDir + "/.cache",
		"XDG_DATA_HOME=" + agentDir + "/.local/share",
	}
}

var xdgDirs = []string{".config", ".cache", ".local/share"}

// cappedFile keeps the first OutputCap bytes and notes the truncation.
type cappedFile struct {
	mu        sync.Mutex
	f         *os.File
	n         int64
	truncated bool
}

func openCapped(path string) (*cappedFile, error) {
	if path == "" {
		return &cappedFile{}, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sandbox: output file: %w", err)
	}
	return &cappedFile{f: f}, nil
}

func (c *cappedFile) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f == nil {
		return len(p), nil
	}
	room := OutputCap - c.n
	w := p
	if int64(len(w)) > room {
		w = w[:room]
		c.truncated = true
	}
	if len(w) > 0 {
		n, err := c.f.Write(w)
		c.n += int64(n)
		if err != nil {
			return n, err
		}
	}
	// Report everything as written: the child must not block or fail
	// because we stopped keeping its output.
	return len(p), nil
}

func (c *cappedFile) Close() error {
	if c.f == nil {
		return nil
	}
	if c.truncated {
		fmt.Fprintf(c.f, "\n[aicr: output truncated at %d bytes]\n", OutputCap)
	}
	return c.f.Close()
}

var _ io.WriteCloser = (*cappedFile)(nil)

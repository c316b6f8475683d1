package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/internal/buildinfo"
)

// DefaultTimeout bounds one container when neither [sandbox.podman]
// timeout nor the agent timeout is set.
const DefaultTimeout = 10 * time.Minute

// Config is the [sandbox] table. When the table is absent the daemon uses
// Kind "none"; when it is present, kind must be set: running agents
// unconfined is never something aicr picks for the operator.
type Config struct {
	Kind    string       `toml:"kind"`    // "podman" | "none"
	Network string       `toml:"network"` // "none" (default) | "llm-only" | "host"
	Podman  PodmanConfig `toml:"podman"`
}

// PodmanConfig is [sandbox.podman].
type PodmanConfig struct {
	// Binary is the podman executable (a name looked up in PATH, or a path).
	Binary string `toml:"binary"`
	// Runtime is passed as podman --runtime (e.g. "runc" where crun fails);
	// empty leaves it to containers.conf.
	Runtime string `toml:"runtime"`
	// Image is the agent image; `make image` builds the default.
	Image string `toml:"image"`
	// ExtraArgs go to `podman create` before the image, for site policy
	// such as --security-opt seccomp=...; they cannot remove aicr's limits
	// because aicr's own flags are not configurable.
	ExtraArgs []string `toml:"extra_args"`
	// Memory is the container's memory (and memory+swap) limit, podman syntax.
	Memory string `toml:"memory"`
	// CPUs is podman --cpus.
	CPUs string `toml:"cpus"`
	// PidsLimit bounds processes and threads; a fork bomb stops there.
	PidsLimit int `toml:"pids_limit"`
	// Timeout is one container's wall-clock limit.
	Timeout time.Duration `toml:"timeout"`
	// ContainersConf is exported to podman as CONTAINERS_CONF (for example
	// a file with `[engine] runtime = "runc"` and `default_ulimits = []`).
	ContainersConf string `toml:"containers_conf"`
}

// DefaultImage is the image `make image` builds for this version: the
// build stamps buildinfo.Version with the tag `make image` gives, so a
// binary finds the image built with it.
func DefaultImage() string { return "localhost/aicr-agent:" + buildinfo.Version }

// DefaultNodeImage is the image `make image-node` builds for this
// version: the agent CLIs need Node.js (or at least a libc).
func DefaultNodeImage() string { return "localhost/aicr-agent-node:" + buildinfo.Version }

// ApplyDefaults fills unset keys. agentTimeout is the agent's pass limit:
// the container gets the same unless [sandbox.podman] timeout says otherwise.
func (c *Config) ApplyDefaults(agentTimeout time.Duration) {
	if c.Network == "" {
		c.Network = "none"
	}
	p := &c.Podman
	if p.Binary == "" {
		p.Binary = "podman"
	}
	if p.Image == "" {
		p.Image = DefaultImage()
	}
	if p.Memory == "" {
		p.Memory = "1g"
	}
	if p.CPUs == "" {
		p.CPUs = "1"
	}
	if p.PidsLimit == 0 {
		p.PidsLimit = 256
	}
	if p.Timeout == 0 {
		p.Timeout = agentTimeout
		if p.Timeout <= 0 {
			p.Timeout = DefaultTimeout
		}
	}
}

// ResolvePaths makes a relative containers_conf relative to base (the
// config file's directory), like every other path in the config.
func (c *Config) ResolvePaths(base string) {
	if p := c.Podman.ContainersConf; p != "" && !filepath.IsAbs(p) {
		c.Podman.ContainersConf = filepath.Join(base, p)
	}
}

var memoryRE = regexp.MustCompile(`^[0-9]+[bkmgBKMG]?$`)

// Validate checks a defaulted table. Each error starts with the TOML key
// it is about ("sandbox.podman.memory: ...") so the daemon can point at
// the line.
func (c Config) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("sandbox.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	switch c.Kind {
	case "podman", "none":
	case "":
		add("kind", `missing; set kind = "podman" (or "none" to run agents unconfined, explicitly)`)
	default:
		add("kind", `unknown sandbox kind %q (use "podman" or "none")`, c.Kind)
	}
	switch c.Network {
	case "none", "llm-only", "host":
	default:
		add("network", `unknown network %q (use "none", "llm-only" or "host")`, c.Network)
	}
	if c.Kind != "podman" {
		return errors.Join(errs...)
	}
	p := c.Podman
	if strings.TrimSpace(p.Binary) == "" {
		add("podman.binary", "must not be empty")
	}
	if strings.TrimSpace(p.Image) == "" || strings.ContainsAny(p.Image, " \t\n") {
		add("podman.image", "must be an image reference such as localhost/aicr-agent:%s, got %q", buildinfo.Version, p.Image)
	}
	if !memoryRE.MatchString(p.Memory) {
		add("podman.memory", "must be a size such as 512m or 1g, got %q", p.Memory)
	} else if n, _ := parseSize(p.Memory); n < 6<<20 {
		add("podman.memory", "must be at least 6m (podman's minimum), got %q", p.Memory)
	}
	if f, err := strconv.ParseFloat(p.CPUs, 64); err != nil || f <= 0 {
		add("podman.cpus", "must be a positive number such as 1 or 0.5, got %q", p.CPUs)
	}
	if p.PidsLimit < 8 {
		add("podman.pids_limit", "must be at least 8 (the agent needs a few processes and threads), got %d", p.PidsLimit)
	}
	if p.Timeout < 0 {
		add("podman.timeout", "must not be negative, got %s", p.Timeout)
	}
	for i, a := range p.ExtraArgs {
		if !strings.HasPrefix(a, "-") && (i == 0 || !strings.HasPrefix(p.ExtraArgs[i-1], "-")) {
			add("podman.extra_args", "%q is not a flag or a flag's value; extra_args are podman create flags only", a)
		}
	}
	return errors.Join(errs...)
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	switch strings.ToLower(s[len(s)-1:]) {
	case "k":
		mult = 1 << 10
	case "m":
		mult = 1 << 20
	case "g":
		mult = 1 << 30
	case "b":
	default:
		s += "b"
	}
	n, err := strconv.ParseInt(s[:len(s)-1], 10, 64)
	return n * mult, err
}

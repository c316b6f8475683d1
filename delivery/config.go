package delivery

import (
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
)

// Defaults of the [dispatch] table.
const (
	DefaultGiveUpAfter = 24 * time.Hour
	DefaultBackoff     = 2 * time.Second
	DefaultMaxBackoff  = 5 * time.Minute
	// DefaultTimeout is well above the platforms' normal latency: an
	// attempt cut short may still arrive, and is then sent at most once more.
	DefaultTimeout    = 30 * time.Second
	DefaultRetryEvery = "@every 30s"
)

// Config is the [dispatch] table: how deliveries are retried. The daemon
// composes it into its config.
type Config struct {
	// GiveUpAfter is how long retryable failures are retried, counted
	// from a delivery's first attempt, before it is dead.
	GiveUpAfter time.Duration `toml:"give_up_after"`
	// MaxAttempts, when set, also bounds attempts (deprecated: a count
	// says nothing about how long a platform may be down; 0 = no bound).
	MaxAttempts int `toml:"max_attempts"`
	// Backoff is the first retry delay, doubled per retry with jitter,
	// capped by MaxBackoff; a platform's Retry-After wins when longer.
	Backoff    time.Duration `toml:"backoff"`
	MaxBackoff time.Duration `toml:"max_backoff"`
	// Timeout bounds one attempt; a timed-out attempt has an unknown
	// outcome and is retried at most once.
	Timeout time.Duration `toml:"timeout"`
	// RetryEvery is the cron spec of a safety-net wake-up; the dispatcher
	// also wakes when work is planned and when the next retry falls due.
	RetryEvery string `toml:"retry_every"`
}

// ApplyDefaults fills keys left zero.
func (c *Config) ApplyDefaults() {
	if c.GiveUpAfter == 0 {
		c.GiveUpAfter = DefaultGiveUpAfter
	}
	if c.Backoff == 0 {
		c.Backoff = DefaultBackoff
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.RetryEvery == "" {
		c.RetryEvery = DefaultRetryEvery
	}
}

// FieldError is one invalid key of the table, named relative to it.
type FieldError struct {
	Key string // "give_up_after", or "" for the table as a whole
	Msg string
}

func (e FieldError) Error() string { return "dispatch." + e.Key + ": " + e.Msg }

// Validate checks a defaulted table and returns every problem.
func (c Config) Validate() []FieldError {
	var errs []FieldError
	if c.GiveUpAfter < time.Minute {
		errs = append(errs, FieldError{"give_up_after", fmt.Sprintf("must be at least 1m (default %s), got %s", DefaultGiveUpAfter, c.GiveUpAfter)})
	}
	if c.MaxAttempts < 0 || c.MaxAttempts > 10000 {
		errs = append(errs, FieldError{"max_attempts", fmt.Sprintf("must be between 0 (no bound) and 10000, got %d", c.MaxAttempts)})
	}
	if c.Backoff < 0 || c.MaxBackoff < c.Backoff {
		errs = append(errs, FieldError{"backoff", "backoff and max_backoff must be positive and backoff <= max_backoff"})
	}
	if c.Timeout < time.Second {
		errs = append(errs, FieldError{"timeout", fmt.Sprintf("must be at least 1s (default %s), got %s", DefaultTimeout, c.Timeout)})
	}
	if _, err := cron.ParseStandard(c.RetryEvery); err != nil {
		errs = append(errs, FieldError{"retry_every", fmt.Sprintf("bad schedule %q: %v", c.RetryEvery, err)})
	}
	return errs
}

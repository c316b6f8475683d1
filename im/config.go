package im

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/aicr-dev/aicr/review"
)

// Sentinel errors wrapped by ConfigError, for errors.Is.
var (
	ErrRequired     = errors.New("required")
	ErrInvalidValue = errors.New("invalid value")
)

// ConfigError names the TOML key that is wrong, so an operator can find it.
type ConfigError struct {
	Key   string
	Value string
	Err   error // ErrRequired or ErrInvalidValue
	Hint  string
}

func (e *ConfigError) Error() string {
	msg := e.Key + ": " + e.Err.Error()
	if e.Value != "" {
		msg += fmt.Sprintf(" %q", e.Value)
	}
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

func (e *ConfigError) Unwrap() error { return e.Err }

// Defaults for keys left out of a [[channel]] table.
const (
	DefaultNoProblems  = NoProblemsPublish
	DefaultMinSeverity = review.SeverityInfo
)

// ChannelConfig holds the keys every [[channel]] table has, whatever its
// kind. Empty NoProblems and MinSeverity mean the defaults above.
type ChannelConfig struct {
	Name        string           `toml:"name"`
	Kind        string           `toml:"kind"`
	NoProblems  NoProblemsPolicy `toml:"no_problems"`
	MinSeverity review.Severity  `toml:"min_severity"`
	// OnError says whether a failed run is announced on this channel:
	// "notify" posts a short error report, "suppress" (the default) not.
	OnError OnErrorPolicy `toml:"on_error"`
	// Repeat is how a report shows findings this channel was already told
	// about: "mention" (one compact line, the default), "omit" or "full".
	Repeat RepeatPolicy `toml:"repeat"`
	// Mode "digest" sends this channel only [[digest]] summaries, no
	// per-change reports; "" or "reports" sends reports.
	Mode ChannelMode `toml:"mode"`
	// Language is the language of the channel's reports ("en" or
	// "zh-CN"); empty takes [report] language.
	Language Language `toml:"language"`
}

// RepeatPolicy is how a channel's reports show findings it already got.
type RepeatPolicy string

const (
	RepeatMention RepeatPolicy = "mention"
	RepeatOmit    RepeatPolicy = "omit"
	RepeatFull    RepeatPolicy = "full"
)

// DefaultRepeat is the repeat policy of a channel that sets none.
const DefaultRepeat = RepeatMention

// Valid reports whether r is one of the three repeat policies.
func (r RepeatPolicy) Valid() bool {
	return r == RepeatMention || r == RepeatOmit || r == RepeatFull
}

// RepeatPolicy is the channel's repeat policy, the default filled in.
func (c ChannelConfig) RepeatPolicy() RepeatPolicy {
	if c.Repeat == "" {
		return DefaultRepeat
	}
	return c.Repeat
}

// DigestOnly reports whether the channel gets [[digest]] summaries only:
// no per-change report and no resolution follow-up is planned for it.
func (c ChannelConfig) DigestOnly() bool { return c.Mode == ModeDigest }

// ChannelMode is what a channel receives.
type ChannelMode string

const (
	ModeReports ChannelMode = "reports"
	ModeDigest  ChannelMode = "digest"
)

// OnErrorPolicy is what a channel does when a review run fails.
type OnErrorPolicy string

const (
	OnErrorSuppress OnErrorPolicy = "suppress"
	OnErrorNotify   OnErrorPolicy = "notify"
)

// Names end up in routes, audit rows and log lines, so keep them to
// characters that need no quoting anywhere.
var channelNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// Validate checks the common keys and returns every problem at once
// (joined). Whether Kind names a known kind is the loader's job, since
// only it holds the list of kinds.
func (c ChannelConfig) Validate() error {
	var errs []error
	switch {
	case c.Name == "":
		errs = append(errs, &ConfigError{Key: "name", Err: ErrRequired})
	case !channelNameRE.MatchString(c.Name):
		errs = append(errs, &ConfigError{Key: "name", Value: c.Name, Err: ErrInvalidValue,
			Hint: "letters, digits, '_', '.', '-'; starting with a letter or digit"})
	}
	if c.Kind == "" {
		errs = append(errs, &ConfigError{Key: "kind", Err: ErrRequired})
	}
	if c.NoProblems != "" && !c.NoProblems.Valid() {
		errs = append(errs, &ConfigError{Key: "no_problems", Value: string(c.NoProblems), Err: ErrInvalidValue,
			Hint: "want publish, suppress or publish_if_summary"})
	}
	if c.OnError != "" && c.OnError != OnErrorSuppress && c.OnError != OnErrorNotify {
		errs = append(errs, &ConfigError{Key: "on_error", Value: string(c.OnError), Err: ErrInvalidValue,
			Hint: "want notify or suppress"})
	}
	if c.Repeat != "" && !c.Repeat.Valid() {
		errs = append(errs, &ConfigError{Key: "repeat", Value: string(c.Repeat), Err: ErrInvalidValue,
			Hint: "want mention, omit or full"})
	}
	if c.Mode != "" && c.Mode != ModeReports && c.Mode != ModeDigest {
		errs = append(errs, &ConfigError{Key: "mode", Value: string(c.Mode), Err: ErrInvalidValue,
			Hint: "want reports or digest"})
	}
	if c.Language != "" {
		if _, err := ParseLanguage(string(c.Language)); err != nil {
			errs = append(errs, &ConfigError{Key: "language", Value: string(c.Language), Err: ErrInvalidValue,
				Hint: `want "en" or "zh-CN"`})
		}
	}
	if c.MinSeverity != "" && !c.MinSeverity.Valid() {
		errs = append(errs, &ConfigError{Key: "min_severity", Value: string(c.MinSeverity), Err: ErrInvalidValue,
			Hint: "want " + severityList()})
	}
	return errors.Join(errs...)
}

// Policy returns the channel's publishing policy with defaults filled in.
func (c ChannelConfig) Policy() Policy {
	p := Policy{MinSeverity: c.MinSeverity, NoProblems: c.NoProblems}
	if p.MinSeverity == "" {
		p.MinSeverity = DefaultMinSeverity
	}
	if p.NoProblems == "" {
		p.NoProblems = DefaultNoProblems
	}
	return p
}

func severityList() string {
	names := make([]string, len(review.Severities))
	for i, s := range review.Severities {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// SecretChecker is implemented by kind configs whose secrets (tokens,
// webhook URLs, signing keys) are read at every Send rather than at
// Build. `aicr config check` calls it to warn early: an unreadable secret
// is not a start failure, since the operator may fix it while the daemon
// runs, but it will fail deliveries until then.
type SecretChecker interface {
	// CheckSecrets reads every configured secret now and reports the
	// first that cannot be read; relative paths resolve against baseDir.
	CheckSecrets(baseDir string) error
}

// Package im publishes review results to instant-messaging channels and
// other sinks. It owns the Channel interface, the per-channel publishing
// policy, the common channel configuration and the wording every channel
// shares; each kind of channel lives in its own sub-package and supplies
// only markup, limits and transport.
package im

import (
	"context"
	"io"
	"log/slog"
	"time"

	"golang.org/x/time/rate"

	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

// Message is what the dispatcher hands a channel: one reviewed change and
// the part of its result this channel is meant to publish.
type Message struct {
	RunID int64
	// Change carries the metadata (repo, revision, author, description,
	// files). It may be nil when a result is replayed without it.
	Change *vcs.Change
	// Result has already been filtered by the channel's Policy.
	Result review.Result
	// ChangeURL links to the change in a browser; optional.
	ChangeURL string
	// RunURL is the run's page on aicr's web page ([web] base_url);
	// the footer's run links to it. Optional.
	RunURL string
	// Author is the change author's chat identities, for mentions; nil
	// when the VCS user is not mapped.
	Author *Identity
	// DedupeKey is the same for every attempt to deliver this message to
	// this channel ("aicr-<run>-<channel>"); platforms that support
	// idempotency get it (the webhook's Idempotency-Key header).
	DedupeKey string
	// PriorMessageID is the platform id (Slack ts) an earlier attempt got
	// for the first part, so a retry continues instead of posting again.
	PriorMessageID string
	// MaybeDelivered is true when an earlier attempt may have reached the
	// platform without its answer being recorded (a crash mid-send, a
	// timeout); channels that can look up what they posted should.
	MaybeDelivered bool
	// PartsDelivered is how many parts of a split report earlier attempts
	// already delivered (copied from SendError.PartsDelivered); Send
	// starts with the part after them so a retry does not repost them.
	PartsDelivered int
	// Reviewer names the agent (and model) that reviewed the change, for
	// the report's footer; zero when unknown.
	Reviewer Reviewer
	// Failure is set when the run failed for good: the first line of its
	// error. Result then holds only what the builtin rules found before
	// the failure (a partial review), or nothing (the failure notice).
	Failure string
	// Stopped is why a review that ran stopped before it was done (a
	// per-review cap): Result is a partial review, and the report says so.
	Stopped string
	// Budget, when set, is the spent [[budget]] that made the review run
	// with the builtin rules only, with the fallback model, or not at all;
	// the report says so in its notice.
	Budget *BudgetNotice
	// Clipped are the files whose diff did not fit the model's prompt
	// budget: the report lists them as left out, with why.
	Clipped []string
	// Findings, when set, is how Result's problems live across commits
	// (aligned with Result.Problems): the report shows new and reopened
	// ones in full, with their links, and repeats as compact lines.
	Findings *Findings
	// Language is the language BuildReport words the report in (the
	// channel's); "" is English.
	Language Language
	// Report, when set, is the report planned with the dispatch (the
	// BuildReport of the fields above under the channel's policy, stored
	// with the dispatch row): BuildReport returns it as it is, so what a
	// channel sends is what was planned, whatever changed since. The
	// dispatcher sends only planned reports; the fields above then stay
	// zero.
	Report *Report
}

// Reviewer is who reviewed a change: the agent kind and, for model-backed
// agents, the model as its server named it, with what the review cost
// for the footer.
type Reviewer struct {
	Agent string
	Model string
	// CostUSD is the review's cost; nil when no prices are configured.
	CostUSD *float64 `json:",omitempty"`
	// PromptTokens is the review's whole prompt, CachedTokens the part
	// the provider read from its cache.
	PromptTokens int `json:",omitempty"`
	CachedTokens int `json:",omitempty"`
}

// RateLimited is implemented by channels whose platform limits how often
// one destination may be posted to. The dispatcher (package delivery) owns
// one token bucket per channel with this rate and burst, takes a token
// before each Send and hands the rest to the channel through the pacer in
// the context (see Pace); channels without it are not throttled. Channels
// keep no limiter of their own.
type RateLimited interface {
	RateLimit() (rate.Limit, int)
}

// Identity maps one VCS user to the ids each platform mentions by. Empty
// fields are unknown; Email lets Slack look the user up.
type Identity struct {
	VCSUser        string `toml:"vcs_user" json:"vcs_user"`
	Email          string `toml:"email" json:"email,omitempty"`
	SlackID        string `toml:"slack_id" json:"slack_id,omitempty"`
	FeishuOpenID   string `toml:"feishu_open_id" json:"feishu_open_id,omitempty"`
	DingTalkUserID string `toml:"dingtalk_user_id" json:"dingtalk_user_id,omitempty"`
	Mobile         string `toml:"mobile" json:"mobile,omitempty"`
	WeComUserID    string `toml:"wecom_user_id" json:"wecom_user_id,omitempty"`
}

// Receipt is what one successful Send did, for the audit trail.
type Receipt struct {
	// Rendered is the body as sent (all parts, joined), secrets excluded.
	Rendered string
	// Parts is how many messages the report was split into.
	Parts int
	// StatusCode and Response are the platform's answer to the last part
	// (an excerpt of the body).
	StatusCode int
	Response   string
	// MessageID identifies the posted message where the platform returns
	// one (Slack ts), so replies and dedupe can refer to it.
	MessageID string
}

// Channel delivers messages to one configured destination. Implementations
// make a single attempt per Send; retrying and rate limiting belong to the
// caller so every attempt can be recorded in one place.
type Channel interface {
	// Name is the operator-chosen name from the [[channel]] table.
	Name() string
	// Kind is the channel kind ("console", "file", ...).
	Kind() string
	// Send makes one delivery attempt. Failures should be a *SendError so
	// the dispatcher knows whether, and when, to retry.
	Send(ctx context.Context, msg Message) (Receipt, error)
}

// Deps are the process-level things a channel may need when it is built.
// They come from the daemon, never from globals, so tests can swap them.
type Deps struct {
	Stdout io.Writer
	Logger *slog.Logger
	// BaseDir is the directory of the config file; kinds resolve relative
	// paths against it so a config means the same thing from any cwd.
	BaseDir string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Clock returns d.Now, or time.Now when unset.
func (d Deps) Clock() func() time.Time {
	if d.Now == nil {
		return time.Now
	}
	return d.Now
}

// KindConfig is the kind-specific part of a [[channel]] table. The config
// loader decodes the same table twice: once into ChannelConfig for the
// common keys and once into the value returned by Kind.NewConfig, so a
// KindConfig carries toml tags for its own keys only.
type KindConfig interface {
	Validate() error
	Build(common ChannelConfig, deps Deps) (Channel, error)
}

// Kind describes one kind of channel for the config loader. The set of
// kinds is listed explicitly in package im/channels rather than registered
// from init functions, so what a binary supports is visible in one place.
type Kind struct {
	Name string
	// NewConfig returns a pointer to a fresh zero config to decode into.
	NewConfig func() KindConfig
}

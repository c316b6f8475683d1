// Package webhook is the generic channel: one JSON POST of the review
// result with run and change metadata (schema in docs/webhook.md), signed
// like the trigger protocol when a secret is set, and carrying an
// Idempotency-Key that stays the same across retries.
package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"golang.org/x/time/rate"

	"github.com/aicr-dev/aicr/hmacsig"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/internal/httppost"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/secret"
)

// KindName is the value of `kind` that selects this channel.
const KindName = "webhook"

// PayloadVersion is the "version" field of every payload; it changes only
// when a field is removed or changes meaning.
const PayloadVersion = 1

// The signing headers, the same as the trigger protocol's, so one
// receiver can verify both with package hmacsig.
const (
	HeaderTimestamp = "X-Aicr-Timestamp"
	HeaderSignature = "X-Aicr-Signature"
)

// HeaderIdempotencyKey carries Message.DedupeKey; receivers drop a
// request whose key they have seen.
const HeaderIdempotencyKey = "Idempotency-Key"

// Config is the webhook-specific part of a [[channel]] table.
type Config struct {
	// URLEnv / URLFile name where the endpoint URL lives: URLs often
	// carry a token, so they are secrets.
	URLEnv  string `toml:"url_env"`
	URLFile string `toml:"url_file"`
	// SecretEnv / SecretFile: optional HMAC key; when set, requests carry
	// X-Aicr-Timestamp and X-Aicr-Signature.
	SecretEnv  string `toml:"secret_env"`
	SecretFile string `toml:"secret_file"`
	// RatePerMinute throttles requests to the endpoint; 0 is unlimited.
	RatePerMinute int `toml:"rate_per_minute"`
}

// Validate checks the webhook-specific keys.
func (c *Config) Validate() error {
	var errs []error
	errs = append(errs, secret.Ref{Env: c.URLEnv, File: c.URLFile}.Validate("url", true),
		secret.Ref{Env: c.SecretEnv, File: c.SecretFile}.Validate("secret", false))
	if c.RatePerMinute < 0 {
		errs = append(errs, &im.ConfigError{Key: "rate_per_minute", Value: strconv.Itoa(c.RatePerMinute), Err: im.ErrInvalidValue, Hint: "0 (unlimited) or more"})
	}
	return errors.Join(errs...)
}

// Build returns the webhook channel. Secrets are read at every Send, so a
// rotated secret file takes effect without a restart.
func (c *Config) Build(common im.ChannelConfig, deps im.Deps) (im.Channel, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &Channel{name: common.Name, cfg: *c, baseDir: deps.BaseDir, now: deps.Clock(),
		client: &http.Client{}}, nil
}

// CheckSecrets implements im.SecretChecker.
func (c *Config) CheckSecrets(baseDir string) error {
	if _, err := httppost.ReadKey("url", c.URLEnv, c.URLFile, baseDir); err != nil {
		return err
	}
	_, err := httppost.ReadKey("secret", c.SecretEnv, c.SecretFile, baseDir)
	return err
}

// Payload is the JSON body. See docs/webhook.md.
type Payload struct {
	Version        int    `json:"version"`
	IdempotencyKey string `json:"idempotency_key"`
	Channel        string `json:"channel"`
	RunID          int64  `json:"run_id"`
	Change         Change `json:"change"`
	// Reviewer names the agent and model; absent when unknown or the run
	// failed (a partial review is the builtin rules').
	Reviewer  *Reviewer        `json:"reviewer,omitempty"`
	Author    *im.Identity     `json:"author,omitempty"`
	Counts    map[string]int   `json:"counts"`
	Problems  []review.Problem `json:"problems"`
	Summaries []review.Summary `json:"summaries"`
	Skip      *review.Skip     `json:"skip"`
	// Failure is the reason of a run that failed for good ("" for a
	// review): problems are then only the builtin rules' (a partial review).
	Failure string `json:"failure,omitempty"`
	// Budget is the spent [[budget]] that changed how the change was
	// reviewed (builtin rules only, skipped, the fallback model); nil when
	// none applied.
	Budget *im.BudgetNotice `json:"budget,omitempty"`
	// ReportKind is "resolution" for a follow-up telling what a change
	// resolved ("" for a review); Resolved then lists the findings.
	ReportKind string `json:"report_kind,omitempty"`
	// Entries are Problems as findings (same index): their ids and links.
	Entries []im.Entry `json:"entries,omitempty"`
	// Repeats are findings reported before and seen again.
	Repeats  []im.Repeat         `json:"repeats,omitempty"`
	Resolved []im.ResolvedRecord `json:"resolved,omitempty"`
	// Digest is a [[digest]]'s figures (report_kind "digest").
	Digest *im.Digest `json:"digest,omitempty"`
	Text   string     `json:"text"`
	SentAt time.Time  `json:"sent_at"`
}

// Change is the reviewed change's metadata in a Payload.
type Change struct {
	VCS         string `json:"vcs"`
	Repo        string `json:"repo"`
	Revision    string `json:"revision"`
	Author      string `json:"author"`
	Description string `json:"description"`
	URL         string `json:"url,omitempty"`
	// Shelved is true for a Perforce shelf: pending, not submitted.
	Shelved bool `json:"shelved,omitempty"`
}

// Reviewer is who reviewed the change in a Payload.
type Reviewer struct {
	Agent string `json:"agent"`
	Model string `json:"model,omitempty"`
}

// Channel posts Payloads.
type Channel struct {
	name    string
	cfg     Config
	baseDir string
	now     func() time.Time
	client  *http.Client
}

var (
	_ im.Channel     = (*Channel)(nil)
	_ im.RateLimited = (*Channel)(nil)
)

func (c *Channel) Name() string { return c.name }
func (c *Channel) Kind() string { return KindName }

// RateLimit implements im.RateLimited.
func (c *Channel) RateLimit() (rate.Limit, int) {
	if c.cfg.RatePerMinute == 0 {
		return rate.Inf, 1
	}
	return rate.Limit(float64(c.cfg.RatePerMinute) / 60), 1
}

// Render builds the body Send posts: msg's report (im.BuildReport, the
// one every chat channel renders) as JSON.
func (c *Channel) Render(msg im.Message) ([]byte, error) {
	body, err := httppost.Encode(NewPayload(im.BuildReport(msg), c.name, msg.DedupeKey, c.now()))
	if err != nil {
		return nil, fmt.Errorf("encode payload: %w", err)
	}
	return body, nil
}

// NewPayload is the machine form of rep. Every value comes from the
// report; only the envelope (version, idempotency key, channel, time) is
// the webhook's. The fields are a published format (docs/webhook.md):
// lists are [] rather than null, and a "lgtm" skip is kept as reported.
func NewPayload(rep im.Report, channel, dedupeKey string, sentAt time.Time) Payload {
	p := Payload{
		Version:        PayloadVersion,
		IdempotencyKey: dedupeKey,
		Channel:        channel,
		RunID:          rep.RunID,
		Change: Change{VCS: rep.Change.VCS, Repo: rep.Change.Repo, Revision: rep.Change.Revision,
			Author: rep.Change.Author, Description: rep.Change.Description, URL: rep.ChangeURL,
			Shelved: rep.Change.Shelved},
		Author:    rep.Author,
		Counts:    map[string]int{},
		Problems:  rep.Problems,
		Summaries: rep.Summaries,
		Skip:      rep.SkipReason,
		Failure:   rep.Failure,
		Budget:    rep.Budget,
		Entries:   rep.Entries,
		Repeats:   rep.Repeats,
		Resolved:  rep.ResolvedRecords(),
		Digest:    rep.Digest,
		Text:      im.PlainText(rep),
		SentAt:    sentAt.UTC(),
	}
	if rep.Reviewer.Agent != "" {
		p.Reviewer = &Reviewer{Agent: rep.Reviewer.Agent, Model: rep.Reviewer.Model}
	}
	if rep.Kind != im.KindReview {
		p.ReportKind = string(rep.Kind)
	}
	if p.Problems == nil {
		p.Problems = []review.Problem{}
	}
	if p.Summaries == nil {
		p.Summaries = []review.Summary{}
	}
	for sev, n := range im.CountBySeverity(rep.Problems) {
		p.Counts[string(sev)] = n
	}
	return p
}

// Send posts the payload once. 2xx is success; the rest is classified by
// im.ClassifyStatus. The URL and secret are read now, so a fixed secret
// file takes effect on the next retry; neither appears in errors.
func (c *Channel) Send(ctx context.Context, msg im.Message) (im.Receipt, error) {
	rawURL, err := httppost.ReadAtSend("url", c.cfg.URLEnv, c.cfg.URLFile, c.baseDir)
	if err != nil {
		return im.Receipt{}, err
	}
	if err := httppost.CheckURL("url", rawURL); err != nil {
		return im.Receipt{}, &im.SendError{Reason: im.ReasonClient, Err: err}
	}
	secret, err := httppost.ReadAtSend("secret", c.cfg.SecretEnv, c.cfg.SecretFile, c.baseDir)
	if err != nil {
		return im.Receipt{}, err
	}
	body, err := c.Render(msg)
	if err != nil {
		return im.Receipt{}, &im.SendError{Reason: im.ReasonClient, Err: err}
	}
	header := http.Header{}
	if msg.DedupeKey != "" {
		header.Set(HeaderIdempotencyKey, msg.DedupeKey)
	}
	if secret != "" {
		// A fresh timestamp per request: receivers reject stale ones.
		ts := c.now().Unix()
		header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
		header.Set(HeaderSignature, hmacsig.Sign([]byte(secret), ts, body))
	}
	resp, err := httppost.Post(ctx, c.client, httppost.Request{URL: rawURL, Body: body, Header: header,
		Secrets: []string{secret}})
	if err != nil {
		return im.Receipt{}, err
	}
	return im.Receipt{Rendered: string(body), Parts: 1, StatusCode: resp.Status,
		Response: resp.Excerpt(httppost.Secrets(rawURL, secret)...)}, nil
}

// Package slack is the Slack channel. With a bot token it posts the
// summary with chat.postMessage (Block Kit) and the problems as batched
// replies in its thread; with an incoming-webhook URL it posts the summary
// alone, problems inline as far as Slack's block limit allows.
package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/slack-go/slack"
	"golang.org/x/time/rate"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/internal/httppost"
	"github.com/aicr-dev/aicr/secret"
)

// KindName is the value of `kind` that selects this channel.
const KindName = "slack"

// DefaultAPIURL is Slack's Web API base.
const DefaultAPIURL = "https://slack.com/api/"

// DefaultRatePerMinute keeps to Slack's one message per second per channel.
const DefaultRatePerMinute = 60

// Metadata event types: the summary and each reply carry the dispatch's
// dedupe key, so after a crash the channel can find what it posted.
const (
	EventSummary = "aicr_review"
	EventReply   = "aicr_review_part"
)

// Config is the Slack-specific part of a [[channel]] table. Exactly one
// mode: bot token (token_env|token_file + channel) or incoming webhook
// (webhook_url_env|webhook_url_file).
type Config struct {
	TokenEnv  string `toml:"token_env"`
	TokenFile string `toml:"token_file"`
	// Channel is a conversation id (C0123ABCD) or name (#reviews). An id
	// also lets a retry after a crash check what was already posted.
	Channel        string `toml:"channel"`
	WebhookURLEnv  string `toml:"webhook_url_env"`
	WebhookURLFile string `toml:"webhook_url_file"`
	// APIURL overrides the Web API base (tests, Enterprise proxies).
	APIURL string `toml:"api_url"`
	// RatePerMinute bounds posts to the channel (default 60).
	RatePerMinute int `toml:"rate_per_minute"`
	// ProblemsPerReply is how many problems one thread reply carries.
	ProblemsPerReply int `toml:"problems_per_reply"`
	// AppTokenEnv / AppTokenFile hold the app-level token (xapp-…) the
	// daemon opens a Socket Mode connection with, to receive the clicks
	// on the findings' buttons (package im/slack/socket). Bot token only:
	// buttons are Block Kit.
	AppTokenEnv  string `toml:"app_token_env"`
	AppTokenFile string `toml:"app_token_file"`
}

// AppTokenPrefix starts every Slack app-level token.
const AppTokenPrefix = "xapp-"

// AppToken is where the channel's app-level token is, relative files
// resolved against baseDir (the config file's directory); the zero Ref
// when Socket Mode is off.
func (c *Config) AppToken(baseDir string) secret.Ref {
	return secret.Ref{Env: c.AppTokenEnv, File: c.AppTokenFile}.InDir(baseDir)
}

// CheckAppToken tells an app-level token from the bot or user token an
// operator may paste by mistake: apps.connections.open refuses those
// (not_allowed_token_type), and retrying would only repeat it.
func CheckAppToken(token string) error {
	if strings.HasPrefix(token, AppTokenPrefix) {
		return nil
	}
	what := "this is not a Slack app-level token (those start with " + AppTokenPrefix + ")"
	for prefix, name := range otherTokens {
		if strings.HasPrefix(token, prefix) {
			what = "this is a " + name + " (" + prefix + "…), not an app-level token (" + AppTokenPrefix + "…)"
		}
	}
	return errors.New("app_token: " + what + ": create one under the Slack app's Basic Information → App-Level Tokens, with the connections:write scope")
}

var otherTokens = map[string]string{"xoxb-": "bot token", "xoxp-": "user token", "xoxe-": "refresh token", "xoxa-": "workspace token"}

func (c *Config) tokenMode() bool { return c.TokenEnv != "" || c.TokenFile != "" }

// BotToken is where the channel's bot token is (the zero Ref in webhook
// mode), relative files resolved against baseDir.
func (c *Config) BotToken(baseDir string) secret.Ref {
	return secret.Ref{Env: c.TokenEnv, File: c.TokenFile}.InDir(baseDir)
}

// API is the Web API base the channel talks to: api_url, else Slack's,
// ending in "/" as slack-go wants it.
func (c *Config) API() string {
	u := c.APIURL
	if u == "" {
		u = DefaultAPIURL
	}
	if !strings.HasSuffix(u, "/") {
		u += "/"
	}
	return u
}

// Validate checks the Slack-specific keys.
func (c *Config) Validate() error {
	var errs []error
	hook := c.WebhookURLEnv != "" || c.WebhookURLFile != ""
	switch {
	case c.tokenMode() && hook:
		errs = append(errs, &im.ConfigError{Key: "token_env", Err: im.ErrInvalidValue, Hint: "set a bot token or a webhook_url, not both"})
	case !c.tokenMode() && !hook:
		errs = append(errs, &im.ConfigError{Key: "token_env", Err: im.ErrRequired, Hint: "or token_file, or webhook_url_env / webhook_url_file"})
	}
	errs = append(errs, secret.Ref{Env: c.TokenEnv, File: c.TokenFile}.Validate("token", false),
		secret.Ref{Env: c.WebhookURLEnv, File: c.WebhookURLFile}.Validate("webhook_url", false),
		secret.Ref{Env: c.AppTokenEnv, File: c.AppTokenFile}.Validate("app_token", false))
	if (c.AppTokenEnv != "" || c.AppTokenFile != "") && !c.tokenMode() {
		errs = append(errs, &im.ConfigError{Key: "app_token_env", Err: im.ErrInvalidValue,
			Hint: "Socket Mode receives the clicks on Block Kit buttons, which only a bot token posts: set token_env or token_file, or remove app_token_*"})
	}
	if c.tokenMode() && strings.TrimSpace(c.Channel) == "" {
		errs = append(errs, &im.ConfigError{Key: "channel", Err: im.ErrRequired, Hint: "a channel id such as C0123ABCD, or #name"})
	}
	if c.APIURL != "" {
		if u, err := url.Parse(c.APIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, &im.ConfigError{Key: "api_url", Value: c.APIURL, Err: im.ErrInvalidValue, Hint: "an absolute http(s) URL"})
		}
	}
	if c.RatePerMinute < 0 {
		errs = append(errs, &im.ConfigError{Key: "rate_per_minute", Value: strconv.Itoa(c.RatePerMinute), Err: im.ErrInvalidValue})
	}
	if c.ProblemsPerReply < 0 || c.ProblemsPerReply > MaxBlocks-1 {
		errs = append(errs, &im.ConfigError{Key: "problems_per_reply", Value: strconv.Itoa(c.ProblemsPerReply), Err: im.ErrInvalidValue, Hint: "1 to 49"})
	}
	return errors.Join(errs...)
}

// Build returns the Slack channel. Secrets are read at every Send.
func (c *Config) Build(common im.ChannelConfig, deps im.Deps) (im.Channel, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	cfg := *c
	if cfg.APIURL == "" {
		cfg.APIURL = DefaultAPIURL
	}
	if !strings.HasSuffix(cfg.APIURL, "/") {
		cfg.APIURL += "/"
	}
	if cfg.RatePerMinute == 0 {
		cfg.RatePerMinute = DefaultRatePerMinute
	}
	if cfg.ProblemsPerReply == 0 {
		cfg.ProblemsPerReply = DefaultProblemsPerReply
	}
	return &Channel{
		name:    common.Name,
		cfg:     cfg,
		baseDir: deps.BaseDir,
		client:  &http.Client{},
		users:   map[string]string{},
	}, nil
}

// CheckSecrets implements im.SecretChecker.
func (c *Config) CheckSecrets(baseDir string) error {
	if _, err := httppost.ReadKey("token", c.TokenEnv, c.TokenFile, baseDir); err != nil {
		return err
	}
	if _, err := httppost.ReadKey("webhook_url", c.WebhookURLEnv, c.WebhookURLFile, baseDir); err != nil {
		return err
	}
	app, err := httppost.ReadKey("app_token", c.AppTokenEnv, c.AppTokenFile, baseDir)
	if err != nil || app == "" {
		return err
	}
	return CheckAppToken(app)
}

// Channel posts to one Slack conversation.
type Channel struct {
	name    string
	cfg     Config
	baseDir string
	client  *http.Client

	mu    sync.Mutex
	users map[string]string // email → Slack user id; "" caches "not found"
}

var (
	_ im.Channel     = (*Channel)(nil)
	_ im.RateLimited = (*Channel)(nil)
)

func (c *Channel) Name() string { return c.name }
func (c *Channel) Kind() string { return KindName }

// RateLimit implements im.RateLimited: one bucket for every post to the
// conversation, summary and replies alike. The dispatcher owns it; Send
// paces each request through im.Pace.
func (c *Channel) RateLimit() (rate.Limit, int) {
	return rate.Limit(float64(c.cfg.RatePerMinute) / 60), 1
}

// Send delivers the report once: the summary, then the reply batches in
// its thread. A retry resumes after the parts already delivered
// (msg.PartsDelivered, msg.PriorMessageID); after a crash
// (msg.MaybeDelivered without them) it looks the summary up by its
// metadata first, so the report is not posted twice.
func (c *Channel) Send(ctx context.Context, msg im.Message) (im.Receipt, error) {
	if !c.cfg.tokenMode() {
		return c.sendWebhook(ctx, msg)
	}
	token, err := httppost.ReadAtSend("token", c.cfg.TokenEnv, c.cfg.TokenFile, c.baseDir)
	if err != nil {
		return im.Receipt{}, err
	}
	api := slack.New(token, slack.OptionAPIURL(c.cfg.APIURL), slack.OptionHTTPClient(c.client))
	rep := im.BuildReport(msg)
	if rep.Kind == im.KindResolution {
		return c.sendResolution(ctx, api, token, rep, msg)
	}
	mention := c.mention(ctx, api, rep.Author)
	posts := []Post{RenderSummary(rep, mention, false)}
	posts = append(posts, RenderReplies(rep, c.cfg.ProblemsPerReply)...)
	rec := im.Receipt{Parts: len(posts), Rendered: renderedJSON(posts)}

	// The message id is "<channel id>:<ts>" (chat.update needs both); a
	// row an older aicr recorded holds the bare ts.
	chID, ts := SplitMessageID(msg.PriorMessageID)
	start := msg.PartsDelivered
	if start > 0 && ts == "" {
		start = 0 // cannot thread without the summary's ts: start over
	}
	if start == 0 && msg.MaybeDelivered && msg.DedupeKey != "" {
		if found, parts, err := c.findPosted(ctx, api, msg.DedupeKey); err == nil && found != "" {
			ts, start, chID = found, parts, c.cfg.Channel
		}
	}
	for i := start; i < len(posts); i++ {
		if err := im.Pace(ctx); err != nil {
			return rec, &im.SendError{Reason: im.ReasonTimeout, Retryable: true, MessageID: ts, PartsDelivered: i, Err: err}
		}
		// Review text quotes committers' and agents' URLs: Slack must not
		// fetch them for a preview (a tracking pixel, an internal host).
		opts := []slack.MsgOption{slack.MsgOptionText(posts[i].Text, false), slack.MsgOptionBlocks(posts[i].Blocks...),
			slack.MsgOptionDisableLinkUnfurl(), slack.MsgOptionDisableMediaUnfurl()}
		event := EventSummary
		if i > 0 {
			event = EventReply
			opts = append(opts, slack.MsgOptionTS(ts))
		}
		if msg.DedupeKey != "" {
			opts = append(opts, slack.MsgOptionMetadata(slack.SlackMetadata{EventType: event,
				EventPayload: map[string]any{"dedupe_key": msg.DedupeKey, "part": i}}))
		}
		postCh, postTS, err := api.PostMessageContext(ctx, c.cfg.Channel, opts...)
		if err != nil {
			se := classify(err, token)
			se.MessageID, se.PartsDelivered = JoinMessageID(chID, ts), i
			if i > 0 {
				se.Err = fmt.Errorf("reply %d/%d: %w", i, len(posts)-1, se.Err)
			}
			return rec, se
		}
		if i == 0 {
			ts, chID = postTS, postCh
		}
		// Recorded before the next reply, so a restart threads the rest
		// under this summary and sends only what is missing.
		im.Delivered(ctx, i+1, JoinMessageID(chID, ts))
	}
	rec.MessageID, rec.StatusCode, rec.Response = JoinMessageID(chID, ts), http.StatusOK, `{"ok":true}`
	return rec, nil
}

// findPosted looks for this dispatch's summary in the channel's recent
// history and counts its replies, returning the summary's ts and how many
// parts are already there. Only ids can be read back, so a channel
// configured by name always posts.
func (c *Channel) findPosted(ctx context.Context, api *slack.Client, key string) (string, int, error) {
	if !channelIDRE.MatchString(c.cfg.Channel) {
		return "", 0, nil
	}
	hist, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{
		ChannelID: c.cfg.Channel, Limit: 100, IncludeAllMetadata: true})
	if err != nil {
		return "", 0, err
	}
	for _, m := range hist.Messages {
		if m.Metadata.EventType != EventSummary || m.Metadata.EventPayload["dedupe_key"] != key {
			continue
		}
		replies, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
			ChannelID: c.cfg.Channel, Timestamp: m.Timestamp, Limit: 200, IncludeAllMetadata: true})
		if err != nil {
			return "", 0, err
		}
		parts := 1
		for _, r := range replies {
			if r.Metadata.EventType == EventReply && r.Metadata.EventPayload["dedupe_key"] == key {
				if p, ok := r.Metadata.EventPayload["part"].(float64); ok && int(p)+1 > parts {
					parts = int(p) + 1
				}
			}
		}
		return m.Timestamp, parts, nil
	}
	return "", 0, nil
}

var channelIDRE = regexp.MustCompile(`^[CGD][A-Z0-9]{6,}$`)

// mention returns "<@U…>" for the author when known: the [[user]]
// mapping's slack_id, else users.lookupByEmail, cached per daemon,
// misses included. Any failure falls back to no mention.
func (c *Channel) mention(ctx context.Context, api *slack.Client, who *im.Identity) string {
	if who == nil {
		return ""
	}
	if who.SlackID != "" {
		return "<@" + Escape(who.SlackID) + ">"
	}
	email := strings.ToLower(strings.TrimSpace(who.Email))
	if email == "" {
		return ""
	}
	c.mu.Lock()
	id, cached := c.users[email]
	c.mu.Unlock()
	if !cached {
		u, err := api.GetUserByEmailContext(ctx, email)
		var ser slack.SlackErrorResponse
		switch {
		case err == nil:
			id = u.ID
		case errors.As(err, &ser) && ser.Err == "users_not_found":
			id = ""
		default:
			return "" // transient: try again next time
		}
		c.mu.Lock()
		c.users[email] = id
		c.mu.Unlock()
	}
	if id == "" {
		return ""
	}
	return "<@" + Escape(id) + ">"
}

// LookupCount reports how many emails are cached (for tests and metrics).
func (c *Channel) LookupCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.users)
}

// Slack's error strings, classified. Anything unlisted is a permanent
// client error: retrying an unknown refusal only repeats it.
var retryableCodes = map[string]im.Reason{
	"ratelimited":         im.ReasonRateLimited,
	"rate_limited":        im.ReasonRateLimited,
	"internal_error":      im.ReasonServer,
	"fatal_error":         im.ReasonServer,
	"service_unavailable": im.ReasonServer,
	"request_timeout":     im.ReasonTimeout,
}

var permanentCodes = map[string]im.Reason{
	"invalid_auth":        im.ReasonAuth,
	"not_authed":          im.ReasonAuth,
	"account_inactive":    im.ReasonAuth,
	"token_revoked":       im.ReasonAuth,
	"token_expired":       im.ReasonAuth,
	"missing_scope":       im.ReasonAuth,
	"invalid_token":       im.ReasonAuth,
	"channel_not_found":   im.ReasonClient,
	"not_in_channel":      im.ReasonClient,
	"is_archived":         im.ReasonClient,
	"channel_is_archived": im.ReasonClient,
	"invalid_blocks":      im.ReasonClient,
	"invalid_payload":     im.ReasonClient,
	"no_text":             im.ReasonClient,
	"msg_too_long":        im.ReasonTooLarge,
	"action_prohibited":   im.ReasonAuth,
	"no_service":          im.ReasonAuth,
}

// classifyCode maps one Slack error string.
func classifyCode(code string, status int) *im.SendError {
	if r, ok := retryableCodes[code]; ok {
		return &im.SendError{Reason: r, Retryable: true, PlatformCode: code, StatusCode: status}
	}
	if r, ok := permanentCodes[code]; ok {
		return &im.SendError{Reason: r, PlatformCode: code, StatusCode: status}
	}
	return &im.SendError{Reason: im.ReasonClient, PlatformCode: code, StatusCode: status}
}

// classify turns a slack-go error into an *im.SendError with the token
// redacted from every text.
func classify(err error, token string) *im.SendError {
	var (
		rl  *slack.RateLimitedError
		sc  slack.StatusCodeError
		ser slack.SlackErrorResponse
	)
	var se *im.SendError
	switch {
	case errors.As(err, &rl):
		se = &im.SendError{Reason: im.ReasonRateLimited, Retryable: true, RetryAfter: rl.RetryAfter,
			StatusCode: http.StatusTooManyRequests, PlatformCode: "ratelimited"}
	case errors.As(err, &sc):
		se = im.ClassifyStatus(sc.Code, nil, nil)
		if se == nil {
			se = &im.SendError{Reason: im.ReasonServer, Retryable: true, StatusCode: sc.Code}
		}
	case errors.As(err, &ser):
		se = classifyCode(ser.Err, http.StatusOK)
		se.Response = `{"ok":false,"error":"` + jsonEscape(ser.Err) + `"}`
	default:
		se = transportError(err)
	}
	se.Err = errors.New(httppost.Redact(err.Error(), token))
	return se
}

// transportError classifies a failure slack-go reports without an answer
// through the shared classifier; anything else is an answer that would
// not decode: Slack answered, but not with JSON.
func transportError(err error) *im.SendError {
	var ne net.Error
	var ue *url.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) || errors.As(err, &ue) {
		return httppost.TransportError(err, "")
	}
	return &im.SendError{Reason: im.ReasonServer, Retryable: true}
}

func jsonEscape(s string) string {
	b, _ := json.Marshal(s)
	return strings.Trim(string(b), `"`)
}

func renderedJSON(posts []Post) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(posts)
	return strings.TrimSuffix(buf.String(), "\n")
}

// webhookPost is an incoming webhook's body: the summary with unfurling
// off, as in chat.postMessage.
type webhookPost struct {
	Post
	UnfurlLinks bool `json:"unfurl_links"`
	UnfurlMedia bool `json:"unfurl_media"`
}

// sendWebhook posts the summary to an incoming webhook. Webhooks answer
// in plain text ("ok", or an error code such as channel_not_found with a
// 4xx), so the body is read here rather than through slack-go.
func (c *Channel) sendWebhook(ctx context.Context, msg im.Message) (im.Receipt, error) {
	hookURL, err := httppost.ReadAtSend("webhook_url", c.cfg.WebhookURLEnv, c.cfg.WebhookURLFile, c.baseDir)
	if err != nil {
		return im.Receipt{}, err
	}
	if err := httppost.CheckURL("webhook_url", hookURL); err != nil {
		return im.Receipt{}, &im.SendError{Reason: im.ReasonClient, Err: err}
	}
	rep := im.BuildReport(msg)
	mention := ""
	if rep.Author != nil && rep.Author.SlackID != "" {
		mention = "<@" + Escape(rep.Author.SlackID) + ">"
	}
	post := RenderSummary(rep, mention, true)
	if rep.Kind == im.KindResolution {
		// A webhook cannot edit or thread: the follow-up names the
		// earlier reports and what was resolved of them.
		post = RenderResolution(rep, rep.Followups)
	}
	body, err := httppost.Encode(webhookPost{Post: post})
	if err != nil {
		return im.Receipt{}, &im.SendError{Reason: im.ReasonClient, Err: err}
	}
	if err := im.Pace(ctx); err != nil {
		return im.Receipt{}, &im.SendError{Reason: im.ReasonTimeout, Retryable: true, Err: err}
	}
	resp, err := httppost.Post(ctx, c.client, httppost.Request{URL: hookURL, Body: body,
		ContentType: "application/json"})
	if err != nil {
		var se *im.SendError
		if errors.As(err, &se) && resp.Status != 0 {
			// Webhooks answer in plain text: the body is the error code.
			code := strings.TrimSpace(string(resp.Body))
			if r, ok := permanentCodes[code]; ok && !se.Retryable {
				se.Reason = r
			}
			if len(code) < 64 && !strings.ContainsAny(code, " <{") {
				se.PlatformCode = code
			}
		}
		return im.Receipt{}, err
	}
	return im.Receipt{Rendered: string(body), Parts: 1, StatusCode: resp.Status,
		Response: resp.Excerpt(httppost.Secrets(hookURL)...)}, nil
}

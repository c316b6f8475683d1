// Package socket receives the clicks on the findings' buttons in Slack
// reports over Socket Mode and applies them to the findings: Slack sends
// each click (a block_actions interaction) down a websocket the daemon
// opened with the app-level token, so no public URL is needed.
//
// One connection per app token (Run), started by the daemon as a job of
// its config generation: it reads the token at every connect (a rotated
// token needs no restart), reconnects with backoff when the connection
// drops or Slack asks for a refresh, acknowledges every envelope at once
// (Slack re-delivers unacknowledged ones), applies each click once
// (envelope ids and click ids remembered across reconnects) as the
// person who clicked, and answers that person with an ephemeral message
// saying what was done and how to undo it.
package socket

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/im"
	aicrslack "github.com/aicr-dev/aicr/im/slack"
	"github.com/aicr-dev/aicr/secret"
	"github.com/aicr-dev/aicr/weblink"
)

// Store is what the clicks need of the findings store (findings.Store).
type Store interface {
	GetFinding(ctx context.Context, id int64) (findings.Finding, error)
	ActOnFinding(ctx context.Context, id int64, act findings.Act) (findings.Finding, error)
}

// App is one Slack app's connection: the channels that share its
// app-level token, and the bot tokens to answer with.
type App struct {
	// Channels names the [[channel]] tables sharing the token, for logs.
	Channels []string
	Token    secret.Ref
	// APIURL is the Web API base (the channels' api_url), ending in "/".
	APIURL string
	// Bots answer the person who clicked, with the bot token of the
	// channel that posts to the conversation clicked in (else the first).
	Bots []Bot
}

// Bot is one channel's bot token and conversation (an id or #name).
type Bot struct {
	Conversation string
	Token        secret.Ref
}

// Options are what every connection shares.
type Options struct {
	Store Store
	// Users maps the person who clicked (slack_id) to a VCS user.
	Users []im.Identity
	// Links signs the undo link to the finding's web page; the zero
	// Signer offers the Reopen button alone.
	Links  weblink.Signer
	Logger *slog.Logger
	Now    func() time.Time
	// Counted is told of every action applied (the metrics).
	Counted func(findings.Action, findings.Via)
	// MinBackoff and MaxBackoff bound the wait between failed connects
	// (defaults 1s and 5m).
	MinBackoff, MaxBackoff time.Duration
	// PingInterval is how long a connection may go without Slack's
	// ping before it is taken for dead (default slack-go's 30s).
	PingInterval time.Duration
	HTTPClient   *http.Client
}

// maxFrame bounds one websocket message: a block_actions payload is a
// few kilobytes; a bigger frame closes the connection (and reconnects)
// rather than filling memory.
const maxFrame = 1 << 20

// actTimeout bounds applying one click and answering it. It runs past
// the job's end, so a stop lets the click in hand finish.
const actTimeout = 10 * time.Second

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = time.Second
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(5*time.Minute, o.MinBackoff)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if o.Counted == nil {
		o.Counted = func(findings.Action, findings.Via) {}
	}
	return o
}

// Run keeps app's connection until ctx ends, reconnecting with backoff.
// It returns when ctx ends, once the click in hand is applied.
func Run(ctx context.Context, app App, opts Options) {
	r := newRunner(app, opts.withDefaults())
	done := make(chan struct{})
	go func() { defer close(done); r.work(ctx) }()
	r.connectLoop(ctx)
	close(r.jobs)
	<-done
}

// connectLoop runs one session after another. The end of a connection
// that was open is a refresh or a network loss: reconnect at once, unless
// the one before also ended quickly. Failures to connect back off
// exponentially, with jitter, up to MaxBackoff.
func (r *runner) connectLoop(ctx context.Context) {
	var delay time.Duration
	quick := 0 // connections in a row that ended before stableFor
	for {
		if delay > 0 && !sleep(ctx, delay) {
			return
		}
		if ctx.Err() != nil {
			return
		}
		lived, err := r.session(ctx)
		if ctx.Err() != nil {
			return
		}
		switch {
		case lived >= stableFor:
			quick = 0
		case lived > 0:
			quick++
		}
		switch {
		case lived > 0 && quick <= 1:
			delay = 0
		case delay == 0:
			delay = r.opts.MinBackoff
		default:
			delay = min(2*delay, r.opts.MaxBackoff)
		}
		delay = jitter(delay)
		if lived > 0 {
			r.log.Info("slack socket mode: the connection closed; reconnecting", "connected_for", lived.Round(time.Millisecond).String(),
				"retry_in", delay.Round(time.Millisecond).String())
			continue
		}
		r.connectFailed(err, delay)
	}
}

// stableFor is how long a connection must last for the next quick end
// to be taken for a refresh again (reconnect at once), not a failure
// (back off).
const stableFor = 5 * time.Second

func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d - d/5 + rand.N(d/5*2+1)
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// connectFailed logs why the connection ended, at ERROR when the reason
// changed and at DEBUG while it repeats, so a wrong token fills no log.
func (r *runner) connectFailed(err error, delay time.Duration) {
	if err == nil {
		return
	}
	msg := err.Error()
	log := r.log.Debug
	if msg != r.lastErr {
		log = r.log.Error
	}
	r.lastErr = msg
	log("slack socket mode: not connected; retrying", "err", msg, "retry_in", delay.Round(time.Millisecond).String())
}

// errDropped is a connection that ended after it was open: a refresh
// (Slack's disconnect), a network loss, a missed ping.
var errDropped = errors.New("the connection closed")

// session reads the token, connects once and serves the connection
// until it ends; it returns how long it was connected.
func (r *runner) session(ctx context.Context) (lived time.Duration, err error) {
	tok, err := r.app.Token.Read()
	if err != nil {
		return 0, fmt.Errorf("app_token: %w", err)
	}
	if err := aicrslack.CheckAppToken(tok.Reveal()); err != nil {
		return 0, err
	}
	api := slack.New("", slack.OptionAppLevelToken(tok.Reveal()), slack.OptionAPIURL(r.app.APIURL),
		slack.OptionHTTPClient(r.opts.HTTPClient))
	smOpts := []socketmode.Option{socketmode.OptionReadLimit(maxFrame),
		socketmode.OptionLog(log.New(discard{}, "", 0))}
	if r.opts.PingInterval > 0 {
		smOpts = append(smOpts, socketmode.OptionPingInterval(r.opts.PingInterval))
	}
	sm := socketmode.New(api, smOpts...)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- sm.RunContext(sctx) }()
	var connectedAt time.Time
	var stopErr error
	for {
		select {
		case err := <-runErr:
			if !connectedAt.IsZero() {
				lived = time.Since(connectedAt)
			}
			if stopErr == nil && err != nil && !errors.Is(err, context.Canceled) {
				stopErr = explain(err)
			}
			if stopErr != nil {
				stopErr = errors.New(secret.Scrub(stopErr.Error(), tok.Reveal()))
			}
			return lived, stopErr
		case ev := <-sm.Events:
			if stop, err := r.event(sctx, sm, ev, &connectedAt); stop && stopErr == nil {
				stopErr = err
				cancel()
			}
		}
	}
}

// event handles one event of the client; stop ends the session (the
// connection failed or dropped: the next one reads the token afresh).
func (r *runner) event(ctx context.Context, sm *socketmode.Client, ev socketmode.Event, connectedAt *time.Time) (stop bool, err error) {
	switch ev.Type {
	case socketmode.EventTypeConnecting:
		if c, ok := ev.Data.(*slack.ConnectingEvent); ok && (c.ConnectionCount > 0 || c.Attempt > 1) {
			return true, errDropped
		}
	case socketmode.EventTypeConnectionError:
		if c, ok := ev.Data.(*slack.ConnectionErrorEvent); ok && c.ErrorObj != nil {
			return true, explain(c.ErrorObj)
		}
		return true, errors.New("connect failed")
	case socketmode.EventTypeInvalidAuth:
		return true, errors.New("apps.connections.open answered 404: check api_url and the app-level token")
	case socketmode.EventTypeConnected:
		switch {
		case r.connects == 0:
			r.log.Info("slack socket mode connected: the findings' buttons work")
		case r.lastErr != "":
			r.log.Info("slack socket mode connected again", "after", r.lastErr)
		default:
			r.log.Debug("slack socket mode reconnected", "connects", r.connects+1)
		}
		r.connects++
		r.lastErr = ""
		*connectedAt = time.Now()
	case socketmode.EventTypeHello:
		if ev.Request != nil {
			r.log.Debug("slack socket mode hello", "num_connections", ev.Request.NumConnections)
		}
	case socketmode.EventTypeInteractive:
		r.interactive(ctx, sm, ev)
	case socketmode.EventTypeEventsAPI, socketmode.EventTypeSlashCommand:
		// Not aicr's to handle, but acked so Slack does not resend it.
		if ev.Request != nil {
			_ = sm.AckCtx(ctx, ev.Request.EnvelopeID, nil)
		}
		r.log.Debug("slack socket mode: ignored an event aicr does not subscribe to", "type", string(ev.Type))
	case socketmode.EventTypeErrorBadMessage:
		r.badMessage(ctx, sm, ev)
	case socketmode.EventTypeIncomingError:
		// A read that failed: the connection is ending, and its end is
		// logged with the reconnect.
		r.log.Debug("slack socket mode: websocket read failed", "err", fmt.Sprint(ev.Data))
	case socketmode.EventTypeErrorWriteFailed:
		r.warn("slack socket mode: could not write to the websocket; Slack will re-send what was not acked", "err", fmt.Sprint(ev.Data))
	}
	return false, nil
}

// explain adds what to do to Slack's answers that need an operator.
func explain(err error) error {
	var ser slack.SlackErrorResponse
	if !errors.As(err, &ser) {
		return err
	}
	switch ser.Err {
	case "not_allowed_token_type":
		return fmt.Errorf("apps.connections.open: %s: app_token must be an app-level token (xapp-…)", ser.Err)
	case "invalid_auth", "not_authed", "token_revoked", "account_inactive":
		return fmt.Errorf("apps.connections.open: %s: the app-level token was refused: check app_token_env/app_token_file", ser.Err)
	case "missing_scope":
		return fmt.Errorf("apps.connections.open: %s: give the app-level token the connections:write scope", ser.Err)
	}
	return fmt.Errorf("apps.connections.open: %w", err)
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// clip bounds text from a payload for a log line.
func clip(s string) string {
	const n = 64
	if len(s) <= n {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q…(%d bytes)", strings.ToValidUTF8(s[:n], ""), len(s))
}

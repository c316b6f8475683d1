package socket

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
	"golang.org/x/time/rate"

	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/im"
	aicrslack "github.com/aicr-dev/aicr/im/slack"
)

// runner is one app's connection loop and the worker that applies its
// clicks. The event loop acknowledges at once and queues; the worker
// applies, so a slow store delays no ack.
type runner struct {
	app  App
	opts Options
	log  *slog.Logger
	jobs chan click
	seen *seenSet

	// connection loop only
	lastErr  string
	connects int

	// warnings about hostile or broken payloads, at most a burst of 10
	// then one a minute, so a flood cannot fill the log. The event loop
	// and the worker both warn.
	warnMu     sync.Mutex
	warnings   *rate.Limiter
	suppressed int
}

// click is one interaction to apply.
type click struct {
	cb       slack.InteractionCallback
	envelope string
}

// maxActions bounds the actions read from one payload: a button click
// carries one.
const maxActions = 5

func newRunner(app App, opts Options) *runner {
	return &runner{app: app, opts: opts,
		log:      opts.Logger.With("component", "slack-socket", "channels", strings.Join(app.Channels, ",")),
		jobs:     make(chan click, 64),
		seen:     newSeenSet(4096),
		warnings: rate.NewLimiter(rate.Every(time.Minute), 10)}
}

// warn logs a problem with what Slack sent, bounded.
func (r *runner) warn(msg string, args ...any) {
	r.warnMu.Lock()
	defer r.warnMu.Unlock()
	if !r.warnings.Allow() {
		r.suppressed++
		return
	}
	if r.suppressed > 0 {
		args = append(args, "suppressed_since_last", r.suppressed)
		r.suppressed = 0
	}
	r.log.Warn(msg, args...)
}

// interactive acknowledges an interactive envelope and queues its click,
// once per envelope id: Slack re-delivers an envelope whose ack it did
// not get, with the same id.
func (r *runner) interactive(ctx context.Context, sm *socketmode.Client, ev socketmode.Event) {
	if ev.Request == nil {
		return
	}
	env := ev.Request.EnvelopeID
	if err := sm.AckCtx(ctx, env, nil); err != nil {
		r.warn("slack socket mode: could not acknowledge an envelope; Slack will send it again", "envelope_id", clip(env), "err", err.Error())
	}
	cb, ok := ev.Data.(slack.InteractionCallback)
	if !ok {
		return
	}
	if env == "" || !r.seen.add("envelope:"+env) {
		r.log.Debug("slack socket mode: envelope seen before; not applied again", "envelope_id", clip(env),
			"retry_attempt", ev.Request.RetryAttempt, "retry_reason", clip(ev.Request.RetryReason))
		return
	}
	select {
	case r.jobs <- click{cb: cb, envelope: env}:
	case <-ctx.Done():
		r.log.Warn("slack socket mode: stopping; a click was acknowledged but not applied", "envelope_id", clip(env))
	}
}

// badMessage is a websocket message the client could not read (a
// payload that is not an interaction): acked when it names an envelope,
// so Slack does not resend what will never parse.
func (r *runner) badMessage(ctx context.Context, sm *socketmode.Client, ev socketmode.Event) {
	bad, ok := ev.Data.(*socketmode.ErrorBadMessage)
	if !ok {
		return
	}
	var env struct {
		EnvelopeID string `json:"envelope_id"`
	}
	if json.Unmarshal(bad.Message, &env) == nil && env.EnvelopeID != "" {
		_ = sm.AckCtx(ctx, env.EnvelopeID, nil)
	}
	r.warn("slack socket mode: ignored a message that does not parse", "envelope_id", clip(env.EnvelopeID),
		"bytes", len(bad.Message), "err", clip(bad.Cause.Error()))
}

// work applies queued clicks until the queue closes. A click is applied
// under its own deadline, not the job's context: acked, it will not come
// again, so a stop lets it finish; what is still queued then is logged.
func (r *runner) work(ctx context.Context) {
	for c := range r.jobs {
		if ctx.Err() != nil {
			r.log.Warn("slack socket mode: stopping; a click was acknowledged but not applied: the user can click again",
				"user", clip(c.cb.User.ID), "envelope_id", clip(c.envelope))
			continue
		}
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), actTimeout)
		r.apply(actx, c.cb)
		cancel()
	}
}

var slackUserID = regexp.MustCompile(`^[UW][A-Z0-9]{2,20}$`)

// apply applies every aicr button in one block_actions payload.
func (r *runner) apply(ctx context.Context, cb slack.InteractionCallback) {
	if cb.Type != slack.InteractionTypeBlockActions {
		r.log.Debug("slack socket mode: ignored an interaction that is not a button", "type", clip(string(cb.Type)))
		return
	}
	if !slackUserID.MatchString(cb.User.ID) {
		r.warn("slack socket mode: ignored a click without a Slack user id", "user", clip(cb.User.ID))
		return
	}
	if n := len(cb.ActionCallback.AttachmentActions); n > 0 {
		r.warn("slack socket mode: ignored actions without a block_id (not aicr's buttons)", "count", n)
	}
	acts := cb.ActionCallback.BlockActions
	if len(acts) > maxActions {
		r.warn("slack socket mode: a payload with too many actions; only the first are read", "count", len(acts), "read", maxActions)
		acts = acts[:maxActions]
	}
	who := actor(cb.User, r.opts.Users)
	for _, a := range acts {
		id, name, ok := aicrslack.ParseAction(a.ActionID, a.Value)
		action := findings.Action(name)
		if !ok || !action.Valid() {
			r.warn("slack socket mode: ignored a button aicr did not make", "action_id", clip(a.ActionID),
				"value", clip(a.Value), "user", clip(cb.User.ID))
			continue
		}
		// A click re-sent in a new envelope still has its trigger id.
		if cb.TriggerID != "" && !r.seen.add("click:"+cb.TriggerID+"/"+a.ActionTs+"/"+a.ActionID+"/"+a.Value) {
			r.log.Debug("slack socket mode: click seen before; not applied again", "finding", id, "action", name)
			continue
		}
		out := r.act(ctx, id, action, who)
		r.answer(ctx, cb, out)
	}
}

// outcome is what one click did, for the answer.
type outcome struct {
	id      int64
	action  findings.Action
	finding findings.Finding // after the action, or as it stands
	known   bool             // finding holds the finding
	err     error            // nil, findings.ErrNotFound, findings.ErrConflict or the store's
}

// act applies one action as who.
func (r *runner) act(ctx context.Context, id int64, action findings.Action, who string) outcome {
	out := outcome{id: id, action: action}
	f, err := r.opts.Store.ActOnFinding(ctx, id, findings.Act{Action: action, Actor: who, Via: findings.ViaSlack, At: r.opts.Now()})
	switch {
	case err == nil:
		out.finding, out.known = f, true
		r.opts.Counted(action, findings.ViaSlack)
		r.log.Info("finding action from slack", "finding", id, "action", string(action), "actor", who, "state", string(f.State))
	case errors.Is(err, findings.ErrConflict):
		out.err = findings.ErrConflict
		if cur, gerr := r.opts.Store.GetFinding(ctx, id); gerr == nil {
			out.finding, out.known = cur, true
		}
		r.log.Info("finding action from slack did not apply to its state; nothing changed", "finding", id, "action", string(action),
			"actor", who, "state", string(out.finding.State))
	case errors.Is(err, findings.ErrNotFound):
		out.err = findings.ErrNotFound
		r.warn("slack socket mode: a click on a finding aicr does not have; nothing changed", "finding", id, "actor", who)
	default:
		out.err = err
		r.log.Error("finding action from slack not recorded", "finding", id, "action", string(action), "actor", who, "err", err)
	}
	return out
}

// actor names the person who clicked in the finding's history:
// "slack:<user id>" with the name Slack gives, behind the VCS user of the
// [[user]] whose slack_id it is when there is one.
func actor(u slack.User, users []im.Identity) string {
	id := "slack:" + u.ID
	name := cleanName(u.Username)
	if name == "" {
		name = cleanName(u.Name)
	}
	if name != "" {
		id += " " + name
	}
	for _, who := range users {
		if who.SlackID == u.ID && who.VCSUser != "" {
			return who.VCSUser + " (" + id + ")"
		}
	}
	if name != "" {
		return "slack:" + u.ID + " (" + name + ")"
	}
	return id
}

// cleanName keeps a Slack name to letters, digits and a little
// punctuation, at most 40 runes: people choose their names, and the
// actor is shown on the web page, in the CLI and in reports.
func cleanName(s string) string {
	var b strings.Builder
	n := 0
	for _, c := range s {
		if n == 40 {
			break
		}
		if unicode.IsLetter(c) || unicode.IsDigit(c) || strings.ContainsRune(".-_' ", c) {
			b.WriteRune(c)
			n++
		}
	}
	return strings.TrimSpace(b.String())
}

// seenSet remembers the last n keys (envelope and click ids). The event
// loop and the worker both add to it.
type seenSet struct {
	mu   sync.Mutex
	keys map[string]bool
	ring []string
	next int
}

func newSeenSet(n int) *seenSet { return &seenSet{keys: map[string]bool{}, ring: make([]string, n)} }

// add records key and reports whether it is new.
func (s *seenSet) add(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys[key] {
		return false
	}
	if old := s.ring[s.next]; old != "" {
		delete(s.keys, old)
	}
	s.ring[s.next] = key
	s.next = (s.next + 1) % len(s.ring)
	s.keys[key] = true
	return true
}

package im

import (
	"context"
	"fmt"
	"time"
)

type pacerKey struct{}

// WithPacer returns ctx carrying the dispatcher's per-destination pacer.
// A nil wait returns ctx unchanged.
func WithPacer(ctx context.Context, wait func(context.Context) error) context.Context {
	if wait == nil {
		return ctx
	}
	return context.WithValue(ctx, pacerKey{}, wait)
}

// Pace waits on the pacer in ctx before each platform request; no pacer:
// returns nil at once. Channels that make several requests per Send
// (Slack: summary, then thread parts) call it before every request, so the
// dispatcher's bucket — not the channel — keeps them within the platform's
// limit. The dispatcher has already taken the token for the first request
// of a Send, so single-request channels need not call it.
func Pace(ctx context.Context) error {
	if wait, ok := ctx.Value(pacerKey{}).(func(context.Context) error); ok {
		return wait(ctx)
	}
	return nil
}

// RateWait is the error of a wait for a rate-limit token that did not
// end with a token: the context ended, or its deadline comes before the
// token. Nothing was sent for it, so it is not a failed delivery; the
// destination's next token is free after Delay.
type RateWait struct {
	Delay time.Duration
	Err   error
}

func (e *RateWait) Error() string {
	return fmt.Sprintf("wait for rate limit (next token in %s): %v", e.Delay.Round(time.Millisecond), e.Err)
}

func (e *RateWait) Unwrap() error { return e.Err }

type progressKey struct{}

// WithProgress returns ctx carrying the dispatcher's record of delivered
// parts. A nil record returns ctx unchanged.
func WithProgress(ctx context.Context, record func(parts int, messageID string)) context.Context {
	if record == nil {
		return ctx
	}
	return context.WithValue(ctx, progressKey{}, record)
}

// Delivered tells the dispatcher that the platform accepted the first
// parts parts of a multi-part Send (messageID: the platform's id of the
// first one, Slack's ts, when the rest refer to it). Channels call it as
// each part is accepted, before the next is sent, so a process killed
// between parts resumes after them instead of sending them again. No
// record in ctx: it does nothing.
func Delivered(ctx context.Context, parts int, messageID string) {
	if record, ok := ctx.Value(progressKey{}).(func(int, string)); ok {
		record(parts, messageID)
	}
}

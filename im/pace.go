package im

import "context"

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

package im

import "context"

// pacerKey carries the dispatcher's wait function in a context.
type pacerKey struct{}

// WithPacer returns a context whose Pace calls wait. The dispatcher owns
// the token buckets; a channel that makes several platform requests in
// one Send (Slack's summary and thread replies, split reports) calls Pace
// before each so every request, not just every Send, is paced.
func WithPacer(ctx context.Context, wait func(context.Context) error) context.Context {
	return context.WithValue(ctx, pacerKey{}, wait)
}

// Pace waits for the pacer in ctx; with none it returns nil at once.
func Pace(ctx context.Context) error {
	wait, _ := ctx.Value(pacerKey{}).(func(context.Context) error)
	if wait == nil {
		return nil
	}
	return wait(ctx)
}

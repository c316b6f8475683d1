// Package console is the channel that prints reports to the daemon's
// standard output: useful for trying aicr out and for tests of the
// pipeline, where a real chat platform would be in the way.
package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/aicr-dev/aicr/im"
)

// KindName is the value of `kind` that selects this channel.
const KindName = "console"

// Config is the console-specific part of a [[channel]] table: there is
// nothing to configure.
type Config struct{}

// Validate always succeeds.
func (c *Config) Validate() error { return nil }

// Build returns the console channel writing to deps.Stdout.
func (c *Config) Build(common im.ChannelConfig, deps im.Deps) (im.Channel, error) {
	return New(common.Name, deps.Stdout)
}

// Channel writes one plain-text report per message.
type Channel struct {
	name string
	mu   sync.Mutex
	out  io.Writer
}

var _ im.Channel = (*Channel)(nil)

// New returns a console channel named name that writes to out.
func New(name string, out io.Writer) (*Channel, error) {
	if out == nil {
		return nil, errors.New("console channel: no stdout")
	}
	return &Channel{name: name, out: out}, nil
}

func (c *Channel) Name() string { return c.name }
func (c *Channel) Kind() string { return KindName }

// Send writes the report followed by a blank line. Workers send
// concurrently, so each report goes out in a single locked Write to keep
// reports from interleaving.
func (c *Channel) Send(ctx context.Context, msg im.Message) (im.Receipt, error) {
	if err := ctx.Err(); err != nil {
		return im.Receipt{}, err
	}
	text := im.RenderText(msg) + "\n"
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := io.WriteString(c.out, text); err != nil {
		return im.Receipt{}, fmt.Errorf("write report: %w", err)
	}
	return im.Receipt{Rendered: text, Parts: 1}, nil
}

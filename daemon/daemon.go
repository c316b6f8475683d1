// Package daemon is the long-running half of aicr: it loads the config,
// accepts signed events from hooks, queues them durably, drains spool
// directories, and runs each queued review through the pipeline. Build is
// the composition root every process (the daemon's Serve, the CLI) wires
// its parts with.
package daemon

import (
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/aicr-dev/aicr/config"
)

// ErrDataDirLocked means another daemon is running on the same data_dir.
var ErrDataDirLocked = errors.New("data_dir is locked")

// maxInterruptions is how many attempts of a run may end with the daemon
// stopping before the run is failed instead of resumed again.
const maxInterruptions = 3

// Options are what the process hands the daemon; main only adapts the OS.
type Options struct {
	Config *config.Config
	Logger *slog.Logger
	Stdout io.Writer
	// Ready, when set, receives the bound listen address once the intake
	// accepts connections (tests listen on port 0).
	Ready func(addr string)
	Now   func() time.Time
	// IdlePoll is how often idle workers look for work queued by another
	// process (e.g. `aicr review`); default 2s.
	IdlePoll time.Duration
	// LeaseTTL is how long a worker's claim on a run holds without
	// renewal; default audit.DefaultLeaseTTL.
	LeaseTTL time.Duration
	// SweepEvery is how often running runs whose lease ran out (a worker
	// that could not record its outcome, a dead `aicr review`) are put
	// back in the queue; default 30s.
	SweepEvery time.Duration
	// WatchEvery is how often the audit database file is checked to still
	// be the one the daemon has open; default 10s.
	WatchEvery time.Duration
	// Version is the aicr version, logged at start and reported by
	// /healthz, /metrics and the probe.
	Version string
	// config.Digest is the sha256 of the config file's bytes Config was
	// parsed from; empty reads the file again.
	ConfigDigest string
	// Reload, when it delivers, re-reads the config file (SIGHUP).
	Reload <-chan struct{}
	// Abort, when it delivers during the draining stop, cuts the reviews
	// in flight short at once (a second SIGTERM or Ctrl-C).
	Abort <-chan struct{}
}

func (o Options) withDefaults() Options {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.IdlePoll == 0 {
		o.IdlePoll = 2 * time.Second
	}
	if o.SweepEvery == 0 {
		o.SweepEvery = 30 * time.Second
	}
	if o.WatchEvery == 0 {
		o.WatchEvery = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	return o
}

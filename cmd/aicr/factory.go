package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/triggers"
)

// IOStreams is where commands read and write; tests pass buffers. Data
// goes to Out, status and logs to ErrOut.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// ErrIsTerminal selects human-readable logs over JSON.
	ErrIsTerminal bool
}

// SystemIO is the process's real streams.
func SystemIO() *IOStreams {
	return &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr, ErrIsTerminal: isTerminal(os.Stderr)}
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Factory hands commands what they depend on, so a test can build one
// over temp dirs and buffers. Each Execute builds a fresh one.
type Factory struct {
	IOStreams *IOStreams
	// ConfigPath is what --config said (addConfigFlag binds it), else
	// triggers.ConfigPath().
	ConfigPath string
	// Now is the clock commands stamp events and read durations with.
	Now func() time.Time
	// Executable is the aicr binary hooks and agents should run.
	Executable func() (string, error)

	cfg    *config.Config
	cfgErr error
	loaded bool
}

// NewFactory is the factory of a real process.
func NewFactory(ios *IOStreams) *Factory {
	return &Factory{IOStreams: ios, ConfigPath: triggers.ConfigPath(), Now: time.Now, Executable: os.Executable}
}

// Config loads the config at ConfigPath once; a config that does not load
// is a usage error (exit 2): nothing ran.
func (f *Factory) Config() (*config.Config, error) {
	if !f.loaded {
		f.cfg, f.cfgErr = loadConfigFile(f.ConfigPath)
		f.loaded = true
	}
	return f.cfg, f.cfgErr
}

func loadConfigFile(path string) (*config.Config, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, asUsage(err)
	}
	return cfg, nil
}

// RequireDataDirOwner refuses to go on when this process is not the
// data_dir's owner: see checkDataDirOwner.
func (f *Factory) RequireDataDirOwner() (*config.Config, error) {
	cfg, err := f.Config()
	if err != nil {
		return nil, err
	}
	if err := checkDataDirOwner(cfg.Daemon.DataDir); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Store opens the audit database read-write (creating it when needed),
// for commands that change the queue or the trail. It refuses when this
// process is not the data_dir's owner.
func (f *Factory) Store(ctx context.Context) (*audit.Store, error) {
	cfg, err := f.RequireDataDirOwner()
	if err != nil {
		return nil, err
	}
	store, err := config.OpenStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	store.SetClock(f.Now)
	return store, nil
}

// ReadOnlyStore opens the audit database for reading only. It never
// creates the database: run as root on a fresh data_dir, a listing must
// not leave a root-owned aicr.db the daemon then cannot open.
func (f *Factory) ReadOnlyStore(ctx context.Context) (*audit.Store, error) {
	cfg, err := f.Config()
	if err != nil {
		return nil, err
	}
	// audit.ErrNoDatabase says the daemon has not run yet; exit 1.
	return config.OpenStoreReadOnly(ctx, cfg)
}

// Logger logs to ErrOut: JSON unless it is a terminal.
// VerbLogger is the logger of a command a person runs (review, channel
// test, dispatch retry, session): plain "level=WARN msg=..." lines on
// stderr, even when stderr is not a terminal, so no JSON log line lands
// among the verb's human output. The daemon logs JSON (Logger).
func (f *Factory) VerbLogger(level slog.Level) *slog.Logger {
	return verbLoggerTo(f.IOStreams.ErrOut, level)
}

// verbLoggerTo is VerbLogger's logger writing to w.
func verbLoggerTo(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
}

func (f *Factory) Logger(level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if f.IOStreams.ErrIsTerminal {
		return slog.New(slog.NewTextHandler(f.IOStreams.ErrOut, opts))
	}
	return slog.New(slog.NewJSONHandler(f.IOStreams.ErrOut, opts))
}

package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/web"
)

// webStopGrace bounds how long the stop waits for pages being served.
const webStopGrace = 5 * time.Second

// listenWeb opens [web] listen, like the intake's, before anything starts
// in the background, so a port that is taken ends the start with the
// reason; nil when the page is off. A reload does not move it: listen
// changes need a restart, as the intake's do.
func listenWeb(ctx context.Context, cfg *config.Config) (net.Listener, error) {
	if !cfg.Web.Enabled() {
		return nil, nil
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.Web.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen on [web] listen %s: %w (change [web] listen, or remove it to turn the page off)", cfg.Web.Listen, err)
	}
	return ln, nil
}

// startWeb serves the web page on ln with the start's [web] config (a
// reload keeps it); stop shuts the server down. A nil ln serves nothing.
func startWeb(cfg *config.Config, store *audit.Store, ln net.Listener, log *slog.Logger, now func() time.Time) (stop func(context.Context), err error) {
	if ln == nil {
		return func(context.Context) {}, nil
	}
	signer, err := cfg.Web.LinkSigner(cfg.Daemon.DataDir)
	if err != nil {
		return nil, err
	}
	opts := web.Options{Store: store, Config: cfg.Web, Signer: signer, Logger: log, Now: now}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	h := web.New(opts)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute, MaxHeaderBytes: 64 << 10}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("web page server stopped; the daemon runs on without it", "listen", cfg.Web.Listen, "err", err)
		}
	}()
	log.Info("web page serving", "listen", ln.Addr().String(), "base_url", cfg.Web.BaseURL, "auth", cfg.Web.Auth)
	return func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), webStopGrace)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}

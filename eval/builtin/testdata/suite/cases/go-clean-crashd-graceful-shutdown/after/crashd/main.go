package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"example.com/studio/crashd/ingest"
)

func main() {
	addr := flag.String("addr", ":9100", "listen address")
	dir := flag.String("dir", "/srv/crashd/dumps", "where minidumps are stored")
	maxMB := flag.Int("max-mb", 64, "largest accepted minidump in MiB")
	flag.Parse()

	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if err := run(logger, *addr, *dir, int64(*maxMB)<<20); err != nil {
		logger.Error("crashd stopped", "err", err)
		os.Exit(1)
	}
}

// run serves until SIGINT or SIGTERM, then gives uploads in flight up to
// 30 seconds to finish so a redeploy does not cut off a dump mid-write.
func run(logger *slog.Logger, addr, dir string, maxBytes int64) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("create dump dir: %w", err)
	}
	srv := &http.Server{
		Addr:              addr,
		Handler:           &ingest.Handler{Dir: dir, MaxBytes: maxBytes},
		ReadHeaderTimeout: 10 * time.Second,
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	errc := make(chan error, 1)
	go func() {
		logger.Info("listening", "addr", addr, "dir", dir)
		errc <- srv.ListenAndServe()
	}()

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

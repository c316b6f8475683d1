//go:build unix

package session

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/aicr-dev/aicr/audit"
)

// DetachedStarter starts `BINARY session run-round` for each round in a
// session of its own, with its output in the round's log file, so the
// round outlives the MCP server or CLI that asked for it.
func DetachedStarter(binary, configPath, dataDir string) Starter {
	return func(ctx context.Context, id int64, round int) error {
		dir := filepath.Join(dataDir, "sessions", strconv.FormatInt(id, 10))
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return err
		}
		logPath := filepath.Join(dir, "round-"+strconv.Itoa(round)+".log")
		logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
		if err != nil {
			return err
		}
		defer logf.Close()
		devnull, err := os.Open(os.DevNull)
		if err != nil {
			return err
		}
		defer devnull.Close()
		// Not CommandContext: the round must outlive this call's context.
		cmd := exec.Command(binary, "session", "run-round", "--config", configPath, //nolint:noctx // the round must outlive this call's context
			"--session", FormatID(id), "--round", strconv.Itoa(round))
		cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("start %s session run-round: %w", binary, err)
		}
		// Reap it when it ends while this process lives; after that, init does.
		go func() { _ = cmd.Wait() }()
		return nil
	}
}

// stopWorker stops the process group of a round's worker on this host
// (it leads its own session); elsewhere the worker notices at its next
// lease renewal.
func stopWorker(r audit.SessionRound, host string) {
	if r.LeasePID > 0 && r.LeaseHost == host {
		_ = syscall.Kill(-r.LeasePID, syscall.SIGTERM)
	}
}

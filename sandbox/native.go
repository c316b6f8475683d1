package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// nativeRunner is kind "none": the operator's explicit choice to run the
// agent on the host. It keeps the env discipline and the timeout, not the
// confinement.
type nativeRunner struct{ cfg Config }

func (r *nativeRunner) Run(ctx context.Context, s Spec) (Result, error) {
	if err := s.validate(); err != nil {
		return Result{}, err
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = r.cfg.Podman.Timeout
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	for _, d := range xdgDirs {
		if err := os.MkdirAll(filepath.Join(s.AgentDir, d), 0o700); err != nil {
			return Result{}, fmt.Errorf("sandbox: agent dir: %w", err)
		}
	}
	stdout, err := openCapped(s.StdoutPath)
	if err != nil {
		return Result{}, err
	}
	defer stdout.Close()
	stderr, err := openCapped(s.StderrPath)
	if err != nil {
		return Result{}, err
	}
	defer stderr.Close()

	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, s.Args[0], s.Args[1:]...)
	cmd.Dir = s.AgentDir
	// Never os.Environ(): the daemon's environment holds its secrets.
	cmd.Env = append(append(homeEnv(s.AgentDir), s.Env...), s.SecretEnv...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	ownProcessGroup(cmd)
	// A child that forked its own children must take them along, and
	// pipes held open by a grandchild must not hang the wait.
	cmd.Cancel = func() error { return killProcessGroup(cmd) }
	cmd.WaitDelay = 5 * time.Second

	start := time.Now()
	err = cmd.Run()
	res := Result{Duration: time.Since(start), ExitCode: -1}
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	if errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		res.TimedOut = true
		return res, nil
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		return res, fmt.Errorf("sandbox: run %s: %w", s.Args[0], err)
	}
	return res, nil
}

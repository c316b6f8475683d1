package p4

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// isUnicode asks the server once whether it runs in unicode mode; such
// servers refuse clients that do not name a charset, and send text in it.
func (a *Adapter) isUnicode(ctx context.Context) (bool, error) {
	switch a.cfg.Charset {
	case "utf8":
		return true, nil
	case "none":
		return false, nil
	}
	a.mu.Lock()
	if a.unicode != nil {
		uni := *a.unicode
		a.mu.Unlock()
		return uni, nil
	}
	call := a.info
	if call == nil {
		// One p4 info for every concurrent first fetch. It runs for no
		// caller in particular, so that one caller giving up does not
		// fail the others; command_timeout bounds it.
		call = &infoCall{done: make(chan struct{})}
		a.info = call
		go a.askInfo(context.WithoutCancel(ctx), call)
	}
	a.mu.Unlock()
	// No lock is held while p4 runs: a caller waits no longer than its
	// own context allows, however long the server takes.
	select {
	case <-call.done:
		return call.unicode, call.err
	case <-ctx.Done():
		return false, fmt.Errorf("p4 info: %w", ctx.Err())
	}
}

// infoCall is the one p4 info in flight.
type infoCall struct {
	done    chan struct{}
	unicode bool
	err     error
}

// askInfo runs p4 -ztag info, publishes the answer to the callers waiting
// on call and caches it; a failure is not cached, the next fetch asks again.
func (a *Adapter) askInfo(ctx context.Context, call *infoCall) {
	call.unicode, call.err = a.runInfo(ctx)
	a.mu.Lock()
	if call.err == nil {
		uni := call.unicode
		a.unicode = &uni
	}
	a.info = nil
	a.mu.Unlock()
	close(call.done)
}

func (a *Adapter) runInfo(ctx context.Context) (bool, error) {
	// info is the one command a unicode server answers without -C.
	cmd, err := a.command(ctx, []string{"-ztag"}, "info")
	if err != nil {
		return false, err
	}
	defer cmd.cancel()
	var stderr boundedBuffer
	stderr.max = maxStderr
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if err := cmd.ended(); err != nil {
			return false, err
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return false, a.startError(err)
		}
		return false, a.authError(&cmdError{cmd: "info", msgs: []serverError{{msg: strings.TrimSpace(stderr.String()), severity: 3}}, err: err})
	}
	recs, _ := ParseZtag(out)
	if len(recs) == 0 {
		return false, fmt.Errorf("p4 info: no tagged output")
	}
	return recs[0].Get("unicode") == "enabled", nil
}

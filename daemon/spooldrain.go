package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/triggers"
)

// spoolDrainer moves events that hooks spooled on this host (because the
// daemon was down or unreachable) into the queue.
type spoolDrainer struct {
	cfg   *config.Config
	store *audit.Store
	log   *slog.Logger
	now   func() time.Time
	wake  func()
	// metrics is nil in tests that drain without a daemon.
	metrics *Metrics
}

// afterSpoolList, when set (by tests), runs between listing a spool and
// reading its files: where the hook's account can swap a file for a link.
var afterSpoolList func(dir string, names []string)

func (d *spoolDrainer) dirs() []string {
	seen := map[string]bool{}
	var out []string
	for _, dir := range append([]string{d.cfg.Notify.SpoolDir}, d.cfg.Daemon.SpoolDirs...) {
		if dir != "" && !seen[dir] {
			seen[dir] = true
			out = append(out, dir)
		}
	}
	return out
}

func (d *spoolDrainer) drainAll(ctx context.Context) {
	for _, dir := range d.dirs() {
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			continue
		}
		n, err := d.drain(ctx, triggers.Spool{Dir: dir})
		if err != nil {
			d.log.Error("drain spool", "dir", dir, "err", err)
		}
		if n > 0 {
			d.log.Info("drained spool", "dir", dir, "events", n)
			d.wake()
		}
	}
}

// drain enqueues every spooled event, oldest first. A file leaves the
// spool only after the queue has it, or when it is moved to rejected/ with
// its reason, so a crash mid-drain loses nothing. Files must carry a valid
// signature made with the shared secret; their age is not checked (a
// spooled event may be hours old) and de-duplication by (repo, revision)
// makes a second delivery harmless.
func (d *spoolDrainer) drain(ctx context.Context, sp triggers.Spool) (int, error) {
	names, err := sp.List()
	if err != nil {
		return 0, err
	}
	if afterSpoolList != nil {
		afterSpoolList(sp.Dir, names)
	}
	if len(names) == 0 {
		return 0, nil
	}
	if sp.Secret == nil {
		secret, err := d.cfg.DaemonSecret()
		if err != nil {
			return 0, fmt.Errorf("cannot verify spooled events without the secret: %w", err)
		}
		sp.Secret = secret
	}
	n := 0
	for _, name := range names {
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
		ev, spooledAt, err := sp.Read(name)
		var bad *triggers.RejectedFileError
		if errors.As(err, &bad) {
			// Read moved it to rejected/; the audit trail names it (size
			// and hash) but keeps none of it: a file that fails the
			// signature may be a link to a daemon-only file, and the
			// rejected rows are for readers the secrets are not.
			if _, rerr := d.store.RecordRejectedEvent(ctx, audit.RejectedEvent{ReceivedAt: d.now(), Reason: "spool " + sp.Dir + "/" + bad.Identity() + ": " + bad.Reason}); rerr != nil {
				d.log.Error("record rejected spool file", "file", name, "err", rerr)
			}
			d.log.Warn("spooled event rejected", "dir", sp.Dir, "file", name, "reason", bad.Reason)
			d.metrics.event(triggers.SourceSpool, "rejected")
			continue
		}
		if err != nil {
			// Permissions and the like: the file stays for the next drain.
			d.log.Warn("spooled event unreadable", "dir", sp.Dir, "file", name, "err", err)
			continue
		}
		ev, code, msg := checkEvent(d.cfg, ev)
		if code == triggers.CodeUnknownRepo && d.now().Sub(spooledAt) < d.unknownRepoRetry() {
			// The repo may be in the config file already; it is retried
			// until the window closes.
			d.log.Warn("spooled event kept", "file", name, "reason", msg)
			continue
		}
		if code != "" {
			raw, _ := json.Marshal(ev)
			if _, err := d.store.RecordRejectedEvent(ctx, audit.RejectedEvent{ReceivedAt: d.now(), Reason: "spool " + sp.Dir + ": " + msg, Payload: raw}); err != nil {
				return n, err
			}
			d.log.Warn("spooled event rejected", "file", name, "reason", msg)
			d.metrics.event(triggers.SourceSpool, "rejected")
			if err := sp.Reject(name, msg); err != nil {
				return n, err
			}
			continue
		}
		res, err := d.store.Enqueue(ctx, ev, triggers.SourceSpool, d.now())
		if err != nil {
			return n, err
		}
		d.metrics.enqueued(triggers.SourceSpool, res)
		if err := sp.Remove(name); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func (d *spoolDrainer) unknownRepoRetry() time.Duration {
	if r := d.cfg.Notify.UnknownRepoRetry; r > 0 {
		return r
	}
	return triggers.DefaultUnknownRepoRetry
}

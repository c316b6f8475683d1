package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/im/file"
	"github.com/aicr-dev/aicr/internal/idlegate"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/triggers"
)

// dropSourcesEvery is how often delivered runs lose their src/ copies:
// soon after delivery, since they may hold a secret the commit leaked.
const dropSourcesEvery = "@every 1m"

// deleteBatch bounds one transaction of the audit row retention: the
// intake's group commit waits for the write lock while it runs, so a batch
// stays a few milliseconds long and the job repeats until done.
const deleteBatch = 100

// tempLeftoverAge is how old a spool temp file must be before it counts
// as left by a hook that died while writing it.
const tempLeftoverAge = time.Hour

// retention is the [retention] job: run directories, src/ copies, audit
// rows, spool leftovers and channel files.
type retention struct {
	cfg     config.Retention
	store   *audit.Store
	dataDir string
	// spoolDirs are the spools the daemon drains (their rejected/ dirs
	// hold leftovers); channelFiles are the file channels' paths.
	spoolDirs    []string
	channelFiles []string
	now          func() time.Time
	log          *slog.Logger
	batch        int // deleteBatch; tests make it small
	// sourcesGate skips the minutely sources sweep while it last found
	// nothing and nobody has committed since.
	sourcesGate *idlegate.Gate
}

// runDir is where a run's files are: always <data_dir>/runs/<id>, derived
// from the id, never the run_dir column, so a row cannot point the job
// elsewhere.
func (r *retention) runDir(id int64) string { return rundir.ForRun(r.dataDir, id).Dir() }

// run is the scheduled job body: every step runs even if one fails, and
// failures are logged; the daemon keeps serving.
func (r *retention) run(ctx context.Context) {
	r.pruneAllRunDirs(ctx)
	if n := r.pruneSessions(ctx); n > 0 {
		r.log.Info("removed ended review sessions' directories", "sessions", n, "run_dirs", r.cfg.RunDirs.String())
	}
	if n, err := r.deleteRows(ctx); err != nil && ctx.Err() == nil {
		r.log.Warn("delete old audit rows", "err", err)
	} else if n > 0 {
		r.log.Info("deleted old audit rows", "runs", n, "audit_rows", r.cfg.AuditRows.String())
	}
	if r.cfg.Findings > 0 {
		if n, err := r.store.PruneFindings(ctx, r.now().Add(-r.cfg.Findings), r.batchSize()); err != nil && ctx.Err() == nil {
			r.log.Warn("prune finding history", "err", err)
		} else if n.Resolved+n.SeenEvents > 0 {
			r.log.Info("pruned finding history", "resolved_findings", n.Resolved, "seen_events", n.SeenEvents, "findings", r.cfg.Findings.String())
		}
	}
	if n := r.pruneSpools(); n > 0 {
		r.log.Info("removed old spool leftovers", "files", n, "spool_leftovers", r.cfg.SpoolLeftovers.String())
	}
	if n := r.pruneChannelFiles(); n > 0 {
		r.log.Info("removed old channel file lines", "lines", n, "channel_files", r.cfg.ChannelFiles.String())
	}
}

// dropSources removes the copies of the changed code from delivered runs
// unless keep_sources is set, and returns how many runs lost theirs. The
// run is marked first, so a run that is in use again is never touched.
func (r *retention) dropSources(ctx context.Context) (int, error) {
	if r.cfg.KeepSources {
		return 0, nil
	}
	dropped := 0
	for ctx.Err() == nil {
		ids, err := r.store.SourcesToDrop(ctx, r.batchSize())
		if err != nil {
			return dropped, err
		}
		for _, id := range ids {
			ok, err := r.store.MarkSourcesDropped(ctx, id)
			if err != nil {
				return dropped, err
			}
			if !ok {
				continue
			}
			if r.removeSources(id) {
				dropped++
			}
		}
		if len(ids) < r.batchSize() {
			break
		}
	}
	return dropped, ctx.Err()
}

// removeSources removes what of run id holds the changed code: src/, and
// the other copies of the same lines a leaked secret is in too: diff.patch
// and the agent's workspace and HOME (the bundle's diff, the prompt, an
// agent CLI's transcripts). change.json (paths, line numbers, author,
// message), which a re-sent report is rendered from, stays.
func (r *retention) removeSources(id int64) bool {
	l := rundir.New(r.runDir(id))
	ok := true
	for _, p := range []string{l.SrcDir(), l.DiffPath(), l.AgentDir(), l.HomeDir()} {
		if err := os.RemoveAll(p); err != nil {
			r.log.Error("remove run sources", "run_id", id, "path", p, "err", err)
			ok = false
		}
	}
	return ok
}

func (r *retention) runDropSources(ctx context.Context) {
	r.sourcesGate.Poll(false, func() (quiet bool) {
		n, err := r.dropSources(ctx)
		if err != nil && ctx.Err() == nil {
			r.log.Warn("remove delivered runs' sources", "err", err)
		}
		if n > 0 {
			r.log.Debug("removed delivered runs' sources", "runs", n)
		}
		return err == nil && n == 0
	})
}

func (r *retention) batchSize() int {
	if r.batch > 0 {
		return r.batch
	}
	return deleteBatch
}

// deleteRows deletes finished runs older than audit_rows with everything
// recorded about them, and their directories, then old refused requests;
// in short batches so the intake never waits long.
func (r *retention) deleteRows(ctx context.Context) (int, error) {
	if r.cfg.AuditRows <= 0 {
		return 0, nil
	}
	cutoff := r.now().Add(-r.cfg.AuditRows)
	deleted := 0
	for ctx.Err() == nil {
		ids, err := r.store.RunsToDelete(ctx, cutoff, r.batchSize())
		if err != nil {
			return deleted, err
		}
		gone, err := r.store.DeleteRuns(ctx, cutoff, ids)
		if err != nil {
			return deleted, err
		}
		for _, id := range gone {
			if err := os.RemoveAll(r.runDir(id)); err != nil {
				r.log.Error("remove run dir of a deleted run", "run_id", id, "dir", r.runDir(id), "err", err)
			}
		}
		deleted += len(gone)
		if len(ids) < r.batchSize() {
			break
		}
	}
	for _, del := range []func(context.Context, time.Time, int) (int, error){r.store.DeleteRejectedBefore, r.store.DeleteNoticesBefore} {
		for ctx.Err() == nil {
			n, err := del(ctx, cutoff, r.batchSize())
			if err != nil {
				return deleted, err
			}
			if n < r.batchSize() {
				break
			}
		}
	}
	return deleted, ctx.Err()
}

// pruneSpools removes files in each spool's rejected/ older than
// spool_leftovers (with their .reason files), and temp files a hook that
// died while spooling left behind. Pending events are never touched:
// they are still to be delivered.
func (r *retention) pruneSpools() int {
	if r.cfg.SpoolLeftovers <= 0 {
		return 0
	}
	now := r.now()
	removed := 0
	for _, dir := range r.spoolDirs {
		// The hook's account owns the spool: the spool removes what is in
		// a real rejected/ without following links, and refuses one that
		// is a link (to data_dir, say).
		n, err := triggers.Spool{Dir: dir}.PruneRejected(now.Add(-r.cfg.SpoolLeftovers))
		if err != nil {
			r.log.Warn("remove spool leftovers", "dir", dir, "err", err)
		}
		removed += n
		removed += r.removeOlder(dir, now.Add(-min(r.cfg.SpoolLeftovers, tempLeftoverAge)), func(name string) bool {
			return strings.HasPrefix(name, ".tmp-")
		})
	}
	return removed
}

// removeOlder removes the regular files in dir, modified before cutoff,
// whose name match selects.
func (r *retention) removeOlder(dir string, cutoff time.Time, match func(string) bool) int {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0
	}
	if err != nil {
		r.log.Warn("list spool leftovers", "dir", dir, "err", err)
		return 0
	}
	n := 0
	for _, e := range entries {
		if !e.Type().IsRegular() || !match(e.Name()) {
			continue
		}
		info, err := e.Info()
		if err != nil || !info.ModTime().Before(cutoff) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			r.log.Warn("remove spool leftover", "file", path, "err", err)
			continue
		}
		n++
	}
	return n
}

// pruneChannelFiles removes lines older than channel_files from every
// file channel's file.
func (r *retention) pruneChannelFiles() int {
	if r.cfg.ChannelFiles <= 0 {
		return 0
	}
	cutoff := r.now().Add(-r.cfg.ChannelFiles)
	removed := 0
	for _, path := range r.channelFiles {
		n, err := file.Prune(path, cutoff)
		if err != nil {
			r.log.Warn("prune channel file", "file", path, "err", err)
			continue
		}
		removed += n
	}
	return removed
}

// fileChannelPaths are the files of the file channels, resolved as the
// channel resolves them; two channels sharing a file count once.
func fileChannelPaths(cfg *config.Config) []string {
	seen := map[string]bool{}
	var out []string
	for _, ch := range cfg.Channels {
		fc, ok := ch.Settings.(*file.Config)
		if !ok || fc.Path == "" {
			continue
		}
		p := fc.Path
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(cfg.Path), p)
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

func newRetention(cfg *config.Config, store *audit.Store, spoolDirs []string, now func() time.Time, log *slog.Logger) *retention {
	return &retention{cfg: cfg.Retention, store: store, dataDir: cfg.Daemon.DataDir, spoolDirs: spoolDirs,
		channelFiles: fileChannelPaths(cfg), now: now, log: log, sourcesGate: newIdleGate(store)}
}

// schedule adds the job and the sources sweep to sched.
func (r *retention) schedule(sched *cron.Cron, retain, dropSources func()) error {
	if _, err := sched.AddFunc(r.cfg.Every, retain); err != nil {
		return fmt.Errorf("[retention] every %q: %w", r.cfg.Every, err)
	}
	if !r.cfg.KeepSources {
		if _, err := sched.AddFunc(dropSourcesEvery, dropSources); err != nil {
			return fmt.Errorf("sources sweep %q: %w", dropSourcesEvery, err)
		}
	}
	return nil
}

package session

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/daemon"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/triggers"
	"github.com/aicr-dev/aicr/vcs"
)

// publish sends a completed round to its repo's channels as a manual run
// of the daemon's pipeline: the round's change and result are copied, not
// reviewed again, and the run is in the audit trail like any other.
func (s *Service) publish(ctx context.Context, sess audit.ReviewSession, r audit.SessionRound) (int64, error) {
	if sess.Repo == "" {
		return 0, fmt.Errorf("the session has no repo, so no channels: begin it with repo to publish")
	}
	if _, ok := s.Config.Repo(sess.Repo); !ok {
		return 0, fmt.Errorf("repo %q is no longer in %s", sess.Repo, s.Config.Path)
	}
	round := rundir.New(r.RunDir)
	change, err := round.ReadChange()
	if err != nil {
		return 0, fmt.Errorf("read round %d's change: %w", r.Round, err)
	}
	parts, err := daemon.Build(s.Config, daemon.Deps{Store: s.Store, Logger: s.log(), Stdout: io.Discard}, daemon.BuildOptions{})
	if err != nil {
		return 0, err
	}
	ev := triggers.Event{V: triggers.ProtocolVersion, VCS: string(change.VCS), Repo: sess.Repo, Revision: change.Revision,
		User: change.Author, Source: triggers.SourceManual, SentAt: time.Now().UTC()}
	if ev.VCS == "" {
		if rc, ok := s.Config.Repo(sess.Repo); ok {
			ev.VCS = string(rc.Kind)
		}
	}
	if ev.Revision == "" {
		ev.Revision = FormatID(sess.ID)
	}
	run, err := s.Store.EnqueueClaimedWith(ctx, ev, time.Time{}, audit.ClaimOptions{})
	if err != nil {
		return 0, err
	}
	release := daemon.HoldLease(ctx, s.Store, run.ID, s.log())
	defer release()
	pipe := parts.PipelineWith(copiedRound{from: round, change: change}, fixedResult(resultOf(r)))
	rep, err := pipe.Process(ctx, run, daemon.ProcessOptions{Foreground: true})
	if err != nil {
		return run.ID, err
	}
	if err := s.Store.SetSessionPublished(ctx, sess.ID, run.ID); err != nil {
		return run.ID, err
	}
	for _, d := range rep.Dispatches {
		if d.Status != delivery.StatusSent && d.Status != delivery.StatusSuppressed {
			s.log().Warn("session publication not delivered yet", "channel", d.Channel, "status", d.Status, "detail", d.Detail)
		}
	}
	if rep.Status == audit.RunFailed {
		return run.ID, fmt.Errorf("run %d failed: %s", run.ID, rep.Error)
	}
	return run.ID, nil
}

// copiedRound is the Fetcher of a publication: the round's files.
type copiedRound struct {
	from   rundir.Layout
	change *vcs.Change
}

func (c copiedRound) Fetch(_ context.Context, _, _ string, dst vcs.Dest) (*vcs.Change, error) {
	if err := copyFile(c.from.DiffPath(), dst.DiffPath()); err != nil {
		return nil, err
	}
	out := *c.change
	for _, f := range out.Files {
		if f.Skipped != "" || f.NodeKind == vcs.NodeDir {
			continue
		}
		src, err := c.from.SrcPath(f.Path)
		if err != nil {
			continue
		}
		to, err := dst.SrcPath(f.Path)
		if err != nil {
			continue
		}
		if err := copyFile(src, to); err != nil && !os.IsNotExist(err) {
			return nil, err
		}
	}
	return &out, nil
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o750); err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o640)
}

// fixedResult is the Reviewer of a publication: the round's result.
type fixedResult review.Result

func (f fixedResult) Review(context.Context, *audit.Run, rundir.Layout) (review.Result, error) {
	return review.Result(f), nil
}

package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
)

// dispatchReport is what one dispatch of run to channel sends, built once
// when the dispatch is planned and stored with it: the run's result under
// the channel's policy, with the author's mention ([[user]]), the change's
// link and the reviewer. The daemon is the one that knows runs, change.json
// and [[user]]; the dispatcher only renders what is stored.
func dispatchReport(c *config.Config, run *audit.RunDetail, change *vcs.Change, purpose delivery.Purpose, channel string) im.Report {
	repo, _ := c.Repo(run.Repo)
	msg := reportMessage(c, run, change, channel)
	if purpose == delivery.PurposeError {
		// A failed run: its builtin findings under the channel's policy
		// (a partial review), or none (the failure notice). Either way
		// the words are BuildReport's; the reviewer is not named, since
		// it did not finish.
		msg.Reviewer = im.Reviewer{}
		msg.Failure = failureReason(run.Error)
		filtered, _, _ := c.PolicyFor(repo, channel).Apply(review.Result{Problems: run.Problems})
		msg.Result = review.Result{Problems: filtered.Problems, Summaries: []review.Summary{}}
		return im.BuildReport(msg)
	}
	res := review.Result{Problems: run.Problems, Summaries: run.Summaries}
	if res.Problems == nil {
		res.Problems = []review.Problem{}
	}
	// skip_reason holds the agent's skip while the run is running and
	// no_problems_suppressed only once every channel suppressed, which
	// never reaches a channel.
	if run.SkipReason != "" && run.SkipReason != im.ReasonNoProblemsSuppressed && run.Status != audit.RunFailed {
		res.Skip = &review.Skip{Reason: run.SkipReason}
	}
	msg.Result, _, _ = c.PolicyFor(repo, channel).Apply(res)
	return im.BuildReport(msg)
}

// reportMessage is what every report of run says of its change to
// channel: the author's mention ([[user]]), the change's link, the
// reviewer, and the channel's language.
func reportMessage(c *config.Config, run *audit.RunDetail, change *vcs.Change, channel string) im.Message {
	repo, _ := c.Repo(run.Repo)
	msg := im.Message{RunID: run.ID, Change: change, Author: c.User(change.Author), Budget: run.Budget, Language: c.ChannelLanguage(channel)}
	if run.Agent != nil {
		msg.Reviewer = im.Reviewer{Agent: run.Agent.Agent, Model: run.Agent.Model, CostUSD: run.Agent.CostUSD,
			PromptTokens: run.Agent.PromptTokens(), CachedTokens: run.Agent.CacheReadTokens}
		msg.Stopped, msg.Clipped = run.Agent.Stopped, run.Agent.Clipped
	}
	if repo != nil && repo.ChangeURL != "" {
		msg.ChangeURL = expandChangeURL(repo.ChangeURL, change)
	}
	// The run's id is aicr's, not the reader's name for the change: the
	// footer names it, linked to its page when the web page is reachable.
	if base := strings.TrimRight(c.Web.BaseURL, "/"); base != "" {
		msg.RunURL = base + "/runs/" + strconv.FormatInt(run.ID, 10)
	}
	return msg
}

// loadChange reads the change the run reviewed; when the run dir is gone
// (cleaned up, another host) the report still names repo and revision.
func loadChange(run *audit.RunDetail) *vcs.Change {
	fallback := &vcs.Change{VCS: vcs.Kind(run.VCS), Repo: run.Repo, Revision: run.Revision, Author: run.User}
	if run.RunDir == "" {
		return fallback
	}
	c, err := rundir.New(run.RunDir).ReadChange()
	if err != nil || c.Revision == "" {
		return fallback
	}
	c.Repo = run.Repo
	return c
}

func expandChangeURL(tmpl string, c *vcs.Change) string {
	return strings.NewReplacer("{repo}", url.PathEscape(c.Repo), "{revision}", url.PathEscape(c.Revision)).Replace(tmpl)
}

// maxErrorReport keeps a failed run's notice short: the audit trail has
// the whole error.
const maxErrorReport = 300

// failureReason is the first line of a failed run's error, capped, for
// its notice.
func failureReason(errText string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(errText), "\n")
	if len(line) > maxErrorReport {
		line = strings.ToValidUTF8(line[:maxErrorReport], "") + "…"
	}
	if line == "" {
		line = "unknown error"
	}
	return line
}

// FillDispatchReports stores the report of every dispatch an older aicr
// planned without one and that may still be sent (pending, or failed, dead
// or unknown for `aicr dispatch retry`), built from its run as that aicr
// built it at send time. Call it before a dispatcher over store sends, so
// none needs a callback into the daemon. A dispatch to a channel that left
// the config, or whose run cannot be found, is left without one: the
// dispatcher fails it with its reason at its next attempt.
func FillDispatchReports(ctx context.Context, cfg *config.Config, store *audit.Store, log *slog.Logger) (int, error) {
	rows, err := store.DispatchesWithoutReport(ctx)
	if err != nil {
		return 0, err
	}
	type loaded struct {
		run    *audit.RunDetail
		change *vcs.Change
	}
	runs := map[int64]loaded{}
	filled := 0
	for _, d := range rows {
		if _, ok := cfg.Channel(d.Channel); !ok {
			continue
		}
		l, ok := runs[d.RunID]
		if !ok {
			run, err := store.GetRun(ctx, d.RunID)
			if errors.Is(err, audit.ErrNotFound) {
				log.Warn("dispatch has no report and its run is gone: it fails at its next attempt",
					"dispatch_id", d.ID, "run_id", d.RunID, "channel", d.Channel)
				continue
			}
			if err != nil {
				return filled, fmt.Errorf("fill report of dispatch %d: %w", d.ID, err)
			}
			l = loaded{run: run, change: loadChange(run)}
			runs[d.RunID] = l
		}
		if err := store.SetDispatchReport(ctx, d.ID, dispatchReport(cfg, l.run, l.change, d.Purpose, d.Channel)); err != nil {
			return filled, err
		}
		filled++
	}
	return filled, nil
}

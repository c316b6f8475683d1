package daemon

import (
	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/triggers"
	"github.com/aicr-dev/aicr/vcs"
)

// channelsForRun routes every run: it is config.ChannelsFor, except that the review of a shelf goes
// to the repo's shelve_channels when it names any.
func channelsForRun(c *config.Config, repo *config.Repo, run *audit.Run, change *vcs.Change) []string {
	if _, ok := triggers.ParseShelfRevision(run.Revision); ok && len(repo.ShelveChannels) > 0 {
		return append([]string(nil), repo.ShelveChannels...)
	}
	return c.ChannelsFor(repo, changedPaths(change))
}

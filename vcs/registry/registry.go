// Package registry lists the VCS kinds a [[repo]] table may name. It is
// explicit (no init-time registration) so one place shows every kind.
package registry

import (
	"github.com/aicr-dev/aicr/vcs"
	"github.com/aicr-dev/aicr/vcs/p4"
	"github.com/aicr-dev/aicr/vcs/svn"
)

// Kinds maps each repo kind to a constructor of its empty settings, which
// the config loader decodes the [[repo]] table into.
func Kinds() map[vcs.Kind]func() vcs.RepoSettings {
	return map[vcs.Kind]func() vcs.RepoSettings{
		vcs.KindSVN: func() vcs.RepoSettings { return &svn.Config{} },
		vcs.KindP4:  func() vcs.RepoSettings { return &p4.Config{} },
	}
}

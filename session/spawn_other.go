//go:build !unix

package session

import (
	"context"
	"errors"

	"github.com/aicr-dev/aicr/audit"
)

// DetachedStarter is unix-only: review sessions need a detached worker.
func DetachedStarter(binary, configPath, dataDir string) Starter {
	return func(context.Context, int64, int) error {
		return errors.New("review sessions need a unix host")
	}
}

func stopWorker(audit.SessionRound, string) {}

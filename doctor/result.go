package doctor

// The result file through which notify's dry run, started by the hook,
// hands its findings back to doctor.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/aicr-dev/aicr/internal/atomicfile"
)

// waitResult polls for the result file, which notify renames into place
// whole, until it appears or wait runs out.
func waitResult(ctx context.Context, path string, wait time.Duration) ([]Check, error) {
	deadline := time.Now().Add(wait)
	for {
		found, err := readResult(path)
		if err == nil {
			return found, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, errors.New("no result file")
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

type resultFile struct {
	Checks []Check `json:"checks"`
}

func readResult(path string) ([]Check, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r resultFile
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return r.Checks, nil
}

// WriteResult stores the dry run's findings for doctor: a temp file
// renamed into place, so doctor, polling, never reads half of it.
func WriteResult(path string, checks []Check) error {
	b, err := json.Marshal(resultFile{Checks: checks})
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("write result: %w", err)
	}
	return nil
}

// resultDir is a private directory the hook's account can write into.
func resultDir(owner account) (string, error) {
	dir, err := os.MkdirTemp("", "aicr-doctor-")
	if err != nil {
		return "", err
	}
	if err := owner.chown(dir); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

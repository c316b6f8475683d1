//go:build !unix

package daemon

import (
	"fmt"
	"os"
)

// lockDataDir only creates data_dir where flock is unavailable; running
// two daemons on one data_dir there is the operator's responsibility.
func lockDataDir(dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data_dir: %w", err)
	}
	return func() {}, nil
}

package daemon

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// AdminSecretName is the operator's secret in data_dir: operator actions
// over HTTP (POST /v1/reload) are signed with it, not with the trigger
// secret, which the hook's account (svn, p4d) holds too. The daemon
// creates it at start, 0600, so only the daemon's user and root can read
// it; `aicr reload` run as either of them signs with it.
const AdminSecretName = "admin-secret"

// maxAdminSecretBytes bounds the read: the daemon writes 65 bytes.
const maxAdminSecretBytes = 4 << 10

// AdminSecretPath is where the operator's secret of dataDir lives.
func AdminSecretPath(dataDir string) string { return filepath.Join(dataDir, AdminSecretName) }

// ensureAdminSecret returns data_dir's operator secret, creating it
// (random, 0600, never through a link) when it is missing.
func ensureAdminSecret(dataDir string) ([]byte, error) {
	path := AdminSecretPath(dataDir)
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		_, werr := f.WriteString(hex.EncodeToString(raw[:]) + "\n")
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			os.Remove(path)
			return nil, fmt.Errorf("write the operator secret %s: %w", path, werr)
		}
	case !errors.Is(err, fs.ErrExist):
		return nil, fmt.Errorf("create the operator secret %s: %w", path, err)
	}
	return ReadAdminSecret(dataDir)
}

// ReadAdminSecret reads data_dir's operator secret. It must be a regular
// file (not a link) readable by nobody but its owner.
func ReadAdminSecret(dataDir string) ([]byte, error) {
	path := AdminSecretPath(dataDir)
	st, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("operator secret: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("operator secret %s is not a regular file: remove it and restart the daemon, which creates a new one", path)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("operator secret %s is mode %04o: it must be readable only by the daemon's user (chmod 0600 %s)", path, st.Mode().Perm(), path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("operator secret: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxAdminSecretBytes+1))
	if err != nil {
		return nil, fmt.Errorf("operator secret %s: %w", path, err)
	}
	s := strings.TrimSpace(string(b))
	if len(b) > maxAdminSecretBytes || len(s) < 32 {
		return nil, fmt.Errorf("operator secret %s is not one the daemon wrote: remove it and restart the daemon, which creates a new one", path)
	}
	return []byte(s), nil
}

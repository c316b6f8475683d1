package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"

	"github.com/aicr-dev/aicr/childenv"
)

// MarkerName marks a finished install: a prefix without it is a partial
// one that Install replaces.
const MarkerName = ".aicr-install.json"

// PrefixInside is where the sandbox mounts the CLI's install prefix.
const PrefixInside = "/opt/aicr/cli"

// Marker is what MarkerName records.
type Marker struct {
	Kind        string    `json:"kind"`
	Package     string    `json:"package"`
	Version     string    `json:"version"`
	InstalledAt time.Time `json:"installed_at"`
}

// InstallOptions are the inputs of Install.
type InstallOptions struct {
	// Dir is [agent.cli] install_dir; the install goes to Dir/<kind>/<version>.
	Dir     string
	Kind    string
	Version string // empty: the pinned version
	// Npm is the npm executable; empty: "npm" from PATH.
	Npm string
	// Registry overrides npm's registry (an internal mirror); empty: npm's.
	Registry string
	// Force reinstalls over a finished install.
	Force          bool
	Stdout, Stderr io.Writer
}

// Prefix is where kind's version is (or would be) installed under dir.
func Prefix(dir, kind, version string) string {
	return filepath.Join(dir, kind, version)
}

// Install puts the CLI's npm package at its version into a prefix of its
// own under o.Dir, which the sandbox mounts read-only: no global install,
// and nothing is fetched when a review runs. A finished install is kept
// (Force replaces it); a partial one never becomes visible, because the
// package is installed beside the prefix and renamed into place.
func Install(ctx context.Context, o InstallOptions) (string, error) {
	a, ok := Lookup(o.Kind)
	if !ok {
		return "", fmt.Errorf("unknown agent CLI %q (one of: %s)", o.Kind, strings.Join(Kinds(), ", "))
	}
	spec := a.Spec()
	version := o.Version
	if version == "" {
		version = spec.Version
	}
	if err := checkVersion(spec, version); err != nil {
		return "", err
	}
	if o.Dir == "" {
		return "", errors.New("agent install: no install dir; set [agent.cli] install_dir or pass --dir")
	}
	prefix := Prefix(o.Dir, o.Kind, version)
	if err := os.MkdirAll(filepath.Dir(prefix), 0o755); err != nil {
		return "", fmt.Errorf("agent install: %w", err)
	}
	// One install of a version at a time, across processes: a second one
	// waits, then finds the first one's finished install and keeps it
	// (renaming over it would pull the files from under a running review).
	unlock, err := lockFile(prefix + ".lock")
	if err != nil {
		return "", fmt.Errorf("agent install: %w", err)
	}
	defer unlock()
	if !o.Force {
		if _, err := os.Stat(filepath.Join(prefix, MarkerName)); err == nil {
			if _, err := Executable(a, prefix); err == nil {
				return prefix, nil
			}
		}
	}
	// Partial installs of a crashed run are not worth keeping.
	if old, _ := filepath.Glob(filepath.Join(filepath.Dir(prefix), "."+version+".partial-*")); len(old) > 0 {
		for _, p := range old {
			_ = os.RemoveAll(p)
		}
	}
	tmp, err := os.MkdirTemp(filepath.Dir(prefix), "."+version+".partial-")
	if err != nil {
		return "", fmt.Errorf("agent install: %w", err)
	}
	defer os.RemoveAll(tmp)
	// The sandbox's user reads the install through a read-only mount.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", fmt.Errorf("agent install: %w", err)
	}
	npm := o.Npm
	if npm == "" {
		npm = "npm"
	}
	args := []string{"install", "--prefix", tmp, "--no-audit", "--no-fund", "--no-save", "--omit=dev",
		"--loglevel=error", "--cache", filepath.Join(o.Dir, ".npm-cache")}
	if o.Registry != "" {
		args = append(args, "--registry", o.Registry)
	}
	args = append(args, spec.Package+"@"+version)
	cmd := exec.CommandContext(ctx, npm, args...)
	cmd.Env = childenv.Build([]string{"HOME", "NODE_EXTRA_CA_CERTS", "npm_config_registry", "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY"},
		"npm_config_update_notifier=false")
	cmd.Stdout, cmd.Stderr = orDiscard(o.Stdout), orDiscard(o.Stderr)
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("agent install: npm install %s@%s: %w (is the npm registry reachable? set --registry for a mirror)",
			spec.Package, version, err)
	}
	if _, err := Executable(a, tmp); err != nil {
		return "", fmt.Errorf("agent install: %s@%s installed but %s is missing: %w", spec.Package, version, spec.Bin, err)
	}
	mk, _ := json.Marshal(Marker{Kind: o.Kind, Package: spec.Package, Version: version, InstalledAt: time.Now().UTC()})
	if err := os.WriteFile(filepath.Join(tmp, MarkerName), mk, 0o644); err != nil {
		return "", fmt.Errorf("agent install: %w", err)
	}
	old := prefix + ".old"
	_ = os.RemoveAll(old)
	if err := os.Rename(prefix, old); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("agent install: %w", err)
	}
	if err := os.Rename(tmp, prefix); err != nil {
		return "", fmt.Errorf("agent install: %w", err)
	}
	_ = os.RemoveAll(old)
	return prefix, nil
}

// Installed reads the marker of an install; ErrNotInstalled when there is
// none.
func Installed(prefix string) (Marker, error) {
	var m Marker
	b, err := os.ReadFile(filepath.Join(prefix, MarkerName))
	if err != nil {
		return m, fmt.Errorf("%w at %s", ErrNotInstalled, prefix)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%s: %w", filepath.Join(prefix, MarkerName), err)
	}
	return m, nil
}

// checkVersion accepts an exact semver at or above the adapter's minimum.
func checkVersion(s Spec, version string) error {
	v, err := semver.StrictNewVersion(version)
	if err != nil {
		return fmt.Errorf("%s version %q is not an exact version (e.g. %s)", s.Kind, version, s.Version)
	}
	if s.MinVersion != "" {
		minV := semver.MustParse(s.MinVersion)
		if v.LessThan(minV) {
			return fmt.Errorf("%s %s is older than %s, the oldest version aicr's adapter was proven with", s.Kind, version, s.MinVersion)
		}
	}
	return nil
}

// CheckVersion is checkVersion for doctor.
func CheckVersion(kind, version string) error {
	a, ok := Lookup(kind)
	if !ok {
		return fmt.Errorf("unknown agent CLI %q", kind)
	}
	return checkVersion(a.Spec(), version)
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

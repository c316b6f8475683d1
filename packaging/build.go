package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/deb"
	"github.com/goreleaser/nfpm/v2/files"
	"github.com/goreleaser/nfpm/v2/rpm"
)

// Options say what to package and where.
type Options struct {
	Root       string
	BinDir     string
	OutDir     string
	Describe   string
	CommitTime string
	Arch       string
	Formats    []string
}

// Paths inside the packages. The unit and README refer to the same ones.
const (
	unitSource     = "packaging/aicr.service"
	unitDest       = "/usr/lib/systemd/system/aicr.service"
	configDest     = "/etc/aicr/aicr.toml"
	exampleSource  = "configs/aicr.example.toml"
	scriptsDirName = "packaging/scripts"
)

// packagers are the formats -formats may name.
var packagers = map[string]nfpm.Packager{
	"deb": deb.Default,
	"rpm": rpm.DefaultRPM,
}

// Build writes one package per format into OutDir and returns their paths.
func Build(opts Options) ([]string, error) {
	if opts.Describe == "" {
		return nil, errors.New("-version is required (the binaries' git describe)")
	}
	for _, name := range []string{"aicr", "aicr-notify"} {
		if _, err := os.Stat(filepath.Join(opts.BinDir, name)); err != nil {
			return nil, fmt.Errorf("binary %s: %w (run make build first)", name, err)
		}
	}
	version, prerelease, err := packageVersion(opts.Describe, opts.CommitTime)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return nil, err
	}
	var out []string
	for _, format := range opts.Formats {
		pkgr, ok := packagers[format]
		if !ok {
			return nil, fmt.Errorf("format %q: want deb or rpm", format)
		}
		info := packageInfo(opts, version, prerelease)
		path := filepath.Join(opts.OutDir, pkgr.ConventionalFileName(info))
		if err := writePackage(pkgr, info, path); err != nil {
			return nil, fmt.Errorf("%s: %w", format, err)
		}
		out = append(out, path)
	}
	return out, nil
}

func writePackage(pkgr nfpm.Packager, info *nfpm.Info, path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".package-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := pkgr.Package(info, tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// packageInfo is a fresh Info per format: packagers rewrite Contents.
func packageInfo(opts Options, version, prerelease string) *nfpm.Info {
	root := func(p string) string { return filepath.Join(opts.Root, p) }
	script := func(name string) string { return filepath.Join(opts.Root, scriptsDirName, name) }
	mode := func(m os.FileMode) *files.ContentFileInfo {
		return &files.ContentFileInfo{Owner: "root", Group: "root", Mode: m}
	}
	info := &nfpm.Info{
		Name:          "aicr",
		Arch:          opts.Arch,
		Platform:      "linux",
		Version:       version,
		VersionSchema: "none",
		Prerelease:    prerelease,
		Section:       "devel",
		Priority:      "optional",
		Maintainer:    "aicr maintainers <aicr@localhost>",
		Vendor:        "aicr",
		License:       "Apache-2.0",
		Description: "AI code review for Subversion and Perforce\n" +
			"A post-commit hook or change-commit trigger hands each change to a\n" +
			"local daemon, which reviews it and posts the findings to chat.",
		Overridables: nfpm.Overridables{
			Recommends: []string{"subversion"},
			Contents: files.Contents{
				{Source: filepath.Join(opts.BinDir, "aicr"), Destination: "/usr/bin/aicr", FileInfo: mode(0o755)},
				{Source: filepath.Join(opts.BinDir, "aicr-notify"), Destination: "/usr/bin/aicr-notify", FileInfo: mode(0o755)},
				{Source: root(unitSource), Destination: unitDest, FileInfo: mode(0o644)},
				// root:root here; the post-install gives it group aicr
				// once the group exists.
				{Source: root(exampleSource), Destination: configDest, Type: files.TypeConfigNoReplace, FileInfo: mode(0o640)},
				{Destination: "/etc/aicr", Type: files.TypeDir, FileInfo: mode(0o750)},
				{Source: root(exampleSource), Destination: "/usr/share/aicr/aicr.example.toml", FileInfo: mode(0o644)},
				// Each family's own place for the licence and docs.
				{Source: root("LICENSE"), Destination: "/usr/share/doc/aicr/copyright", FileInfo: mode(0o644), Packager: "deb"},
				{Source: root("README.md"), Destination: "/usr/share/doc/aicr/README.md", FileInfo: mode(0o644), Packager: "deb"},
				{Source: root("LICENSE"), Destination: "/usr/share/licenses/aicr/LICENSE", FileInfo: mode(0o644), Type: files.TypeRPMLicense, Packager: "rpm"},
				{Source: root("README.md"), Destination: "/usr/share/doc/aicr/README.md", FileInfo: mode(0o644), Type: files.TypeRPMDoc, Packager: "rpm"},
			},
			Scripts: nfpm.Scripts{
				PostInstall: script("postinstall.sh"),
				PreRemove:   script("preremove.sh"),
				PostRemove:  script("postremove.sh"),
			},
			RPM: nfpm.RPM{
				Summary: "AI code review for Subversion and Perforce",
				Group:   "Development/Tools",
			},
		},
	}
	if opts.CommitTime != "" {
		if t, err := time.Parse("20060102150405", opts.CommitTime); err == nil {
			info.MTime = t
		}
	}
	return nfpm.WithDefaults(info)
}

var (
	releaseTag = regexp.MustCompile(`^v?(\d+\.\d+\.\d+)$`)
	commitTime = regexp.MustCompile(`^\d{14}$`)
	unsafeChar = regexp.MustCompile(`[^0-9A-Za-z.]+`)
)

// packageVersion turns git describe's output into a version dpkg and rpm
// both order correctly: a release tag as itself, anything else as a
// pre-release of 0.0.0 ordered by commit time ("0.0.0~git20261201054900.
// 1ac83e1" sorts before 0.0.0 and before any later build), so installing
// a newer build over an older one is an upgrade.
func packageVersion(describe, commit string) (version, prerelease string, err error) {
	if m := releaseTag.FindStringSubmatch(describe); m != nil {
		return m[1], "", nil
	}
	if !commitTime.MatchString(commit) {
		return "", "", fmt.Errorf("-date %q: want the commit time as YYYYMMDDhhmmss for the untagged version %q", commit, describe)
	}
	id := strings.Trim(unsafeChar.ReplaceAllString(strings.TrimPrefix(describe, "v"), "."), ".")
	return "0.0.0", "git" + commit + "." + id, nil
}

package eval

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrNoSubversion: the replay needs svn and svnadmin.
var ErrNoSubversion = errors.New("aicr eval needs svn and svnadmin: install Subversion (sudo apt-get install -y subversion)")

// CheckTools reports ErrNoSubversion when svn or svnadmin is missing.
func CheckTools() error {
	for _, t := range []string{"svn", "svnadmin"} {
		if _, err := exec.LookPath(t); err != nil {
			return ErrNoSubversion
		}
	}
	return nil
}

// buildRepo makes a scratch repository at dir/repo with c.Before as r1
// and c.After as r2, committed through a working copy as a developer
// would, so the review fetches r2 exactly as it fetches a real commit.
func buildRepo(ctx context.Context, dir string, c *Case) (string, error) {
	repo := filepath.Join(dir, "repo")
	wc := filepath.Join(dir, "wc")
	if err := run(ctx, dir, "svnadmin", "create", repo); err != nil {
		return "", err
	}
	if err := run(ctx, dir, "svn", "checkout", "-q", "file://"+repo, wc); err != nil {
		return "", err
	}
	// r1 exists even when before/ is empty (a change that only adds
	// files): a property on the root is a change svn commits.
	if err := run(ctx, wc, "svn", "propset", "-q", "aicr:eval-case", c.ID, "."); err != nil {
		return "", err
	}
	if err := syncTree(ctx, wc, c.Before); err != nil {
		return "", fmt.Errorf("case %s before/: %w", c.ID, err)
	}
	author := c.Author
	if author == "" {
		author = "dev"
	}
	if err := run(ctx, wc, "svn", "commit", "-q", "-m", "eval: base of "+c.ID, "--username", author); err != nil {
		return "", err
	}
	if err := syncTree(ctx, wc, c.After); err != nil {
		return "", fmt.Errorf("case %s after/: %w", c.ID, err)
	}
	if err := run(ctx, wc, "svn", "commit", "-q", "-m", c.Message, "--username", author); err != nil {
		return "", err
	}
	// An after/ identical to before/ commits nothing; the review of a
	// missing r2 would fail obscurely, so say so here.
	out, err := output(ctx, wc, "svn", "info", "--show-item", "revision", "file://"+repo)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(out) != "2" {
		return "", fmt.Errorf("case %s: after/ is the same as before/: there is no change to review", c.ID)
	}
	return repo, nil
}

// syncTree makes the working copy's files those of tree: writes every
// file, schedules new ones for addition and removes the ones tree lacks.
func syncTree(ctx context.Context, wc string, tree fs.FS) error {
	want := map[string]bool{}
	walk := fs.WalkDir
	if _, empty := tree.(emptyFS); empty {
		walk = func(fs.FS, string, fs.WalkDirFunc) error { return nil }
	}
	err := walk(tree, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return err
		}
		dst := filepath.Join(wc, filepath.FromSlash(p))
		if d.IsDir() {
			want[p] = true
			return os.MkdirAll(dst, 0o755)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: only regular files and directories are replayed", p)
		}
		data, err := fs.ReadFile(tree, p)
		if err != nil {
			return err
		}
		want[p] = true
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		return err
	}
	var gone []string
	err = filepath.WalkDir(wc, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".svn" {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(wc, p)
		if rel == "." {
			return nil
		}
		if !want[filepath.ToSlash(rel)] {
			gone = append(gone, rel)
			if d.IsDir() {
				return filepath.SkipDir
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(gone) > 0 {
		if err := run(ctx, wc, "svn", append([]string{"rm", "-q", "--force"}, gone...)...); err != nil {
			return err
		}
	}
	return run(ctx, wc, "svn", "add", "-q", "--force", "--no-auto-props", ".")
}

func run(ctx context.Context, dir, name string, args ...string) error {
	_, err := output(ctx, dir, name, args...)
	return err
}

func output(ctx context.Context, dir, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("%s %s: %w: %s", name, args[0], err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("%s %s: %w", name, args[0], err)
	}
	return string(out), nil
}

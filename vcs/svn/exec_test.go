package svn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
	"github.com/aicr-dev/aicr/vcs/vcstest"
)

// Issue 10 #9: a hung svn or svnlook is killed with its children at
// command_timeout, and the failure is one the daemon retries.
func TestHungCommandKilledWithGroup(t *testing.T) {
	for _, mode := range []string{AccessSVN, AccessSvnlook} {
		t.Run(mode, func(t *testing.T) {
			state := t.TempDir()
			fake := vcstest.FakeTool(t, t.TempDir(), mode, vcstest.HangScript(state))
			cfg := Config{URL: fx.trunk, ConfigDir: fx.configDir, CommandTimeout: 3 * time.Second, Access: mode}
			if mode == AccessSVN {
				cfg.SvnPath = fake
			} else {
				cfg.LocalPath, cfg.SvnlookPath = fx.repo, fake
			}
			a, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			// Only a safety net so the pre-fix code fails instead of hanging.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			_, err = a.Fetch(ctx, strconv.FormatInt(fx.rModify, 10), rundir.New(t.TempDir()))
			if !errors.Is(err, vcs.ErrTimeout) || !vcs.IsTransient(err) {
				t.Fatalf("Fetch with a hung %s = %v, want vcs.ErrTimeout (transient)", mode, err)
			}
			vcstest.RequireGone(t, filepath.Join(state, "leader"))
			vcstest.RequireGone(t, filepath.Join(state, "child"))
		})
	}
}

// Issue 10 #26: secrets the daemon was given through *_env keys never
// reach svn or svnlook, in either access mode; the fetch still works.
func TestChildEnvironmentHasNoDaemonSecrets(t *testing.T) {
	t.Setenv("AICR_TEST_TRIGGER_SECRET", "hunter2-trigger")
	t.Setenv("AICR_TEST_SVN_PASSWORD", "s3cret pass")
	for _, mode := range []string{AccessSVN, AccessSvnlook} {
		t.Run(mode, func(t *testing.T) {
			real, err := exec.LookPath(mode)
			if err != nil {
				t.Fatal(err)
			}
			dump := filepath.Join(t.TempDir(), "env")
			wrapper := vcstest.FakeTool(t, t.TempDir(), mode,
				"env >> "+vcstest.Quote(dump)+"\nexec "+vcstest.Quote(real)+` "$@"`+"\n")
			cfg := Config{ConfigDir: fx.configDir, Access: mode}
			if mode == AccessSVN {
				cfg.URL, cfg.SvnPath = fx.svnserv.trunk, wrapper
				cfg.Username, cfg.PasswordEnv = fx.svnserv.user, "AICR_TEST_SVN_PASSWORD"
			} else {
				cfg.URL, cfg.LocalPath, cfg.SvnlookPath = fx.trunk, fx.repo, wrapper
			}
			a, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			c, err := a.Fetch(context.Background(), strconv.FormatInt(fx.rModify, 10), rundir.New(t.TempDir()))
			if err != nil || len(c.Files) == 0 {
				t.Fatalf("Fetch through the wrapper = %v, %v", c, err)
			}
			b, err := os.ReadFile(dump)
			if err != nil {
				t.Fatal(err)
			}
			for _, bad := range []string{"hunter2-trigger", "AICR_TEST_TRIGGER_SECRET", "s3cret pass", "AICR_TEST_SVN_PASSWORD"} {
				if strings.Contains(string(b), bad) {
					t.Errorf("%s's environment contains %q", mode, bad)
				}
			}
			if !strings.Contains(string(b), "LC_ALL=C.UTF-8") {
				t.Errorf("%s's environment lacks LC_ALL=C.UTF-8:\n%s", mode, b)
			}
		})
	}
}

// A server nobody listens on is an outage, not a bad request.
func TestUnreachableServerIsTransient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	a := newAdapter(t, Config{URL: fmt.Sprintf("svn://127.0.0.1:%d/repo/trunk", port)})
	_, err = a.Fetch(context.Background(), "1", rundir.New(t.TempDir()))
	if !errors.Is(err, vcs.ErrUnavailable) || !vcs.IsTransient(err) {
		t.Fatalf("Fetch from a closed port = %v, want vcs.ErrUnavailable", err)
	}
}

func TestNoSuchRevisionIsTransient(t *testing.T) {
	_, err := newAdapter(t, Config{}).Fetch(context.Background(), "999", rundir.New(t.TempDir()))
	if !errors.Is(err, vcs.ErrNoSuchRevision) || !vcs.IsTransient(err) {
		t.Fatalf("Fetch(999) = %v, want ErrNoSuchRevision, transient", err)
	}
}

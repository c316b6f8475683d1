package e2e

// aicr doctor against a real daemon process that does not accept what the
// hook signs, or does not run the config on disk: the signed probe
// (POST /v1/probe) catches what /healthz could not.

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/admin"
	"github.com/aicr-dev/aicr/doctor"
	"github.com/aicr-dev/aicr/internal/svntest"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// editConfig rewrites the test config: old must occur in it.
func editConfig(t *testing.T, e *env, old, new string) {
	t.Helper()
	b, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("config has no %q", old)
	}
	if err := os.WriteFile(e.config, []byte(strings.Replace(string(b), old, new, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestDoctorCatchesDaemonRefusingTheHooksSecret(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, e *env) // before the daemon starts
		after func(t *testing.T, e *env) // once it runs
		fix   []string
	}{
		{
			// The hook has a secret file of its own, with another value.
			name: "hook and daemon read different files",
			setup: func(t *testing.T, e *env) {
				if err := os.WriteFile(filepath.Join(e.dir, "hook-secret"), []byte("not-the-daemons\n"), 0o640); err != nil {
					t.Fatal(err)
				}
				editConfig(t, e, "[notify]\n", "[notify]\nsecret_file = \"hook-secret\"\n")
			},
			fix: []string{"cat", filepath.Join(e2eDirMarker, "secret"), filepath.Join(e2eDirMarker, "hook-secret")},
		},
		{
			// The secret was rotated on disk; the daemon still holds the
			// value it read at start.
			name: "secret rotated under a running daemon",
			after: func(t *testing.T, e *env) {
				if err := os.WriteFile(filepath.Join(e.dir, "secret"), []byte("rotated\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			},
			fix: []string{"restart the daemon"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1)
			if tc.setup != nil {
				tc.setup(t, e)
			}
			e.startDaemon()
			if tc.after != nil {
				tc.after(t, e)
			}
			rep, out, code := runDoctor(t, e)
			if code != 1 || rep.OK {
				t.Fatalf("exit %d, want 1; report:\n%s", code, out)
			}
			if got := failedChecks(rep); !slices.Equal(got, []string{doctor.CheckHookDaemon, doctor.CheckProbe}) {
				t.Fatalf("failed checks %v, want the hook's and doctor's probe; report:\n%s", got, out)
			}
			probe := findCheck(t, rep, doctor.CheckProbe)
			if !strings.Contains(probe.Detail, "bad_signature") {
				t.Errorf("probe detail %q does not give the daemon's reason", probe.Detail)
			}
			for _, want := range tc.fix {
				want = strings.ReplaceAll(want, e2eDirMarker, e.dir)
				if !strings.Contains(probe.Fix, want) {
					t.Errorf("probe fix %q lacks %q", probe.Fix, want)
				}
			}
			if d := findCheck(t, rep, doctor.CheckDaemon); d.Status != doctor.StatusOK {
				t.Errorf("the daemon answers, but the daemon check says %+v", d)
			}
		})
	}
}

// e2eDirMarker stands for the test's directory in expected fix texts.
const e2eDirMarker = "<dir>"

// A repo added to the config after the daemon started: the running daemon
// does not know it and runs an older config, and doctor says to reload.
func TestDoctorCatchesDaemonMissingARepo(t *testing.T) {
	e := newEnv(t, 1)
	e.startDaemon()
	tools := filepath.Join(e.dir, "repos", "tools")
	svntest.Run(t, e.dir, "svnadmin", "create", tools)
	b, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	added := string(b) + "\n[[repo]]\nname = \"tools\"\nkind = \"svn\"\nurl = \"file://" + tools + "\"\nchannels = [\"reports\"]\n"
	if err := os.WriteFile(e.config, []byte(added), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, out, code := runDoctor(t, e)
	if code != 1 || rep.OK {
		t.Fatalf("exit %d, want 1; report:\n%s", code, out)
	}
	if got := failedChecks(rep); !slices.Equal(got, []string{doctor.CheckDaemonConfig, doctor.CheckDaemonRepos}) {
		t.Fatalf("failed checks %v; report:\n%s", got, out)
	}
	repos := findCheck(t, rep, doctor.CheckDaemonRepos)
	if !strings.Contains(repos.Detail, `repo "tools"`) || strings.Contains(repos.Detail, `repo "main"`) || !strings.Contains(repos.Fix, "reload the daemon") {
		t.Errorf("daemon-repos: %+v", repos)
	}
	if c := findCheck(t, rep, doctor.CheckDaemonConfig); !strings.Contains(c.Detail, "changed since the daemon loaded it") || !strings.Contains(c.Fix, "reload the daemon") {
		t.Errorf("daemon-config: %+v", c)
	}

	// The daemon restarted on the new config: nothing to report.
	e.stopDaemon()
	e.startDaemon()
	if rep, out, code := runDoctor(t, e); code != 0 || !rep.OK {
		t.Fatalf("after a restart: exit %d; report:\n%s", code, out)
	}
}

// The admin tool doctor is aicr doctor: a daemon running another aicr
// than this one is a warning from both (the tool did not know its own
// version, so it said ok where the verb said restart the daemon). "This
// one" is an aicr built as another release, beside the daemon under test.
func TestDoctorToolWarnsOfADaemonOfAnotherVersion(t *testing.T) {
	e := newEnv(t, 1)
	e.startDaemon()
	other := filepath.Join(t.TempDir(), "aicr")
	if err := buildAicr(other, "-X github.com/aicr-dev/aicr/internal/buildinfo.Version=9.9.9-test"); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(other, "doctor", "--config", e.config, "--format", "json")
	cmd.Dir = e.dir
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && (!errors.As(err, &ee) || ee.ExitCode() > 1) {
		t.Fatalf("aicr doctor: %v\n%s", err, out)
	}
	var verb doctor.Report
	if err := json.Unmarshal(out, &verb); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}

	c, err := client.NewStdioMCPClient(other, nil, "mcp", "admin", "--config", e.config)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = admin.ToolDoctor
	res, err := c.CallTool(ctx, req)
	if err != nil || res.IsError {
		t.Fatalf("doctor tool: %+v %v", res, err)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var tool doctor.Report
	if err := json.Unmarshal(raw, &tool); err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	for name, rep := range map[string]doctor.Report{"aicr doctor": verb, "the doctor tool": tool} {
		c := findCheck(t, rep, doctor.CheckDaemon)
		if c.Status != doctor.StatusWarn || !strings.Contains(c.Detail, "this aicr is 9.9.9-test") {
			t.Errorf("%s: daemon check %+v, want a warning naming this aicr's version", name, c)
		}
	}
}

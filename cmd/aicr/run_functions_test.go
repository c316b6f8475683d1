package main

// The second layer of command tests: run functions over a factory with
// buffers, real SQLite files in temp dirs and real channels.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/mcperr"
	"github.com/aicr-dev/aicr/triggers"
)

// writeFileChannelConfig is a config whose only channel is a file
// channel writing reports.jsonl next to it; data_dir is data/.
func writeFileChannelConfig(t *testing.T) (configPath, dataDir, reports string) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("AICR_CLI_TEST_SECRET", "s")
	cfg := `[daemon]
data_dir = "data"
secret_env = "AICR_CLI_TEST_SECRET"

[[repo]]
name = "main"
kind = "svn"
url = "file:///nonexistent"
channels = ["reports"]

[[channel]]
name = "reports"
kind = "file"
path = "reports.jsonl"
`
	configPath = filepath.Join(dir, "aicr.toml")
	if err := os.WriteFile(configPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return configPath, filepath.Join(dir, "data"), filepath.Join(dir, "reports.jsonl")
}

func TestExitCodeIsDecidedInOnePlace(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
		says string
	}{
		{nil, exitOK, ""},
		{errors.New("boom"), exitError, "aicr: boom\n"},
		{fmt.Errorf("open: %w", audit.ErrNoDatabase), exitError, "aicr: open: no database yet\n"},
		{usageErrorf("--format must be text or json"), exitUsage, "aicr: --format must be text or json\n"},
		{&usageError{err: errors.New("unknown flag: --x"), hint: "aicr audit list --help"}, exitUsage, "aicr: unknown flag: --x\nRun 'aicr audit list --help' for usage.\n"},
		{fmt.Errorf("load: %w", asUsage(errors.New("config file not found"))), exitUsage, "aicr: load: config file not found\n"},
		{errSilentFailure, exitError, ""},
		{errSilentUsage, exitUsage, ""},
		{errSilentOK, exitOK, ""},
	} {
		var buf strings.Builder
		if code := exitCode(tc.err, &buf); code != tc.code || buf.String() != tc.says {
			t.Errorf("%v: exit %d printing %q, want %d printing %q", tc.err, code, buf.String(), tc.code, tc.says)
		}
	}
}

func TestUnknownVerbsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"bogus"}, {"audit", "lst"}, {"dispatch", "retri", "1"}} {
		_, errOut, code := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(errOut, "unknown command") {
			t.Errorf("aicr %v: exit %d, stderr %q; want exit 2 naming the unknown command", args, code, errOut)
		}
	}
	if _, errOut, _ := runCLI(t, "audit", "lst"); !strings.Contains(errOut, "did you mean list?") {
		t.Errorf("no suggestion: %q", errOut)
	}
	if out, _, code := runCLI(t, "audit"); code != exitOK || !strings.Contains(out, "Available Commands") {
		t.Errorf("aicr audit: exit %d, want its help:\n%s", code, out)
	}
}

// Issue 10 #16: read-only commands never create aicr.db (run as root on
// a fresh data_dir, it would be root's and the daemon could not open it),
// and say why there is nothing to show.
func TestReadOnlyCommandsNeverCreateTheDatabase(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(context.Context, *Factory) error
	}{
		{"audit list", func(ctx context.Context, f *Factory) error {
			return auditListRun(ctx, &AuditListOptions{Factory: f, Limit: 20, Format: formatText})
		}},
		{"audit show", func(ctx context.Context, f *Factory) error {
			return auditShowRun(ctx, &AuditShowOptions{Factory: f, RunID: 1, Format: formatText})
		}},
		{"dispatch list", func(ctx context.Context, f *Factory) error {
			return dispatchListRun(ctx, &DispatchListOptions{Factory: f, Limit: 50, Format: formatText})
		}},
		{"dispatch show", func(ctx context.Context, f *Factory) error {
			return dispatchShowRun(ctx, &DispatchShowOptions{Factory: f, ID: 1, Format: formatText})
		}},
		{"audit rejected", func(ctx context.Context, f *Factory) error {
			return auditRejectedRun(ctx, &AuditRejectedOptions{Factory: f, Limit: 50, Format: formatText})
		}},
		{"audit export", func(ctx context.Context, f *Factory) error {
			return auditExportRun(ctx, &AuditExportOptions{Factory: f, Since: "7d", Format: exportJSONL})
		}},
		{"db backup", func(ctx context.Context, f *Factory) error {
			return dbBackupRun(ctx, &DBBackupOptions{Factory: f, File: filepath.Join(t.TempDir(), "b.db"), Format: formatText})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			configPath, dataDir, _ := writeFileChannelConfig(t)
			f, out, errOut := testFactory(t, configPath)
			err := tc.run(context.Background(), f)
			if !errors.Is(err, audit.ErrNoDatabase) || !strings.Contains(err.Error(), "the daemon has not run") {
				t.Fatalf("err = %v, want one saying the daemon has not run", err)
			}
			if code := exitCode(err, errOut); code != exitError || out.Len() != 0 {
				t.Errorf("exit %d, stdout %q", code, out.String())
			}
			if _, err := os.Stat(filepath.Join(dataDir, "aicr.db")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("aicr.db was created (stat: %v)", err)
			}
		})
	}
}

// chownDataDir creates data_dir owned by nobody (uid 65534), as a data_dir
// the daemon's account owns looks to root.
func chownDataDir(t *testing.T, dataDir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to give data_dir to another user")
	}
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dataDir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
}

// Issue 10 #16: commands that write the data_dir or a channel's file run
// as the data_dir's owner or refuse, naming the owner to sudo to.
func TestWritingCommandsRefuseAnotherOwner(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(context.Context, *Factory) error
	}{
		{"dispatch retry", func(ctx context.Context, f *Factory) error {
			return dispatchRetryRun(ctx, &DispatchRetryOptions{Factory: f, ID: 1, Format: formatText})
		}},
		{"dispatch retry --queue", func(ctx context.Context, f *Factory) error {
			return dispatchRetryRun(ctx, &DispatchRetryOptions{Factory: f, ID: 1, Queue: true, Format: formatText})
		}},
		{"channel test of a file channel", func(ctx context.Context, f *Factory) error {
			return channelTestRun(ctx, &ChannelTestOptions{Factory: f, Name: "reports", Timeout: time.Minute, Format: formatText})
		}},
		{"run retry", func(ctx context.Context, f *Factory) error {
			return runRetryRun(ctx, &RunRetryOptions{Factory: f, RunID: 1, Format: formatText})
		}},
		{"review", func(ctx context.Context, f *Factory) error {
			return reviewRun(ctx, &ReviewOptions{Factory: f, Kind: svnReview.kind, Repo: "main", Revision: 1, DryRun: true, Format: formatText})
		}},
		{"daemon", func(ctx context.Context, f *Factory) error {
			return daemonRun(ctx, &DaemonOptions{Factory: f, Level: slog.LevelInfo})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			configPath, dataDir, reports := writeFileChannelConfig(t)
			chownDataDir(t, dataDir)
			f, out, errOut := testFactory(t, configPath)
			err := tc.run(context.Background(), f)
			if err == nil || !strings.Contains(err.Error(), "belongs to nobody") || !strings.Contains(err.Error(), "run as `runuser -u nobody -- aicr") || !strings.Contains(err.Error(), "`sudo -u nobody aicr") {
				t.Fatalf("err = %v, want a refusal naming the owner", err)
			}
			if code := exitCode(err, errOut); code != exitError || out.Len() != 0 {
				t.Errorf("exit %d, stdout %q", code, out.String())
			}
			entries, _ := os.ReadDir(dataDir)
			if len(entries) != 0 {
				t.Errorf("data_dir holds %v after a refusal", entries)
			}
			if _, err := os.Stat(reports); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the file channel's file was created (stat: %v)", err)
			}
		})
	}
}

// The owner may: the file channel is written, and --format json says so.
func TestChannelTestAsOwner(t *testing.T) {
	configPath, _, reports := writeFileChannelConfig(t)
	f, out, _ := testFactory(t, configPath)
	if err := channelTestRun(context.Background(), &ChannelTestOptions{Factory: f, Name: "reports", Timeout: time.Minute, Format: formatJSON}); err != nil {
		t.Fatal(err)
	}
	var got channelTestOutput
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || !got.Sent || got.Channel != "reports" || got.Kind != "file" {
		t.Fatalf("%v: %s", err, out)
	}
	if b, err := os.ReadFile(reports); err != nil || !strings.Contains(string(b), "aicr-test") {
		t.Fatalf("reports file: %v %q", err, b)
	}
}

// seedDeadDispatch writes a run with one dead delivery to channel into
// the config's database, as the daemon would have left it.
func seedDeadDispatch(t *testing.T, dataDir, channel string) (runID, dispatchID int64) {
	t.Helper()
	ctx := context.Background()
	store, err := audit.Open(ctx, filepath.Join(dataDir, "aicr.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := store.Enqueue(ctx, triggers.Event{V: 1, VCS: "svn", Repo: "main", Revision: "5", User: "alice"}, triggers.SourceTrigger, time.Time{}); err != nil {
		t.Fatal(err)
	}
	run, err := store.ClaimNext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.FinishRun(ctx, run.ID, audit.Outcome{Status: audit.RunSucceeded}); err != nil {
		t.Fatal(err)
	}
	d, err := store.PlanDispatch(ctx, run.ID, channel, delivery.PurposeReport, delivery.StatusPending, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	claim, err := store.ClaimDispatch(ctx, d.ID, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.FinishAttempt(ctx, claim, delivery.AttemptResult{Status: delivery.StatusDead, Reason: "server", StatusCode: 503, Error: "gave up after 6 attempts", Response: `{"busy":true}`}); err != nil {
		t.Fatal(err)
	}
	return run.ID, d.ID
}

func TestDispatchShowAndRetry(t *testing.T) {
	configPath, dataDir, reports := writeFileChannelConfig(t)
	runID, id := seedDeadDispatch(t, dataDir, "reports")
	ctx := context.Background()

	f, out, _ := testFactory(t, configPath)
	if err := dispatchShowRun(ctx, &DispatchShowOptions{Factory: f, ID: id, Format: formatText}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{fmt.Sprintf("dispatch %d: run %d to reports (report) — dead", id, runID), "attempts (1):", "status 503", "gave up after 6 attempts", `answer: {"busy":true}`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("show does not say %q:\n%s", want, out)
		}
	}
	f, out, _ = testFactory(t, configPath)
	if err := dispatchShowRun(ctx, &DispatchShowOptions{Factory: f, ID: id, Format: formatJSON}); err != nil {
		t.Fatal(err)
	}
	var view dispatchView
	if err := json.Unmarshal(out.Bytes(), &view); err != nil || view.ID != id || view.Status != delivery.StatusDead || len(view.AttemptLog) != 1 || view.AttemptLog[0].StatusCode != 503 {
		t.Fatalf("show json: %v\n%s", err, out)
	}
	f, _, _ = testFactory(t, configPath)
	if err := dispatchShowRun(ctx, &DispatchShowOptions{Factory: f, ID: id + 100, Format: formatText}); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("no dispatch %d", id+100)) {
		t.Errorf("unknown id: %v", err)
	}

	// The retry goes out through the real file channel; JSON on stdout,
	// nothing else there.
	f, out, _ = testFactory(t, configPath)
	if err := dispatchRetryRun(ctx, &DispatchRetryOptions{Factory: f, ID: id, Format: formatJSON}); err != nil {
		t.Fatal(err)
	}
	var res dispatchRetryOutput
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || res.Dispatch.ID != id || res.Dispatch.Status != delivery.StatusSent || res.Queued {
		t.Fatalf("retry json: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(reports); err != nil || !strings.Contains(string(b), fmt.Sprintf("aicr-%d-reports", runID)) {
		t.Fatalf("reports file: %v %q", err, b)
	}
	f, _, _ = testFactory(t, configPath)
	err := dispatchRetryRun(ctx, &DispatchRetryOptions{Factory: f, ID: id, Format: formatText})
	if err == nil || !strings.Contains(err.Error(), "only failed, dead or unknown") {
		t.Fatalf("second retry: %v", err)
	}
	// With --format json the refusal is the tool's envelope on stdout.
	f, out, _ = testFactory(t, configPath)
	err = dispatchRetryRun(ctx, &DispatchRetryOptions{Factory: f, ID: id, Format: formatJSON})
	var env mcperr.Error
	if !errors.Is(err, errSilentFailure) || json.Unmarshal(out.Bytes(), &env) != nil || env.Code != mcperr.PolicyBlocked || !strings.Contains(env.Remedy, "only failed, dead or unknown") {
		t.Fatalf("second retry, json: %v\n%s", err, out)
	}
}

func TestRunRetryJSON(t *testing.T) {
	configPath, _, _ := writeFileChannelConfig(t)
	f, out, errOut := testFactory(t, configPath)
	err := runRetryRun(context.Background(), &RunRetryOptions{Factory: f, Failed: true, Since: testNow.Add(-time.Hour), Format: formatJSON})
	if err != nil {
		t.Fatal(err)
	}
	var res runRetryOutput
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || res.Queued == nil || len(res.Queued) != 0 || !res.Confirmed ||
		!strings.Contains(out.String(), `"queued": []`) || !strings.Contains(errOut.String(), "queued 0 failed runs again") {
		t.Fatalf("stdout %q stderr %q", out, errOut)
	}
	f, _, _ = testFactory(t, configPath)
	err = runRetryRun(context.Background(), &RunRetryOptions{Factory: f, RunID: 99, Format: formatText})
	if err == nil || !strings.Contains(err.Error(), "no run 99") {
		t.Fatalf("unknown run: %v", err)
	}
}

// A verb whose --format json is an admin tool's result prints the tool's
// envelope on failure too: on stdout, with nothing on stderr, exit 1, or
// 2 for INVALID_INPUT and CONFIG_INVALID.
func TestAdminVerbsPrintTheEnvelopeWithFormatJSON(t *testing.T) {
	configPath, _, _ := writeFileChannelConfig(t)
	f, _, _ := testFactory(t, configPath)
	// A database, with nothing in it.
	store, err := f.Store(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	store.Close()
	for _, tc := range []struct {
		args []string
		code string
		exit int
	}{
		{[]string{"run", "retry", "99"}, mcperr.NotFound, 1},
		{[]string{"run", "cancel", "99", "--dry-run"}, mcperr.NotFound, 1},
		{[]string{"audit", "show", "99"}, mcperr.NotFound, 1},
		{[]string{"dispatch", "retry", "99", "--queue"}, mcperr.NotFound, 1},
		{[]string{"repo", "pause", "nope", "--dry-run"}, mcperr.NotFound, 1},
		{[]string{"prune", "--older-than", "soon"}, mcperr.InvalidInput, 2},
		{[]string{"dispatch", "list", "--config", filepath.Join(t.TempDir(), "missing.toml")}, mcperr.ConfigInvalid, 2},
		{[]string{"queue", "status", "--config", filepath.Join(t.TempDir(), "missing.toml")}, mcperr.ConfigInvalid, 2},
	} {
		args := append(append([]string{}, tc.args...), "--format", "json")
		if !slices.Contains(args, "--config") {
			args = append(args, "--config", configPath)
		}
		out, errOut, exit := runCLI(t, args...)
		var env mcperr.Error
		if err := json.Unmarshal([]byte(out), &env); err != nil || env.Code != tc.code || env.Message == "" || env.Remedy == "" || exit != tc.exit || errOut != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want the %s envelope, exit %d", strings.Join(tc.args, " "), exit, out, errOut, tc.code, tc.exit)
		}
		// The CLI speaks its own words: verbs, never the MCP tools' names.
		textArgs := slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "--format" || a == "json" })
		_, textErr, _ := runCLI(t, textArgs...)
		for _, said := range []string{env.Remedy, textErr} {
			if tool := mcpToolName.FindString(said); tool != "" {
				t.Errorf("%s: the CLI names the MCP tool %s: %q", strings.Join(tc.args, " "), tool, said)
			}
		}
	}
}

// mcpToolName matches the admin tools' names (runs_list, run_inspect,
// repo_pause, ...), which only the MCP surface should say.
var mcpToolName = regexp.MustCompile(`\b(runs|run|dispatch|queue|repo)_(list|inspect|status|pause|resume|retry|cancel)\b|\b(run_id|dispatch_id|failed_since)\b`)

func TestConfigCheckJSON(t *testing.T) {
	configPath, _, _ := writeFileChannelConfig(t)
	f, out, _ := testFactory(t, "")
	if err := configCheckRun(context.Background(), &ConfigCheckOptions{IO: f.IOStreams, Path: configPath, Format: formatJSON}); err != nil {
		t.Fatal(err)
	}
	var got configCheckOutput
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || !got.OK || got.Repos != 1 || got.Channels != 1 || len(got.Errors) != 0 {
		t.Fatalf("%v: %s", err, out)
	}

	bad := filepath.Join(filepath.Dir(configPath), "bad.toml")
	if err := os.WriteFile(bad, []byte("[daemon]\nwrokers = 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, out, errOut := testFactory(t, "")
	err := configCheckRun(context.Background(), &ConfigCheckOptions{IO: f.IOStreams, Path: bad, Format: formatJSON})
	if code := exitCode(err, errOut); code != exitUsage {
		t.Fatalf("exit %d, want 2", code)
	}
	got = configCheckOutput{}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || got.OK || len(got.Errors) == 0 || !strings.Contains(strings.Join(got.Errors, "\n"), "daemon.wrokers: unknown key") {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.Contains(errOut.String(), "bad.toml:2: daemon.wrokers: unknown key") {
		t.Errorf("stderr keeps the file:line list: %q", errOut)
	}
}

func TestVersionJSON(t *testing.T) {
	f, out, _ := testFactory(t, "")
	if err := versionRun(context.Background(), &VersionOptions{IO: f.IOStreams, Format: formatJSON}); err != nil {
		t.Fatal(err)
	}
	var got versionOutput
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || got.Version != version {
		t.Fatalf("%v: %s", err, out)
	}
}

// install svn-hook and uninstall svn-hook on a real repository, as JSON.
func TestInstallAndUninstallJSON(t *testing.T) {
	if _, err := exec.LookPath("svnadmin"); err != nil {
		t.Skip("needs svnadmin")
	}
	configPath, _, _ := writeFileChannelConfig(t)
	repos := filepath.Join(t.TempDir(), "main")
	if out, err := exec.Command("svnadmin", "create", repos).CombinedOutput(); err != nil {
		t.Fatalf("svnadmin: %v %s", err, out)
	}
	bin := filepath.Join(t.TempDir(), "aicr")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, out, errOut := testFactory(t, configPath)
	f.Executable = func() (string, error) { return bin, nil }
	err := installSVNHookRun(context.Background(), &InstallSVNHookOptions{Factory: f, ReposPath: repos, Name: "main", Format: formatJSON})
	if err != nil {
		t.Fatal(err)
	}
	var got installSVNHookOutput
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || got.Hook != filepath.Join(repos, "hooks", "post-commit") || got.Repo != "main" || got.Aicr != bin || len(got.Warnings) != 1 {
		t.Fatalf("%v: %s", err, out)
	}
	// The secret comes from the environment: the warning is in the JSON
	// and on stderr.
	if !strings.Contains(got.Warnings[0], "secret_env") || !strings.Contains(errOut.String(), "warning: [notify] uses secret_env") {
		t.Errorf("warnings %q, stderr %q", got.Warnings, errOut)
	}
	hook, err := os.ReadFile(got.Hook)
	if err != nil || !strings.Contains(string(hook), bin) {
		t.Fatalf("hook: %v\n%s", err, hook)
	}

	f, out, _ = testFactory(t, configPath)
	if err := uninstallSVNHookRun(context.Background(), &UninstallSVNHookOptions{IO: f.IOStreams, ReposPath: repos, Format: formatJSON}); err != nil {
		t.Fatal(err)
	}
	var un uninstallOutput
	if err := json.Unmarshal(out.Bytes(), &un); err != nil || un.Hook != got.Hook {
		t.Fatalf("%v: %s", err, out)
	}
	if _, err := os.Stat(got.Hook); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the hook held only the aicr block and should be gone: %v", err)
	}
	if un.Outcome != triggers.UninstallRemovedFile {
		t.Errorf("outcome %q, want %q", un.Outcome, triggers.UninstallRemovedFile)
	}
	// In text it says what happened to the file: gone, not trimmed.
	f, out, _ = testFactory(t, configPath)
	f.Executable = func() (string, error) { return bin, nil }
	if err := installSVNHookRun(context.Background(), &InstallSVNHookOptions{Factory: f, ReposPath: repos, Name: "main", Format: formatJSON}); err != nil {
		t.Fatal(err)
	}
	f, out, _ = testFactory(t, configPath)
	if err := uninstallSVNHookRun(context.Background(), &UninstallSVNHookOptions{IO: f.IOStreams, ReposPath: repos, Format: formatText}); err != nil {
		t.Fatal(err)
	}
	if want := "removed " + got.Hook + ": it held only the aicr block\n"; out.String() != want {
		t.Errorf("uninstall said %q, want %q", out.String(), want)
	}
}

package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/triggers"
	"github.com/aicr-dev/aicr/vcs"
)

// The first layer of command tests: flags and arguments → options, with
// the run function replaced. Bad input must stop before it with exit 2.

func TestAuditFlags(t *testing.T) {
	checkFlags(t, newCmdAuditList, []flagCase[AuditListOptions]{
		{name: "defaults", want: AuditListOptions{Limit: 20, Format: "text"}},
		{name: "all", args: []string{"--limit", "5", "--repo", "main", "--status", "failed", "--format", "json", "--config", "/x.toml"},
			want: AuditListOptions{Limit: 5, Repo: "main", Status: "failed", Format: "json"}, config: "/x.toml"},
		{name: "bad format", args: []string{"--format", "yaml"}, code: exitUsage, errSays: "--format must be text or json"},
		{name: "argument", args: []string{"7"}, code: exitUsage, errSays: "unknown command"},
		{name: "unknown flag", args: []string{"--bogus"}, code: exitUsage, errSays: "unknown flag: --bogus"},
		{name: "bad status", args: []string{"--status", "done"}, code: exitUsage, errSays: "--status must be one the list shows: queued, retrying, held, running"},
		// Every status the list shows can be asked for.
		{name: "retrying", args: []string{"--status", "retrying"}, want: AuditListOptions{Limit: 20, Status: "retrying", Format: "text"}},
		{name: "held", args: []string{"--status", "held"}, want: AuditListOptions{Limit: 20, Status: "held", Format: "text"}},
		{name: "bad limit", args: []string{"--limit", "many"}, code: exitUsage, errSays: "--limit"},
	})
	checkFlags(t, newCmdAuditShow, []flagCase[AuditShowOptions]{
		{name: "id", args: []string{"7"}, want: AuditShowOptions{RunID: 7, Format: "text"}},
		{name: "json", args: []string{"7", "--format", "json"}, want: AuditShowOptions{RunID: 7, Format: "json"}},
		{name: "not a number", args: []string{"seven"}, code: exitUsage, errSays: `run id "seven" is not a number`},
		{name: "no id", code: exitUsage, errSays: "accepts 1 arg"},
		{name: "two ids", args: []string{"1", "2"}, code: exitUsage},
	})
}

func TestDispatchFlags(t *testing.T) {
	checkFlags(t, newCmdDispatchList, []flagCase[DispatchListOptions]{
		{name: "defaults", want: DispatchListOptions{Limit: 50, Format: "text"}},
		{name: "all", args: []string{"--status", "dead", "--channel", "team", "--limit", "3", "--format", "json"},
			want: DispatchListOptions{Status: "dead", Channel: "team", Limit: 3, Format: "json"}},
		{name: "bad status", args: []string{"--status", "bogus"}, code: exitUsage, errSays: "--status must be pending"},
	})
	checkFlags(t, newCmdDispatchShow, []flagCase[DispatchShowOptions]{
		{name: "id", args: []string{"3", "--format", "json"}, want: DispatchShowOptions{ID: 3, Format: "json"}},
		{name: "zero", args: []string{"0"}, code: exitUsage, errSays: "dispatch id"},
	})
	checkFlags(t, newCmdDispatchRetry, []flagCase[DispatchRetryOptions]{
		{name: "id", args: []string{"4"}, want: DispatchRetryOptions{ID: 4, Format: "text"}},
		{name: "queue", args: []string{"4", "--queue", "--format", "json"}, want: DispatchRetryOptions{ID: 4, Queue: true, Format: "json"}},
		{name: "negative", args: []string{"-4"}, code: exitUsage},
		{name: "no id", code: exitUsage},
	})
}

func TestRunFlags(t *testing.T) {
	checkFlags(t, newCmdRunRetry, []flagCase[RunRetryOptions]{
		{name: "id", args: []string{"42"}, want: RunRetryOptions{RunID: 42, Format: "text"}},
		{name: "failed since duration", args: []string{"--failed", "--since", "24h", "--repo", "main", "--format", "json"},
			want: RunRetryOptions{Failed: true, Since: testNow.Add(-24 * time.Hour), Repo: "main", Format: "json"}},
		{name: "failed since time", args: []string{"--failed", "--since", "2026-01-02T15:04:05Z"},
			want: RunRetryOptions{Failed: true, Since: time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC), Format: "text"}},
		{name: "both", args: []string{"1", "--failed", "--since", "1h"}, code: exitUsage, errSays: "not both"},
		{name: "neither", code: exitUsage, errSays: "give one RUN_ID"},
		{name: "failed without since", args: []string{"--failed"}, code: exitUsage, errSays: "--failed needs --since"},
		{name: "bad since", args: []string{"--failed", "--since", "yesterday"}, code: exitUsage, errSays: `--since "yesterday"`},
		{name: "bad id", args: []string{"x"}, code: exitUsage, errSays: "run id"},
	})
}

func TestChannelFlags(t *testing.T) {
	checkFlags(t, newCmdChannelTest, []flagCase[ChannelTestOptions]{
		{name: "name", args: []string{"team"}, want: ChannelTestOptions{Name: "team", Timeout: 30 * time.Second, Format: "text"}},
		{name: "all", args: []string{"team", "--timeout", "5s", "--format", "json"}, want: ChannelTestOptions{Name: "team", Timeout: 5 * time.Second, Format: "json"}},
		{name: "zero timeout", args: []string{"team", "--timeout", "0s"}, code: exitUsage, errSays: "--timeout must be positive"},
		{name: "no name", code: exitUsage},
	})
}

func TestConfigFlags(t *testing.T) {
	checkFlags(t, newCmdConfigCheck, []flagCase[ConfigCheckOptions]{
		{name: "file", args: []string{"a.toml"}, want: ConfigCheckOptions{Path: "a.toml", Format: "text"}},
		{name: "json", args: []string{"a.toml", "--format", "json"}, want: ConfigCheckOptions{Path: "a.toml", Format: "json"}},
		// Issue 15 item 7: like every other command, --config and
		// $AICR_CONFIG name the file when no FILE is given.
		{name: "config flag", args: []string{"--config", "/etc/x.toml"}, want: ConfigCheckOptions{Path: "/etc/x.toml", Format: "text"}, config: "/etc/x.toml"},
		{name: "no file", want: ConfigCheckOptions{Path: triggers.ConfigPath(), Format: "text"}},
		{name: "same file twice", args: []string{"a.toml", "--config", "a.toml"}, want: ConfigCheckOptions{Path: "a.toml", Format: "text"}},
		{name: "two files", args: []string{"a.toml", "--config", "b.toml"}, code: exitUsage, errSays: "name different files"},
		{name: "two arguments", args: []string{"a.toml", "b.toml"}, code: exitUsage},
	})
}

func TestReviewFlags(t *testing.T) {
	svn := func(f *Factory, runF func(context.Context, *ReviewOptions) error) *cobra.Command {
		return newCmdReviewVCS(f, svnReview, runF)
	}
	p4 := func(f *Factory, runF func(context.Context, *ReviewOptions) error) *cobra.Command {
		return newCmdReviewVCS(f, p4Review, runF)
	}
	checkFlags(t, svn, []flagCase[ReviewOptions]{
		{name: "svn", args: []string{"--repo", "main", "--rev", "42"}, want: ReviewOptions{Kind: vcs.KindSVN, Repo: "main", Revision: 42, Format: "text"}},
		{name: "dry run json", args: []string{"--repo", "main", "--rev", "42", "--dry-run", "--format", "json"},
			want: ReviewOptions{Kind: vcs.KindSVN, Repo: "main", Revision: 42, DryRun: true, Format: "json"}},
		{name: "missing repo", args: []string{"--rev", "42"}, code: exitUsage, errSays: `required flag(s) "repo" not set`},
		{name: "zero rev", args: []string{"--repo", "main", "--rev", "0"}, code: exitUsage, errSays: "--rev must be a positive revision number"},
		{name: "p4 flag on svn", args: []string{"--repo", "main", "--change", "4"}, code: exitUsage, errSays: "unknown flag: --change"},
	})
	checkFlags(t, p4, []flagCase[ReviewOptions]{
		{name: "p4", args: []string{"--repo", "depot", "--change", "12345"}, want: ReviewOptions{Kind: vcs.KindP4, Repo: "depot", Revision: 12345, Format: "text"}},
		{name: "missing change", args: []string{"--repo", "depot"}, code: exitUsage, errSays: `"change" not set`},
	})
}

func TestInstallFlags(t *testing.T) {
	checkFlags(t, newCmdInstallSVNHook, []flagCase[InstallSVNHookOptions]{
		{name: "repo", args: []string{"--repo", "/srv/svn/main"}, want: InstallSVNHookOptions{ReposPath: "/srv/svn/main", Format: "text"}},
		{name: "all", args: []string{"--repo", "/srv/svn/main", "--name", "main", "--aicr", "/bin/aicr", "--windows", "--format", "json"},
			want: InstallSVNHookOptions{ReposPath: "/srv/svn/main", Name: "main", AicrPath: "/bin/aicr", Windows: true, Format: "json"}},
		{name: "no repo", code: exitUsage, errSays: `"repo" not set`},
		{name: "all", args: []string{"--all", "--parent", "/srv/svn", "--force"}, want: InstallSVNHookOptions{All: true, Parent: "/srv/svn", Force: true, Format: "text"}},
		{name: "all without parent", args: []string{"--all"}, code: exitUsage, errSays: "--all needs --parent"},
		{name: "all and repo", args: []string{"--all", "--parent", "/srv/svn", "--repo", "/srv/svn/a"}, code: exitUsage, errSays: "not both"},
		{name: "all and name", args: []string{"--all", "--parent", "/srv/svn", "--name", "a"}, code: exitUsage, errSays: "--name names one repository"},
		{name: "parent without all", args: []string{"--parent", "/srv/svn"}, code: exitUsage, errSays: "--parent goes with --all"},
	})
	checkFlags(t, newCmdInstallP4Trigger, []flagCase[InstallP4Options]{
		{name: "repo", args: []string{"--repo", "depot"}, want: InstallP4Options{Repo: "depot", Format: "text"}},
		{name: "windows", args: []string{"--repo", "depot", "--windows", "--aicr", `C:\aicr.exe`, "--name", "t"},
			want: InstallP4Options{Repo: "depot", Windows: true, AicrPath: `C:\aicr.exe`, Name: "t", Format: "text"}},
		{name: "no repo", code: exitUsage, errSays: "--repo is required"},
	})
	checkFlags(t, newCmdUninstallSVNHook, []flagCase[UninstallSVNHookOptions]{
		{name: "repo", args: []string{"--repo", "/srv/svn/main", "--windows", "--format", "json"}, want: UninstallSVNHookOptions{ReposPath: "/srv/svn/main", Windows: true, Format: "json"}},
		{name: "no repo", code: exitUsage},
	})
}

func TestNotifyFlags(t *testing.T) {
	checkFlags(t, newCmdNotifySVN, []flagCase[NotifySVNOptions]{
		{name: "hook arguments", args: []string{"--config", "/etc/aicr/x.toml", "/srv/svn/main", "42"},
			want: NotifySVNOptions{SVNNotify: triggers.SVNNotify{ConfigPath: "/etc/aicr/x.toml", Args: []string{"/srv/svn/main", "42"}}}},
		{name: "repo and txn", args: []string{"--repo", "main", "/srv/svn/main", "42", "42-1"},
			want: NotifySVNOptions{SVNNotify: triggers.SVNNotify{ConfigPath: triggers.ConfigPath(), Repo: "main", Args: []string{"/srv/svn/main", "42", "42-1"}}}},
		// A hook never fails the commit: a bad flag is reported and exits 0
		// without sending.
		{name: "bad flag", args: []string{"--bogus"}, code: exitOK, stops: true, errSays: "aicr notify: unknown flag"},
	})
	checkFlags(t, newCmdNotifyP4, []flagCase[NotifyP4Options]{
		{name: "trigger", args: []string{"--repo", "depot", "--change", "7", "--user", "u", "--client", "c", "--serverport", "ssl:p4:1666", "--serverid", "s", "--foreground"},
			want: NotifyP4Options{P4Notify: triggers.P4Notify{ConfigPath: triggers.ConfigPath(), Repo: "depot", Change: "7", User: "u", Client: "c", ServerPort: "ssl:p4:1666", ServerID: "s", Foreground: true, Args: []string{}}}},
		{name: "bad flag", args: []string{"--bogus"}, code: exitOK, stops: true, errSays: "aicr notify p4: unknown flag"},
	})
}

func TestOtherFlags(t *testing.T) {
	checkFlags(t, newCmdDoctor, []flagCase[DoctorOptions]{
		{name: "defaults", want: DoctorOptions{Format: "text"}},
		{name: "repo json", args: []string{"--repo", "main", "--format", "json"}, want: DoctorOptions{Repo: "main", Format: "json"}},
		{name: "bad format", args: []string{"--format", "xml"}, code: exitUsage},
	})
	checkFlags(t, newCmdDaemon, []flagCase[DaemonOptions]{
		{name: "defaults", want: DaemonOptions{Level: slog.LevelInfo}},
		{name: "level", args: []string{"--log-level", "debug"}, want: DaemonOptions{Level: slog.LevelDebug}},
		{name: "bad level", args: []string{"--log-level", "loud"}, code: exitUsage, errSays: `--log-level "loud"`},
	})
	checkFlags(t, newCmdVersion, []flagCase[VersionOptions]{
		{name: "text", want: VersionOptions{Format: "text"}},
		{name: "json", args: []string{"--format", "json"}, want: VersionOptions{Format: "json"}},
		{name: "argument", args: []string{"x"}, code: exitUsage},
	})
	checkFlags(t, newCmdDemo, []flagCase[DemoOptions]{
		{name: "keep", args: []string{"--keep"}, want: DemoOptions{Keep: true}},
	})
}

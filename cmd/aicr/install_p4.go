package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/vcs/p4"
)

// InstallP4Options are the flags of `aicr install p4-trigger`.
type InstallP4Options struct {
	Repo       string
	ConfigPath string
	AicrPath   string
	Windows    bool
	Name       string
}

func newInstallP4TriggerCmd(ios *IOStreams) *cobra.Command {
	var o InstallP4Options
	cmd := &cobra.Command{
		Use:   "p4-trigger --repo NAME --config FILE",
		Short: "Print the change-commit trigger lines for p4 triggers",
		Long: `Print the lines to add to the Perforce triggers table (p4 triggers) so every
submitted changelist under the repo's depot_paths is handed to the daemon,
and the steps to install and test them. Nothing is changed on the server:
the trigger lines go to stdout, the steps to stderr.`,
		Example: `  aicr install p4-trigger --repo depot --config /etc/aicr/aicr.toml
  aicr install p4-trigger --repo depot --config 'C:\aicr\aicr.toml' --windows --aicr 'C:\Program Files\aicr\aicr.exe'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return installP4Trigger(ios, o)
		},
	}
	addConfigFlag(cmd, &o.ConfigPath)
	f := cmd.Flags()
	f.StringVar(&o.Repo, "repo", "", "name of the p4 [[repo]] in the config (required)")
	f.StringVar(&o.AicrPath, "aicr", "", "aicr binary path on the Perforce server (default: this binary, or C:\\Program Files\\aicr\\aicr.exe with --windows)")
	f.BoolVar(&o.Windows, "windows", false, "print lines for a p4d running on Windows")
	f.StringVar(&o.Name, "name", "aicr-review", "trigger name")
	return cmd
}

func installP4Trigger(ios *IOStreams, o InstallP4Options) error {
	if o.Repo == "" {
		return &exitError{code: 2, err: fmt.Errorf("--repo is required")}
	}
	cfg, err := loadConfig(o.ConfigPath)
	if err != nil {
		return err
	}
	repo, ok := cfg.Repo(o.Repo)
	if !ok {
		return &exitError{code: 2, err: fmt.Errorf("--repo %q: no such [[repo]] in %s", o.Repo, cfg.Path)}
	}
	pc, ok := repo.Settings.(*p4.Config)
	if !ok {
		return &exitError{code: 2, err: fmt.Errorf("--repo %q is kind %q, not p4", o.Repo, repo.Kind)}
	}
	if o.AicrPath == "" {
		if o.Windows {
			o.AicrPath = `C:\Program Files\aicr\aicr.exe`
		} else if exe, err := os.Executable(); err == nil {
			o.AicrPath = exe
		} else {
			o.AicrPath = "/usr/local/bin/aicr"
		}
	}
	lines := P4TriggerLines(o.Name, pc.DepotPaths, o.AicrPath, cfg.Path, o.Repo)
	for _, l := range lines {
		fmt.Fprintln(ios.Out, l)
	}
	fmt.Fprintf(ios.ErrOut, `
Install (as a Perforce super user):
  1. Put aicr at %[1]s on the Perforce server and make %[2]s readable by
     the account p4d runs as; [notify] needs secret_file (p4d runs triggers
     with a bare environment) and a spool_dir that account can write.
  2. Run 'p4 triggers', paste the lines above under "Triggers:", save.
     Check with 'p4 triggers -o'.
  3. Test: submit a small change under %[3]s, then on the daemon host run
     'aicr audit list --repo %[4]s'. If nothing arrives, read
     <spool_dir>/notify.log on the Perforce server; events that could not be
     delivered wait in <spool_dir> and are sent later.
The trigger returns at once and always exits 0, so a submit never waits or fails.
`, o.AicrPath, cfg.Path, strings.Join(pc.DepotPaths, " "), o.Repo)
	return nil
}

// P4TriggerLines are the triggers-table lines: one change-commit line
// per depot path ('-' exclusions are kept, so p4d does not even start
// the trigger for them). Arguments with spaces are wrapped in %quote%,
// which p4d replaces by a double quote when it runs the command;
// depot paths with spaces are double-quoted in the table itself.
func P4TriggerLines(name string, depotPaths []string, aicrPath, configPath, repo string) []string {
	q := func(s string) string {
		if strings.ContainsAny(s, " \t") {
			return "%quote%" + s + "%quote%"
		}
		return s
	}
	command := q(aicrPath) + " notify p4 --config " + q(configPath) + " --repo " + q(repo) +
		" --change %change% --user %user% --client %client% --serverport %serverport%"
	var out []string
	for _, dp := range depotPaths {
		path := dp
		if strings.ContainsAny(path, " \t") {
			path = `"` + path + `"`
		}
		out = append(out, fmt.Sprintf("\t%s change-commit %s \"%s\"", name, path, command))
	}
	return out
}

package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/triggers"
	"github.com/aicr-dev/aicr/vcs/p4"
)

// InstallP4Options are the inputs of `aicr install p4-trigger`.
type InstallP4Options struct {
	Factory  *Factory
	Repo     string
	AicrPath string
	Windows  bool
	Name     string
	Format   string
	// Shelve prints shelve-commit lines (review of shelved changes).
	Shelve bool
}

func newCmdInstallP4Trigger(f *Factory, runF func(context.Context, *InstallP4Options) error) *cobra.Command {
	opts := &InstallP4Options{Factory: f}
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
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			if opts.Repo == "" {
				return usageErrorf("--repo is required")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return installP4TriggerRun(cmd.Context(), opts)
		},
	}
	addConfigFlag(cmd, f)
	fl := cmd.Flags()
	fl.StringVar(&opts.Repo, "repo", "", "name of the p4 [[repo]] in the config (required)")
	fl.StringVar(&opts.AicrPath, "aicr", "", "aicr or aicr-notify binary path on the Perforce server (default: the aicr-notify beside this binary, else this binary, or C:\\Program Files\\aicr\\aicr.exe with --windows)")
	fl.BoolVar(&opts.Windows, "windows", false, "print lines for a p4d running on Windows")
	fl.StringVar(&opts.Name, "name", "", "trigger name (default aicr-<repo>, or aicr-<repo>-shelve with --shelve, so each repo's lines are told apart in p4 triggers)")
	fl.BoolVar(&opts.Shelve, "shelve", false, "print shelve-commit lines instead: review every shelved change, published to the repo's shelve_channels")
	addFormatFlag(cmd, &opts.Format)
	return cmd
}

// installP4Output is `aicr install p4-trigger --format json`: the lines
// for the triggers table (the steps still go to stderr).
type installP4Output struct {
	Repo  string   `json:"repo"`
	Aicr  string   `json:"aicr"`
	Lines []string `json:"lines"`
}

func installP4TriggerRun(_ context.Context, o *InstallP4Options) error {
	f := o.Factory
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	repo, ok := cfg.Repo(o.Repo)
	if !ok {
		return usageErrorf("--repo %q: no such [[repo]] in %s; configured: %s", o.Repo, cfg.Path, strings.Join(cfg.RepoNames(), ", "))
	}
	pc, ok := repo.Settings.(*p4.Config)
	if !ok {
		return usageErrorf("--repo %q is kind %q, not p4", o.Repo, repo.Kind)
	}
	aicrPath := o.AicrPath
	if aicrPath == "" {
		if o.Windows {
			aicrPath = `C:\Program Files\aicr\aicr.exe`
		} else if p, err := hookBinary(f, ""); err == nil {
			aicrPath = p
		} else {
			aicrPath = "/usr/local/bin/aicr"
		}
	}
	name := o.Name
	if name == "" {
		name = defaultTriggerName(o.Repo)
	}
	lines := P4TriggerLines(name, pc.DepotPaths, aicrPath, cfg.Path, o.Repo)
	if o.Shelve {
		if o.Name == "" {
			name = defaultShelveTriggerName(o.Repo)
		}
		lines = P4ShelveTriggerLines(name, pc.DepotPaths, aicrPath, cfg.Path, o.Repo)
	}
	err = newExporter(f.IOStreams, o.Format).Write(installP4Output{Repo: o.Repo, Aicr: aicrPath, Lines: lines}, func(w io.Writer) error {
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
		return nil
	})
	if err != nil {
		return err
	}
	test := "submit a small change under %[3]s"
	published := "a submit never waits or fails"
	if o.Shelve {
		// The shelve-commit line fires on p4 shelve, never on a submit.
		test = "shelve a small change under %[3]s (p4 shelve -c N)"
		published = "a shelve never waits or fails; the shelf's run is shelf-<change>-<ms>"
	}
	fmt.Fprintf(f.IOStreams.ErrOut, `
Install (as a Perforce super user):
  1. Put %[1]s on the Perforce server (aicr-notify: the trigger client
     alone, from make build; or aicr itself) and make %[2]s readable by
     the account p4d runs as; [notify] needs secret_file (p4d runs triggers
     with a bare environment) and a spool_dir that account can write.
  2. Run 'p4 triggers', paste the lines above under "Triggers:", save.
     Check with 'p4 triggers -o'.
  3. Test: `+test+`, then on the daemon host run
     'aicr audit list --repo %[4]s'. If nothing arrives, read
     <spool_dir>/notify.log on the Perforce server; events that could not be
     delivered wait in <spool_dir> and are sent later.
The trigger returns at once and always exits 0, so `+published+`.
`, aicrPath, cfg.Path, strings.Join(pc.DepotPaths, " "), o.Repo)
	return nil
}

// defaultTriggerName is aicr-<repo> with anything but letters, digits,
// '-' and '_' replaced: a trigger name is one word in the triggers
// table, and two repos on one server must not share one.
func defaultTriggerName(repo string) string {
	b := []byte("aicr-" + repo)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
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
	command := q(aicrPath) + " " + triggers.NotifyCommand(aicrPath, triggers.KindP4) + " --config " + q(configPath) + " --repo " + q(repo) +
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

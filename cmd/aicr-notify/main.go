// Command aicr-notify is the hook and trigger client alone: what
// `aicr notify svn|p4` does, in a binary that links only package triggers.
// svn and p4d wait for the hook process, and the full aicr binary spends
// most of its start-up initialising packages the hook never uses (MCP JSON
// schemas, secret-scanning rules, Markdown), so `aicr install svn-hook` and
// `aicr install p4-trigger` write this binary into hooks when it sits next
// to aicr. Its command line is that of `aicr notify`, without "notify"
// (which is accepted too):
//
//	aicr-notify svn [--config FILE] [--repo NAME] REPOS_PATH REV [TXN]
//	aicr-notify p4 --config FILE --repo NAME --change N [--user U] [--client C] [--serverport P] [--serverid S] [--foreground]
//
// Like aicr notify it always exits 0, except for version and help.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/aicr-dev/aicr/internal/buildinfo"
	"github.com/aicr-dev/aicr/triggers"
)

var version = buildinfo.Version

const usage = `usage:
  aicr-notify svn [--config FILE] [--repo NAME] REPOS_PATH REV [TXN]
  aicr-notify p4 --config FILE --repo NAME --change N [--user U] [--client C]
                 [--serverport P] [--serverid S] [--foreground] [--shelve]
  aicr-notify version

The hook and trigger client of aicr, as 'aicr notify svn|p4' (see 'aicr notify
--help'). --config defaults to $` + triggers.ConfigPathEnv + `, else ` + triggers.DefaultConfigPath + `.
It always exits 0 so a commit is never blocked; problems go to stderr.
--shelve marks a shelved change (the shelve-commit trigger) for review
before it is submitted.
`

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, triggers.StampLog(os.Stderr)))
}

func run(ctx context.Context, argv []string, stdout, stderr io.Writer) int {
	args := argv
	if len(args) > 0 && args[0] == "notify" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprint(stderr, "aicr-notify: say svn or p4\n"+usage)
		return 0
	}
	switch args[0] {
	case "version", "--version":
		fmt.Fprintln(stdout, "aicr-notify", version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	case "svn":
		notifySVN(ctx, args[1:], stderr)
	case "p4":
		notifyP4(ctx, argv, args[1:], stderr)
	default:
		fmt.Fprintf(stderr, "aicr-notify: unknown command %q: say svn or p4\n", args[0])
	}
	return 0
}

func notifySVN(ctx context.Context, args []string, stderr io.Writer) {
	o := triggers.SVNNotify{}
	flags := newFlagArgs(&o.ConfigPath)
	o.RegisterFlags(flags)
	rest, err := flags.parse(args)
	if err != nil {
		fmt.Fprintln(stderr, "aicr notify:", err)
		return
	}
	o.Args = rest
	if os.Getenv(triggers.NotifyCheckEnv) != "" {
		doctorDryRun(ctx, args, stderr)
		return
	}
	if err := triggers.RunNotifySVN(ctx, o, stderr); err != nil {
		fmt.Fprintln(stderr, "aicr notify:", err)
	}
}

func notifyP4(ctx context.Context, argv, args []string, stderr io.Writer) {
	o := triggers.P4Notify{Argv: argv}
	flags := newFlagArgs(&o.ConfigPath)
	o.RegisterFlags(flags)
	rest, err := flags.parse(args)
	if err != nil {
		fmt.Fprintln(stderr, "aicr notify p4:", err)
		return
	}
	o.Args = rest
	if err := triggers.RunNotifyP4(ctx, o, stderr); err != nil {
		fmt.Fprintln(stderr, "aicr notify p4:", err)
	}
}

// doctorDryRun hands aicr doctor's dry run (triggers.NotifyCheckEnv) to the
// aicr next to this binary: the checks belong to package doctor, which this
// binary must not link, and a dry run is never on a commit's path.
func doctorDryRun(ctx context.Context, args []string, stderr io.Writer) {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "aicr notify: dry run for aicr doctor: find own binary:", err)
		return
	}
	name := "aicr"
	if strings.EqualFold(filepath.Ext(exe), ".exe") {
		name += ".exe"
	}
	aicr := filepath.Join(filepath.Dir(exe), name)
	cmd := exec.CommandContext(ctx, aicr, append([]string{"notify", "svn"}, args...)...)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(stderr, "aicr notify: dry run for aicr doctor: run %s (aicr-notify leaves the checks to the aicr binary beside it; install both together): %v\n", aicr, err)
	}
}

// flagArgs is the triggers.FlagSet of this binary: the notify flags are
// registered on it from triggers' table, as on cobra's in aicr. It is not
// the standard library's flag package because that stops at the first
// positional argument and takes -name too, and svn's and p4d's hook lines
// are read as cobra reads them.
type flagArgs struct {
	strs  map[string]*string
	bools map[string]*bool
}

// newFlagArgs starts a flag set with --config bound to config, set to the
// default path.
func newFlagArgs(config *string) *flagArgs {
	f := &flagArgs{strs: map[string]*string{}, bools: map[string]*bool{}}
	f.StringVar(config, "config", triggers.ConfigPath(), triggers.ConfigFlagUsage)
	return f
}

func (f *flagArgs) StringVar(p *string, name, value, _ string) {
	*p = value
	f.strs[name] = p
}

func (f *flagArgs) BoolVar(p *bool, name string, value bool, _ string) {
	*p = value
	f.bools[name] = p
}

func (f *flagArgs) parse(args []string) ([]string, error) { return parseFlags(args, f.strs, f.bools) }

// parseFlags reads --name VALUE, --name=VALUE and --bool[=true|false]
// anywhere among the positional arguments, as cobra does for aicr notify;
// "--" ends the flags.
func parseFlags(args []string, strs map[string]*string, bools map[string]*bool) ([]string, error) {
	rest := []string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(rest, args[i+1:]...), nil
		}
		if !strings.HasPrefix(a, "--") || a == "--" {
			rest = append(rest, a)
			continue
		}
		name, value, hasValue := strings.Cut(a[2:], "=")
		if p, ok := strs[name]; ok {
			if !hasValue {
				if i+1 >= len(args) {
					return nil, fmt.Errorf("flag needs an argument: --%s", name)
				}
				i++
				value = args[i]
			}
			*p = value
			continue
		}
		if p, ok := bools[name]; ok {
			switch {
			case !hasValue || value == "true":
				*p = true
			case value == "false":
				*p = false
			default:
				return nil, fmt.Errorf("invalid argument %q for --%s: want true or false", value, name)
			}
			continue
		}
		return nil, fmt.Errorf("unknown flag: --%s", name)
	}
	return rest, nil
}

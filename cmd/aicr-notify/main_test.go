package main

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/triggers"
)

func TestParseFlagsAcceptsWhatCobraAccepts(t *testing.T) {
	var config, repo string
	var fg bool
	strs := map[string]*string{"config": &config, "repo": &repo}
	bools := map[string]*bool{"foreground": &fg}
	rest, err := parseFlags([]string{"/srv/svn/main", "--config", "/etc/a.toml", "42", "--repo=main", "--foreground", "--", "--txn"}, strs, bools)
	if err != nil {
		t.Fatal(err)
	}
	if config != "/etc/a.toml" || repo != "main" || !fg {
		t.Fatalf("config %q repo %q foreground %v", config, repo, fg)
	}
	if want := []string{"/srv/svn/main", "42", "--txn"}; !reflect.DeepEqual(rest, want) {
		t.Fatalf("positional %q, want %q", rest, want)
	}
	for _, bad := range [][]string{{"--config"}, {"--colour", "x"}, {"--foreground=maybe"}} {
		if _, err := parseFlags(bad, strs, bools); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// Whatever is wrong, a hook exits 0 and says why on stderr.
func TestRunAlwaysExitsZeroAndExplains(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.toml")
	cases := map[string][]string{
		"no command":      {},
		"unknown command": {"git"},
		"bad flag":        {"svn", "--colour", "x"},
		"too few args":    {"svn", "--config", missing, "/srv/svn/main"},
		"bad revision":    {"notify", "svn", "--config", missing, "/srv/svn/main", "x1"},
		"p4 no repo":      {"p4", "--config", missing, "--change", "7"},
	}
	for name, argv := range cases {
		var stdout, stderr strings.Builder
		if code := run(context.Background(), argv, &stdout, &stderr); code != 0 {
			t.Errorf("%s: exit %d", name, code)
		}
		if stderr.Len() == 0 {
			t.Errorf("%s: nothing on stderr", name)
		}
	}
}

// A config with a syntax error still keeps the event: the hook salvages
// spool_dir and secret_file by a line scan and spools it, saying so.
func TestSVNWithBrokenConfigSpools(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "aicr.toml")
	if err := os.WriteFile(cfg, []byte("[notify]\nspool_dir = \"spool\"\nsecret_file = \"secret\"\nthis is not toml\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	run(context.Background(), []string{"svn", "--config", cfg, "--repo", "main", "/srv/svn/main", "3"}, &stdout, &stderr)
	names, _ := filepath.Glob(filepath.Join(dir, "spool", "*.json"))
	if len(names) != 1 || !strings.Contains(stderr.String(), "spooled") {
		t.Fatalf("spooled %v; stderr:\n%s", names, stderr.String())
	}
}

// --help lists every flag the p4 trigger line may carry, --shelve too
// (the shelve-commit line aicr install p4-trigger prints uses it).
func TestHelpListsShelve(t *testing.T) {
	var stdout, stderr strings.Builder
	run(context.Background(), []string{"--help"}, &stdout, &stderr)
	if help := stdout.String() + stderr.String(); !strings.Contains(help, "--shelve") {
		t.Errorf("aicr-notify --help omits --shelve:\n%s", help)
	}
}

// The usage lines name exactly the flags each command registers from
// triggers' table, so the help cannot drift from what aicr notify takes.
func TestUsageNamesTheRegisteredFlags(t *testing.T) {
	synopsis, _, _ := strings.Cut(usage, "\n\n")
	svnLine, p4Lines, ok := strings.Cut(synopsis, "\n  aicr-notify p4")
	if !ok {
		t.Fatalf("no p4 line in:\n%s", synopsis)
	}
	p4Lines, _, _ = strings.Cut(p4Lines, "\n  aicr-notify version")
	var svn triggers.SVNNotify
	svnFlags := newFlagArgs(&svn.ConfigPath)
	svn.RegisterFlags(svnFlags)
	var p4 triggers.P4Notify
	p4Flags := newFlagArgs(&p4.ConfigPath)
	p4.RegisterFlags(p4Flags)
	for _, tc := range []struct {
		name  string
		line  string
		flags *flagArgs
	}{{"svn", svnLine, svnFlags}, {"p4", p4Lines, p4Flags}} {
		want := []string{}
		for n := range tc.flags.strs {
			want = append(want, n)
		}
		for n := range tc.flags.bools {
			want = append(want, n)
		}
		got := []string{}
		for _, m := range regexp.MustCompile(`--([a-z]+)`).FindAllStringSubmatch(tc.line, -1) {
			got = append(got, m[1])
		}
		sort.Strings(want)
		sort.Strings(got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("usage of %s names %q; the command registers %q", tc.name, got, want)
		}
	}
}

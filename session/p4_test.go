package session

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/daemon"
	"github.com/aicr-dev/aicr/internal/p4emu"
	"github.com/aicr-dev/aicr/vcs"
)

// p4Adapters builds the p4 emulator and a config whose one repo reads
// depot d through it.
func p4Adapters(t *testing.T, d *p4emu.Depot) map[string]vcs.Adapter {
	t.Helper()
	dir := t.TempDir()
	emu := filepath.Join(dir, "p4")
	if out, err := exec.Command("go", "build", "-o", emu, "github.com/aicr-dev/aicr/internal/p4emu/p4").CombinedOutput(); err != nil {
		t.Fatalf("build the p4 emulator: %v\n%s", err, out)
	}
	depot := filepath.Join(dir, "depot.json")
	if err := d.Save(depot); err != nil {
		t.Fatal(err)
	}
	wrapper, err := p4emu.WriteWrapper(filepath.Join(dir, "bin"), emu, depot, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("AICR_SESSION_TEST_SECRET", "session-test-secret")
	var paths []string
	for _, p := range p4emu.DepotPaths {
		paths = append(paths, strconv.Quote(p))
	}
	toml := `[daemon]
data_dir = "` + filepath.Join(dir, "data") + `"
secret_env = "AICR_SESSION_TEST_SECRET"

[agent]
kind = "builtin"

[[repo]]
name = "depot"
kind = "p4"
port = "localhost:1666"
user = "aicr"
p4_path = "` + wrapper + `"
depot_paths = [` + strings.Join(paths, ", ") + `]
`
	cfg, err := config.Parse("aicr.toml", filepath.Join(dir, "aicr.toml"), []byte(toml))
	if err != nil {
		t.Fatal(err)
	}
	parts, err := daemon.Build(cfg, daemon.Deps{}, daemon.BuildOptions{NoChannels: true})
	if err != nil {
		t.Fatal(err)
	}
	return parts.Adapters
}

// p4-shelf reads the shelved content through FetchShelf, p4-change the
// submitted change through Fetch; both answer context requests.
func TestP4Targets(t *testing.T) {
	d := p4emu.Fixture()
	shelf := d.Shelve(&p4emu.Change{User: "bob", Client: "bob-ws", Desc: "Not submitted yet\n", Files: []*p4emu.File{
		{Path: "//depot/main/src/shelved_new.c", Action: "add", Type: "text", Content: []byte("int fresh(void) { return 2; }\n")},
	}})
	ads := p4Adapters(t, d)
	ctx := context.Background()

	tgt, err := ParseTarget("p4-shelf:" + strconv.Itoa(shelf.Num))
	if err != nil {
		t.Fatal(err)
	}
	f, err := tgt.fetch(ctx, ads, "depot", layoutIn(t))
	if err != nil {
		t.Fatal(err)
	}
	if n := filesByPath(f.change)["depot/main/src/shelved_new.c"]; n.Action != vcs.ActionAdd || n.Skipped != "" || !n.IsAdded(1) {
		t.Errorf("shelved file: %+v (files %+v)", n, f.change.Files)
	}
	if f.change.Repo != "depot" || f.replayer == nil {
		t.Errorf("shelf: repo %q replayer %v", f.change.Repo, f.replayer)
	}

	tgt, _ = ParseTarget("p4-change:" + strconv.Itoa(p4emu.ChangeEdits))
	f, err = tgt.fetch(ctx, ads, "depot", layoutIn(t))
	if err != nil {
		t.Fatal(err)
	}
	if app := filesByPath(f.change)["depot/main/src/app.c"]; app.Action != vcs.ActionModify || app.Skipped != "" {
		t.Errorf("p4-change app.c: %+v", app)
	}
	// A submitted change is not a shelf.
	tgt, _ = ParseTarget("p4-shelf:" + strconv.Itoa(p4emu.ChangeEdits))
	if _, err := tgt.fetch(ctx, ads, "depot", layoutIn(t)); err == nil {
		t.Error("a submitted change was read as a shelf")
	}
	// A working copy is not read through a p4 repo.
	wc, _ := ParseTarget("svn-wc:" + t.TempDir())
	if _, err := wc.fetch(ctx, ads, "depot", layoutIn(t)); err == nil || !strings.Contains(err.Error(), "not an svn repo") {
		t.Errorf("svn-wc through a p4 repo: %v", err)
	}
}

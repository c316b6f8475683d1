package p4_test

import (
	"os"
	"strconv"
	"testing"

	"github.com/aicr-dev/aicr/internal/p4emu"
	"github.com/aicr-dev/aicr/vcs"
	. "github.com/aicr-dev/aicr/vcs/p4"
	"github.com/aicr-dev/aicr/vcs/vcstest"
)

// p4Harness commits changelists to the emulator's depot under
// //depot/main/conf/.
type p4Harness struct {
	e     *emuEnv
	depot *p4emu.Depot
	path  string
}

const confRoot = "depot/main/conf/"

func (h *p4Harness) Commit(t *testing.T, desc string, ops ...vcstest.FileOp) string {
	t.Helper()
	c := &p4emu.Change{User: "ann", Client: "ann-ws", Desc: desc + "\n"}
	for _, op := range ops {
		typ := "text"
		if op.Binary {
			typ = "binary"
		}
		if op.Symlink {
			typ = "symlink"
		}
		f := &p4emu.File{Path: "//" + confRoot + op.Path, Type: typ, Content: op.Content}
		switch op.Op {
		case vcstest.OpAdd:
			f.Action = "add"
		case vcstest.OpEdit:
			f.Action = "edit"
		case vcstest.OpDelete:
			f.Action, f.Content = "delete", nil
		case vcstest.OpMove:
			f.Action, f.From = "move/add", "//"+confRoot+op.From
			c.Files = append(c.Files, &p4emu.File{Path: "//" + confRoot + op.From, Action: "move/delete", Type: typ})
		}
		c.Files = append(c.Files, f)
	}
	h.depot.Submit(c)
	if err := h.depot.Save(h.path); err != nil {
		t.Fatal(err)
	}
	return strconv.Itoa(c.Num)
}

func (h *p4Harness) Adapter(t *testing.T, scope vcs.Scope) vcs.Adapter {
	cfg := h.e.cfg
	cfg.Scope = scope
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func (h *p4Harness) ChangePath(rel string) string { return confRoot + rel }

func TestConformance(t *testing.T) {
	d := p4emu.Fixture()
	e := newEmu(t, d)
	vcstest.Run(t, &p4Harness{e: e, depot: d, path: os.Getenv(p4emu.EnvDepot)})
}

package daemon

import (
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/triggers"
)

const shelveBase = `[daemon]
secret_env = "AICR_TEST_SECRET"

[[repo]]
name = "main"
kind = "svn"
url = "file:///srv/svn/main"
channels = ["team"]

[[channel]]
name = "team"
kind = "console"
`

// A shelve event is queued under its own revision, only for p4 repos; an
// unknown kind is refused with the kinds the daemon knows.
func TestCheckShelveEvent(t *testing.T) {
	at := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	ev := triggers.Event{V: 1, VCS: "p4", Repo: "depot", Revision: "12", Kind: triggers.KindShelve, SentAt: at}
	if code, msg := checkShelveEvent(&ev); code != "" || ev.Revision != triggers.ShelfRevision("12", at) {
		t.Errorf("shelve: %s %s %s", code, msg, ev.Revision)
	}
	ev = triggers.Event{V: 1, VCS: "svn", Repo: "main", Revision: "3", Kind: triggers.KindShelve, SentAt: at}
	if code, msg := checkShelveEvent(&ev); code != "invalid_event" || !strings.Contains(msg, "p4 repos") {
		t.Errorf("svn shelve: %s %s", code, msg)
	}
	ev = triggers.Event{V: 1, VCS: "p4", Repo: "depot", Revision: "3", Kind: "unshelve", SentAt: at}
	if code, msg := checkShelveEvent(&ev); code != "invalid_event" || !strings.Contains(msg, `unknown event kind "unshelve"`) {
		t.Errorf("unknown kind: %s %s", code, msg)
	}
	ev = triggers.Event{V: 1, VCS: "p4", Repo: "depot", Revision: "3"}
	if code, _ := checkShelveEvent(&ev); code != "" || ev.Revision != "3" {
		t.Errorf("a commit event changed: %+v", ev)
	}
}

// shelve_channels must name defined channels.
func TestShelveChannelsValidated(t *testing.T) {
	_, err := config.Parse("aicr.toml", "/etc/aicr/aicr.toml", []byte(strings.Replace(shelveBase, `channels = ["team"]`, "channels = [\"team\"]\nshelve_channels = [\"nope\"]", 1)))
	if err == nil || !strings.Contains(err.Error(), "shelve_channels") || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown shelve channel: %v", err)
	}
	cfg, err := config.Parse("aicr.toml", "/etc/aicr/aicr.toml", []byte(strings.Replace(shelveBase, `channels = ["team"]`, "channels = [\"team\"]\nshelve_channels = [\"team\"]", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := cfg.Repo("main"); len(r.ShelveChannels) != 1 {
		t.Errorf("shelve_channels: %+v", r)
	}
}

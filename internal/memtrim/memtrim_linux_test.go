package memtrim

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func fileRSS(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "RssFile:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

// The pages really leave the process, and the code they held still runs
// afterwards (it faults back in from the page cache).
func TestTrimDropsExecutablePagesAndCodeStillRuns(t *testing.T) {
	before := fileRSS(t)
	st, err := Trim()
	if err != nil {
		t.Fatal(err)
	}
	after := fileRSS(t)
	if st.ExecutableBytes <= 0 {
		t.Fatalf("Trim dropped no executable page (RssFile %d before)", before)
	}
	if after >= before {
		t.Fatalf("RssFile %d after Trim, %d before: nothing given back", after, before)
	}
	// Code and read-only data not used since start: a regexp compile,
	// number formatting, a file walk.
	re := regexp.MustCompile(`^(a|b)+c\d{2,}$`)
	if !re.MatchString("abac123") || strconv.FormatFloat(1.5, 'g', -1, 64) != "1.5" {
		t.Fatal("code behaves differently after Trim")
	}
	if _, err := filepath.Glob(filepath.Join(t.TempDir(), "*")); err != nil {
		t.Fatal(err)
	}
	if _, err := Trim(); err != nil { // twice is fine
		t.Fatal(err)
	}
}

func TestDroppableLeavesChangedAndWritableMappings(t *testing.T) {
	smaps := `00400000-01792000 r-xp 00000000 fd:00 123 /usr/bin/aicr
Rss:               12552 kB
Private_Dirty:      2048 kB
Anonymous:             0 kB
01792000-03001000 r--p 01392000 fd:00 123 /usr/bin/aicr
Rss:               12348 kB
Private_Dirty:         8 kB
Anonymous:             8 kB
03001000-030b7000 rw-p 02c01000 fd:00 123 /usr/bin/aicr
Rss:                 536 kB
Private_Dirty:       300 kB
Anonymous:           300 kB
030b7000-0510c000 rw-p 00000000 00:00 0
Rss:                 156 kB
Private_Dirty:       156 kB
7f0c9ef0b000-7f0c9f061000 r-xp 00026000 fd:00 77 /usr/lib/x86_64-linux-gnu/libc.so.6
Rss:                 916 kB
Private_Dirty:         0 kB
`
	path := filepath.Join(t.TempDir(), "smaps")
	if err := os.WriteFile(path, []byte(smaps), 0o600); err != nil {
		t.Fatal(err)
	}
	maps, err := readSmaps(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(maps) != 5 {
		t.Fatalf("parsed %d mappings, want 5: %+v", len(maps), maps)
	}
	got := droppable(maps, "/usr/bin/aicr")
	if len(got) != 1 || got[0].start != 0x400000 || got[0].rss != 12552*1024 {
		t.Fatalf("droppable = %+v, want only the clean text mapping", got)
	}
}

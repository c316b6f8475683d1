package triggers

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func testEvent(rev string) Event {
	return Event{V: ProtocolVersion, VCS: "svn", Repo: "main", Revision: rev, User: "alice", SentAt: time.Unix(1_700_000_000, 0).UTC()}
}

func TestSpoolWriteListReadRemove(t *testing.T) {
	s := Spool{Dir: filepath.Join(t.TempDir(), "missing", "spool"), Secret: []byte(testSecret)}
	if names, err := s.List(); err != nil || len(names) != 0 {
		t.Fatalf("List of missing dir = %v, %v; want empty, nil", names, err)
	}
	var written []string
	for _, rev := range []string{"3", "1", "2"} {
		name, err := s.Write(testEvent(rev))
		if err != nil {
			t.Fatalf("Write: %v", err)
		}
		written = append(written, name)
	}
	info, err := os.Stat(s.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm&0o007 != 0 || perm&0o070 == 0 {
		t.Fatalf("spool dir mode %v, want group-writable and private to others", perm)
	}
	// Things List must skip: temp files, subdirectories, the notify log.
	must(t, os.WriteFile(filepath.Join(s.Dir, ".tmp-123.json"), []byte("{"), 0o600))
	must(t, os.Mkdir(filepath.Join(s.Dir, "sub.json"), 0o700))
	must(t, os.WriteFile(filepath.Join(s.Dir, "notify.log"), []byte("x"), 0o600))

	names, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, written) {
		t.Fatalf("List = %v, want write order %v", names, written)
	}
	var revs []string
	for _, n := range names {
		ev, _, err := s.Read(n)
		if err != nil {
			t.Fatalf("Read %s: %v", n, err)
		}
		revs = append(revs, ev.Revision)
		if ev != testEvent(ev.Revision) {
			t.Fatalf("Read %s = %+v, want round trip of what was written", n, ev)
		}
	}
	if !slices.Equal(revs, []string{"3", "1", "2"}) {
		t.Fatalf("revisions in list order %v, want the write order 3 1 2", revs)
	}
	must(t, s.Remove(names[0]))
	must(t, s.Remove(names[0])) // gone already: not an error
	if names, _ := s.List(); !slices.Equal(names, written[1:]) {
		t.Fatalf("after Remove List = %v, want %v", names, written[1:])
	}
}

func TestSpoolNamesAreSafeAndUnique(t *testing.T) {
	s := Spool{Dir: t.TempDir(), Secret: []byte(testSecret)}
	ev := testEvent("../../etc/passwd")
	ev.Repo = "my repo/with:odd*chars"
	seen := map[string]bool{}
	for range 50 {
		name, err := s.Write(ev)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(name) != name || strings.ContainsAny(name, " /:*") {
			t.Fatalf("unsafe spool name %q", name)
		}
		if seen[name] {
			t.Fatalf("name %q written twice", name)
		}
		seen[name] = true
	}
	if names, _ := s.List(); len(names) != 50 {
		t.Fatalf("List has %d files, want 50", len(names))
	}
	for _, bad := range []string{"../x.json", "sub/x.json", ".tmp-1.json", "x.txt", ""} {
		if _, _, err := s.Read(bad); !errors.Is(err, ErrBadSpoolName) {
			t.Errorf("Read(%q) = %v, want ErrBadSpoolName", bad, err)
		}
	}
}

func TestSpoolReject(t *testing.T) {
	s := Spool{Dir: t.TempDir(), Secret: []byte(testSecret)}
	name, err := s.Write(testEvent("9"))
	must(t, err)
	must(t, s.Reject(name, "daemon answered 422 unknown_repo: unknown repo \"main\"\n"))
	if names, _ := s.List(); len(names) != 0 {
		t.Fatalf("rejected file still listed: %v", names)
	}
	kept, err := os.ReadFile(filepath.Join(s.Dir, RejectedDir, name))
	must(t, err)
	if !strings.Contains(string(kept), `"revision":"9"`) {
		t.Fatalf("rejected file content %q", kept)
	}
	reason, err := os.ReadFile(filepath.Join(s.Dir, RejectedDir, name+".reason"))
	must(t, err)
	if string(reason) != "daemon answered 422 unknown_repo: unknown repo \"main\"\n" {
		t.Fatalf("reason file %q", reason)
	}
}

func TestSpoolCorruptFileMovedAside(t *testing.T) {
	s := Spool{Dir: t.TempDir(), Secret: []byte(testSecret)}
	good, err := s.Write(testEvent("1"))
	must(t, err)
	bad := "00000000000000000001-main-2.json" // sorts before good
	must(t, os.WriteFile(filepath.Join(s.Dir, bad), []byte(`{"v":1,"repo":`), 0o600))
	empty := "00000000000000000002-main-3.json"
	must(t, os.WriteFile(filepath.Join(s.Dir, empty), []byte(`{"v":1}`), 0o600))

	names, err := s.List()
	must(t, err)
	var ok []string
	for _, n := range names {
		ev, _, err := s.Read(n)
		if errors.Is(err, ErrCorruptSpoolFile) {
			continue
		}
		if err != nil {
			t.Fatalf("Read %s: %v", n, err)
		}
		ok = append(ok, ev.Revision)
	}
	if !slices.Equal(ok, []string{"1"}) {
		t.Fatalf("readable events %v, want only revision 1", ok)
	}
	if names, _ := s.List(); !slices.Equal(names, []string{good}) {
		t.Fatalf("after drain List = %v, want only %s", names, good)
	}
	reason, err := os.ReadFile(filepath.Join(s.Dir, RejectedDir, bad+".reason"))
	must(t, err)
	if !strings.Contains(string(reason), "invalid JSON") {
		t.Fatalf("reason %q does not give the parse error", reason)
	}
	if _, err := os.Stat(filepath.Join(s.Dir, RejectedDir, empty+".reason")); err != nil {
		t.Fatalf("event without repo not rejected: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

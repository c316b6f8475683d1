package triggers

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Entries lists pending then rejected files without moving anything:
// each with its event, whether its signature holds (or that it could not
// be checked without a secret), and a rejected file's reason.
func TestSpoolEntries(t *testing.T) {
	s := Spool{Dir: filepath.Join(t.TempDir(), "spool"), Secret: []byte(testSecret)}
	good, err := s.Write(testEvent("7"))
	must(t, err)
	other, err := Spool{Dir: s.Dir, Secret: []byte("another secret")}.Write(testEvent("8"))
	must(t, err)
	refused, err := s.Write(testEvent("9"))
	must(t, err)
	must(t, s.Reject(refused, "daemon answered 422 unknown_repo: the running daemon does not know repo main"))

	entries, err := s.Entries()
	must(t, err)
	if len(entries) != 3 {
		t.Fatalf("%d entries: %+v", len(entries), entries)
	}
	byName := map[string]SpoolEntry{}
	for _, e := range entries {
		byName[e.Name] = e
	}
	if e := byName[good]; e.Rejected || e.Problem != "" || e.Repo != "main" || e.Revision != "7" || e.SpooledAt.IsZero() || e.Bytes == 0 {
		t.Errorf("good entry %+v", e)
	}
	if e := byName[other]; !strings.Contains(e.Problem, "signature does not match") {
		t.Errorf("entry signed with another secret: %+v", e)
	}
	if e := byName[refused]; !e.Rejected || !strings.Contains(e.Reason, "unknown_repo") || e.Revision != "9" {
		t.Errorf("rejected entry %+v", e)
	}
	if !entries[2].Rejected {
		t.Errorf("rejected files are not listed last: %+v", entries)
	}
	if _, err := os.Stat(s.Path(good)); err != nil {
		t.Errorf("Entries moved a file: %v", err)
	}

	noSecret, err := Spool{Dir: s.Dir}.Entries()
	must(t, err)
	for _, e := range noSecret {
		if !strings.Contains(e.Problem, "not checked") || e.Revision == "" {
			t.Errorf("without a secret: %+v", e)
		}
	}
}

// Restore brings a genuine rejected file back into the spool (reason file
// gone) and refuses one the secret does not verify.
func TestSpoolRestore(t *testing.T) {
	s := Spool{Dir: filepath.Join(t.TempDir(), "spool"), Secret: []byte(testSecret)}
	name, err := s.Write(testEvent("5"))
	must(t, err)
	must(t, s.Reject(name, "unknown repo"))
	must(t, s.Restore(name))
	if names, err := s.List(); err != nil || len(names) != 1 || names[0] != name {
		t.Fatalf("after Restore: %v, %v", names, err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir, RejectedDir, name+".reason")); !os.IsNotExist(err) {
		t.Errorf("reason file left behind: %v", err)
	}

	forged, err := Spool{Dir: s.Dir, Secret: []byte("attacker")}.Write(testEvent("6"))
	must(t, err)
	must(t, s.Reject(forged, "signature does not match"))
	if err := s.Restore(forged); err == nil || !strings.Contains(err.Error(), "stays where it is") {
		t.Fatalf("Restore of a forged file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir, RejectedDir, forged)); err != nil {
		t.Errorf("forged file moved: %v", err)
	}
	if err := s.Restore("../etc.json"); err == nil {
		t.Error("Restore accepted a path")
	}
}

//go:build unix

package triggers

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The spool belongs to the hook's account: these tests play that account,
// putting links and FIFOs where the daemon will look, and check that the
// daemon's side of the spool never writes, reads or deletes through them.

// daemonOnly is a file of the daemon's the hook's account must not reach:
// a model key, say.
func daemonOnly(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "llm-key")
	must(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

const hostileBad = "00000000000000000001-main-1.json"

// A reason file that is a link to a daemon file is replaced, not written
// through: before, the next reject truncated the daemon's file and wrote
// the reason into it.
func TestRejectDoesNotWriteThroughALinkedReasonFile(t *testing.T) {
	s := Spool{Dir: t.TempDir(), Secret: testSecret}
	key := daemonOnly(t, "sk-live-do-not-touch\n")
	must(t, os.Mkdir(filepath.Join(s.Dir, RejectedDir), 0o770))
	must(t, os.Symlink(key, filepath.Join(s.Dir, RejectedDir, hostileBad+".reason")))
	writeRaw(t, s, hostileBad, []byte("not json"))

	if _, _, err := s.Read(hostileBad); err == nil {
		t.Fatal("Read of a file that is not an event succeeded")
	}
	if got, err := os.ReadFile(key); err != nil || string(got) != "sk-live-do-not-touch\n" {
		t.Fatalf("the daemon's file behind the link is now %q, %v; want it untouched", got, err)
	}
	st, err := os.Lstat(filepath.Join(s.Dir, RejectedDir, hostileBad+".reason"))
	if err != nil || !st.Mode().IsRegular() {
		t.Fatalf("reason file %v, %v: want a regular file in place of the link", st, err)
	}
}

// A rejected/ that is a link (to data_dir) is refused: nothing is moved
// into data_dir, and the file stays in the spool with the reason saying
// what to do.
func TestRejectRefusesARejectedDirThatIsALink(t *testing.T) {
	s := Spool{Dir: t.TempDir(), Secret: testSecret}
	dataDir := t.TempDir()
	must(t, os.Symlink(dataDir, filepath.Join(s.Dir, RejectedDir)))
	writeRaw(t, s, hostileBad, []byte("not json"))

	_, _, err := s.Read(hostileBad)
	var rf *RejectedFileError
	ok := errors.As(err, &rf)
	if !ok || rf.MoveErr == nil {
		t.Fatalf("Read = %v; want a RejectedFileError that could not move the file", err)
	}
	if msg := rf.MoveErr.Error(); !strings.Contains(msg, "symbolic link, not a directory") || !strings.Contains(msg, "rm "+filepath.Join(s.Dir, RejectedDir)) {
		t.Fatalf("move error %q: want it to say rejected/ is a link and how to fix it", msg)
	}
	if entries, _ := os.ReadDir(dataDir); len(entries) != 0 {
		t.Fatalf("wrote %d entries into the linked directory: %v", len(entries), entries)
	}
	if _, err := os.Lstat(s.Path(hostileBad)); err != nil {
		t.Fatalf("refused file left the spool: %v", err)
	}
}

// Retention of rejected/ never follows a link: through a linked rejected/
// nothing is deleted, and a link inside rejected/ is removed itself, its
// target kept.
func TestPruneRejectedNeverFollowsLinks(t *testing.T) {
	future := time.Now().Add(time.Hour) // everything is older than this

	s := Spool{Dir: t.TempDir()}
	dataDir := t.TempDir()
	db := filepath.Join(dataDir, "aicr.db")
	must(t, os.WriteFile(db, []byte("the audit trail"), 0o600))
	must(t, os.Symlink(dataDir, filepath.Join(s.Dir, RejectedDir)))
	if n, err := s.PruneRejected(future); n != 0 || err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("PruneRejected through a linked rejected/ = %d, %v; want 0 and an error naming it", n, err)
	}
	if _, err := os.Stat(db); err != nil {
		t.Fatalf("data_dir file deleted through the link: %v", err)
	}

	s = Spool{Dir: t.TempDir()}
	rej := filepath.Join(s.Dir, RejectedDir)
	must(t, os.Mkdir(rej, 0o770))
	key := daemonOnly(t, "k")
	must(t, os.Symlink(key, filepath.Join(rej, "x.json")))
	must(t, syscall.Mkfifo(filepath.Join(rej, "y.json"), 0o600))
	must(t, os.WriteFile(filepath.Join(rej, "z.json"), []byte("x"), 0o640))
	if n, err := s.PruneRejected(future); n != 3 || err != nil {
		t.Fatalf("PruneRejected = %d, %v; want the link, the FIFO and the file removed", n, err)
	}
	if _, err := os.Stat(key); err != nil {
		t.Fatalf("the link's target was deleted: %v", err)
	}
}

// A file swapped for a link to a daemon-only file between listing and
// reading is refused without being read: nothing of what it points to is
// kept or quoted, and the link itself goes to rejected/.
func TestReadRefusesALinkSwappedInAfterListing(t *testing.T) {
	s := Spool{Dir: t.TempDir(), Secret: testSecret}
	const secretText = `{"api_key":"sk-live-0123456789abcdef"}`
	key := daemonOnly(t, secretText)
	writeRaw(t, s, hostileBad, signedEnvelope(t, testSecret, time.Now().Unix(), testEvent("1")))
	names, err := s.List()
	must(t, err)
	if len(names) != 1 {
		t.Fatalf("List = %v", names)
	}
	must(t, os.Remove(s.Path(names[0])))
	must(t, os.Symlink(key, s.Path(names[0])))

	_, _, err = s.Read(names[0])
	var rf *RejectedFileError
	ok := errors.As(err, &rf)
	if !ok {
		t.Fatalf("Read of a link = %v, want a RejectedFileError", err)
	}
	if !strings.Contains(rf.Reason, "symbolic link") {
		t.Fatalf("reason %q: want it to say the entry is a link", rf.Reason)
	}
	assertNothingOf(t, secretText, rf.Error(), rf.Reason, rf.Identity())
	if rf.Bytes != 0 || rf.SHA256 != "" {
		t.Fatalf("refused link: %d bytes, sha256 %q; want nothing read", rf.Bytes, rf.SHA256)
	}
	st, err := os.Lstat(filepath.Join(s.Dir, RejectedDir, names[0]))
	if err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("rejected/%s = %v, %v; want the link itself moved there", names[0], st, err)
	}
}

// A regular file that is not a signed event (a hard link or a copy of a
// daemon file, say) is identified by size and hash, never quoted, not even
// in a JSON error.
func TestReadKeepsNothingOfARefusedFile(t *testing.T) {
	s := Spool{Dir: t.TempDir(), Secret: testSecret}
	const secretText = "sk-live-0123456789abcdef\n"
	writeRaw(t, s, hostileBad, []byte(secretText))
	_, _, err := s.Read(hostileBad)
	var rf *RejectedFileError
	ok := errors.As(err, &rf)
	if !ok {
		t.Fatalf("Read = %v, want a RejectedFileError", err)
	}
	assertNothingOf(t, secretText, rf.Error(), rf.Reason)
	reason, err := os.ReadFile(filepath.Join(s.Dir, RejectedDir, hostileBad+".reason"))
	must(t, err)
	assertNothingOf(t, secretText, string(reason))
	if rf.Bytes != int64(len(secretText)) || rf.SHA256 != sha256Hex([]byte(secretText)) {
		t.Fatalf("identity %s: want its size and sha256", rf.Identity())
	}
}

// A FIFO (swapped in after listing) does not block the read: it is
// opened non-blocking, seen to be no regular file and set aside.
func TestReadDoesNotBlockOnAFIFO(t *testing.T) {
	s := Spool{Dir: t.TempDir(), Secret: testSecret}
	must(t, syscall.Mkfifo(s.Path(hostileBad), 0o660))
	done := make(chan error, 1)
	go func() { _, _, err := s.Read(hostileBad); done <- err }()
	select {
	case err := <-done:
		var rf *RejectedFileError
		ok := errors.As(err, &rf)
		if !ok || !strings.Contains(rf.Reason, "FIFO") {
			t.Fatalf("Read of a FIFO = %v; want it refused as a FIFO", err)
		}
	case <-time.After(5 * time.Second):
		// Unblock the reader so the test binary can exit.
		if f, err := os.OpenFile(s.Path(hostileBad), os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("Read blocked on a FIFO")
	}
}

// assertNothingOf fails when any text quotes a run of 6 or more bytes of
// secret (or its first byte in quotes, as a JSON error would).
func assertNothingOf(t *testing.T, secret string, texts ...string) {
	t.Helper()
	secret = strings.TrimSpace(secret)
	for _, text := range texts {
		for i := 0; i+6 <= len(secret); i++ {
			if strings.Contains(text, secret[i:i+6]) {
				t.Fatalf("%q quotes the refused file (%q)", text, secret[i:i+6])
			}
		}
		if strings.Contains(text, "'"+secret[:1]+"'") {
			t.Fatalf("%q quotes the refused file's first byte", text)
		}
	}
}

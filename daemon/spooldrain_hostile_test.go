//go:build unix

package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/triggers"
)

// swapAfterList makes the hook's account's move: between the drain's
// listing and its reads, every listed file is replaced by swap.
func swapAfterList(t *testing.T, swap func(path string)) {
	t.Helper()
	afterSpoolList = func(dir string, names []string) {
		for _, n := range names {
			path := filepath.Join(dir, n)
			if err := os.Remove(path); err != nil {
				t.Error(err)
			}
			swap(path)
		}
	}
	t.Cleanup(func() { afterSpoolList = nil })
}

// Issue 22 B6: a spooled file swapped for a link to a daemon-only file
// after the listing was read through the link, and its first 4 KiB went
// into rejected_events, which the hook's group can read (a model key came
// back this way). Now the link is refused unread and the row keeps no
// payload.
func TestDrainKeepsNothingOfALinkSwappedInAfterListing(t *testing.T) {
	d, store, sp := newDrainFixture(t)
	const key = "sk-live-0123456789abcdefghijklmnop"
	keyFile := filepath.Join(t.TempDir(), "llm-key")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := sp.Write(spoolEvent("main", "7")); err != nil {
		t.Fatal(err)
	}
	swapAfterList(t, func(path string) {
		if err := os.Symlink(keyFile, path); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := d.drain(context.Background(), sp); err != nil {
		t.Fatal(err)
	}
	rows, err := store.ListRejectedEvents(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 {
		t.Fatalf("rejected rows %+v, want the link's", rows)
	}
	if len(rows[0].Payload) != 0 || strings.Contains(rows[0].Reason, key[:8]) {
		t.Fatalf("rejected row keeps %q (reason %q): want no payload and nothing of the file", rows[0].Payload, rows[0].Reason)
	}
	if !strings.Contains(rows[0].Reason, "symbolic link") {
		t.Fatalf("reason %q: want it to say the spool entry was a link", rows[0].Reason)
	}
}

// A FIFO swapped in after the listing blocked the whole drain (and every
// spool after it) for good; now it is set aside and the drain finishes.
func TestDrainIsNotBlockedByAFIFO(t *testing.T) {
	d, _, sp := newDrainFixture(t)
	if _, err := sp.Write(spoolEvent("main", "8")); err != nil {
		t.Fatal(err)
	}
	var fifo string
	swapAfterList(t, func(path string) {
		fifo = path
		if err := syscall.Mkfifo(path, 0o660); err != nil {
			t.Fatal(err)
		}
	})
	done := make(chan error, 1)
	go func() { _, err := d.drain(context.Background(), sp); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		<-done
		t.Fatal("the drain blocked on a FIFO")
	}
	if st, err := os.Lstat(filepath.Join(sp.Dir, triggers.RejectedDir, filepath.Base(fifo))); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("FIFO in rejected/: %v, %v; want it set aside", st, err)
	}
}

// Issue 22 B5: a rejected/ that is a link to data_dir had every file
// there older than spool_leftovers deleted by retention. Now retention
// refuses it and deletes nothing; a link inside a real rejected/ is
// removed itself, its target kept.
func TestRetentionDoesNotDeleteThroughLinksInTheSpool(t *testing.T) {
	f := newRetentionFixture(t)
	old := f.now.Add(-60 * 24 * time.Hour)
	dataDir := t.TempDir()
	db := filepath.Join(dataDir, "aicr.db")
	keyFile := filepath.Join(t.TempDir(), "llm-key")
	for _, p := range []string{db, keyFile} {
		if err := os.WriteFile(p, []byte("daemon only"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	linked := filepath.Join(t.TempDir(), "spool")
	real := filepath.Join(t.TempDir(), "spool")
	for _, dir := range []string{linked, real} {
		if err := os.MkdirAll(dir, 0o770); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(dataDir, filepath.Join(linked, triggers.RejectedDir)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(real, triggers.RejectedDir), 0o770); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(real, triggers.RejectedDir, "00000000000000000001-main-1.json")
	if err := os.Symlink(keyFile, link); err != nil {
		t.Fatal(err)
	}
	// The link's own mtime is now; retention judges the link, not its
	// (old) target, so it is kept until it is old itself.
	job := f.job(config.Retention{SpoolLeftovers: 30 * 24 * time.Hour})
	job.spoolDirs = []string{linked, real}
	job.pruneSpools()
	if !exists(t, db) {
		t.Fatal("retention deleted data_dir's aicr.db through a rejected/ link")
	}
	if !exists(t, keyFile) {
		t.Fatal("retention deleted the target of a link in rejected/")
	}
	f.now = time.Now().Add(31 * 24 * time.Hour)
	job = f.job(config.Retention{SpoolLeftovers: 30 * 24 * time.Hour})
	job.spoolDirs = []string{linked, real}
	if n := job.pruneSpools(); n != 1 {
		t.Errorf("removed %d, want the old link in rejected/", n)
	}
	if _, err := os.Lstat(link); err == nil {
		t.Error("the old link in rejected/ was kept")
	}
	if !exists(t, db) || !exists(t, keyFile) {
		t.Fatal("retention deleted a daemon file through a link")
	}
}

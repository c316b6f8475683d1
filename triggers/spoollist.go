package triggers

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// SpoolEntry is one file in a spool, as `aicr spool list` shows it.
type SpoolEntry struct {
	Dir      string `json:"dir"`
	Name     string `json:"name"`
	Rejected bool   `json:"rejected"`
	VCS      string `json:"vcs,omitempty"`
	Repo     string `json:"repo,omitempty"`
	Revision string `json:"revision,omitempty"`
	// SpooledAt is the envelope's timestamp (when the hook spooled it);
	// zero when the file does not parse.
	SpooledAt time.Time `json:"spooled_at,omitzero"`
	Bytes     int64     `json:"bytes"`
	// Problem is why a drain would refuse the file (bad signature,
	// unsigned, not an event); empty for a good one.
	Problem string `json:"problem,omitempty"`
	// Reason is, for a rejected file, why it was set aside.
	Reason string `json:"reason,omitempty"`
}

// Entries lists the pending files (oldest first) and then the rejected
// ones, each decoded without moving or changing anything. Without a Secret
// signatures are not checked, and Problem says so.
func (s Spool) Entries() ([]SpoolEntry, error) {
	pending, err := s.List()
	if err != nil {
		return nil, err
	}
	if err := s.checkRejectedDir(); err != nil {
		return nil, err
	}
	rejected, err := Spool{Dir: filepath.Join(s.Dir, RejectedDir)}.List()
	if err != nil {
		return nil, err
	}
	out := make([]SpoolEntry, 0, len(pending)+len(rejected))
	for _, name := range pending {
		out = append(out, s.entry(s.Dir, name, false))
	}
	for _, name := range rejected {
		e := s.entry(filepath.Join(s.Dir, RejectedDir), name, true)
		if b, _, err := readCapped(filepath.Join(s.Dir, RejectedDir, name+reasonExt), maxReasonBytes); err == nil {
			e.Reason = strings.TrimSpace(string(b))
		}
		out = append(out, e)
	}
	return out, nil
}

// maxReasonBytes bounds a .reason file read; the daemon writes one line.
const maxReasonBytes = 16 << 10

// checkRejectedDir refuses a RejectedDir that is not a real directory, so
// a listing never reads through a link the hook's account put there.
func (s Spool) checkRejectedDir() error {
	dir, err := openDir(s.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer dir.Close()
	rej, err := openRejected(dir, false)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return rej.Close()
}

func (s Spool) entry(dir, name string, rejected bool) SpoolEntry {
	e := SpoolEntry{Dir: dir, Name: name, Rejected: rejected}
	body, size, err := readCapped(filepath.Join(dir, name), MaxSpoolFileBytes)
	e.Bytes = size
	if err != nil {
		e.Problem = "unreadable: " + err.Error()
		return e
	}
	check := s
	if len(s.Secret) == 0 {
		// Decode with a throwaway secret to get the event, then say the
		// signature was not checked rather than that it is wrong.
		check.Secret = []byte{0}
	}
	ev, at, reason := check.decode(body, size)
	if reason != "" && strings.HasPrefix(reason, "signature does not match") && len(s.Secret) == 0 {
		var env spoolEnvelope
		if json.Unmarshal(body, &env) == nil && json.Unmarshal(env.Event, &ev) == nil {
			at, reason = time.Unix(env.Timestamp, 0), "signature not checked: no secret to check it with"
		}
	}
	e.Problem = reason
	e.VCS, e.Repo, e.Revision, e.SpooledAt = ev.VCS, ev.Repo, ev.Revision, at
	return e
}

// Restore moves a rejected file back into the spool, for a re-send once
// its cause is fixed (a repo added to the daemon's config). Only a file
// whose signature this Spool's Secret verifies comes back: re-signing a
// forged file would launder it into an event.
func (s Spool) Restore(name string) error {
	if _, err := s.path(name); err != nil {
		return err
	}
	if len(s.Secret) == 0 {
		return ErrNoSecret
	}
	dir, err := openDir(s.Dir)
	if err != nil {
		return fmt.Errorf("open spool: %w", err)
	}
	defer dir.Close()
	rej, err := openRejected(dir, false)
	if err != nil {
		return fmt.Errorf("open rejected dir: %w", err)
	}
	defer rej.Close()
	body, size, err := readEntryAt(rej, name, MaxSpoolFileBytes)
	if err != nil {
		return fmt.Errorf("read rejected file: %w", err)
	}
	if _, _, reason := s.decode(body, size); reason != "" {
		return fmt.Errorf("rejected file %s stays where it is: %s", name, reason)
	}
	if err := renameAt(rej, name, dir, name); err != nil {
		return fmt.Errorf("move %s back into the spool: %w", name, err)
	}
	_ = removeAt(rej, name+reasonExt)
	return dir.Sync()
}

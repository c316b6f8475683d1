package triggers

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/hmacsig"
	"github.com/aicr-dev/aicr/internal/atomicfile"
)

// RejectedDir is the spool subdirectory for events the daemon refused
// permanently or that cannot be parsed. They wait there for an operator.
const RejectedDir = "rejected"

const (
	spoolExt       = ".json"
	reasonExt      = ".reason"
	spoolTmpPrefix = ".tmp-"
	// The setgid bit makes files a root-run hook writes inherit the spool
	// dir's group, so the daemon (owner or group member) can read them.
	spoolDirMode  = 0o770 | os.ModeSetgid
	spoolFileMode = 0o640
	// MaxSpoolFileBytes bounds what is read of a spool file. A real one is
	// a few hundred bytes; the intake takes bodies up to 64 KiB and the
	// envelope adds a little. Anything larger is not a hook's event.
	MaxSpoolFileBytes = 80 << 10
)

// spoolEnvelope is a spool file: the event body exactly as it was signed,
// with the timestamp and signature the hook made with its secret, so the
// daemon can tell a hook's event from a file anyone dropped in the spool.
type spoolEnvelope struct {
	Timestamp int64           `json:"timestamp"`
	Signature string          `json:"signature,omitempty"`
	Event     json.RawMessage `json:"event"`
}

var (
	// ErrCorruptSpoolFile means a spool file could not be parsed; Read has
	// already moved it to RejectedDir, so a drain can skip it.
	ErrCorruptSpoolFile = errors.New("corrupt spool file")
	// ErrBadSpoolName means a name is not a plain spool file name.
	ErrBadSpoolName = errors.New("not a spool file name")
)

// Spool is a directory of events that could not be delivered. Names sort
// oldest first, so draining in name order keeps commit order.
//
// Secret is the hook's signing secret: Write signs with it and Read
// verifies with it. A spool dir is writable by the hook's user and the
// daemon's group, so without the signature anyone who can write there
// could inject events the daemon would take as a hook's.
type Spool struct {
	Dir    string
	Secret []byte
}

// Write stores ev atomically (temp file, fsync, rename, fsync dir) and
// returns the new file's name inside Dir. Without a Secret the file is
// written unsigned, so the event is kept for an operator, but no drain
// will accept it (it lands in rejected/ with the reason).
func (s Spool) Write(ev Event) (string, error) {
	if s.Dir == "" {
		return "", errors.New("write spool: no spool directory configured")
	}
	body, err := s.encode(ev, time.Now())
	if err != nil {
		return "", err
	}
	dirInfo, err := ensureSpoolDir(s.Dir)
	if err != nil {
		return "", fmt.Errorf("create spool dir: %w", err)
	}
	tmpName, err := atomicfile.WriteTemp(s.Dir, spoolTmpPrefix+"*"+spoolExt, body, spoolFileMode, func(name string) error {
		if err := shareWithDir(name, dirInfo); err != nil {
			return fmt.Errorf("give spool file the spool dir's owner/group: %w", err)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("write spool file: %w", err)
	}
	published := false
	defer func() {
		if !published {
			os.Remove(tmpName)
		}
	}()
	// Not atomicfile.WriteFile's rename: two hooks may pick the same
	// name, and publish must never overwrite an event.
	name, err := s.publish(tmpName, ev)
	if err != nil {
		return "", err
	}
	published = true
	if err := atomicfile.SyncDir(s.Dir); err != nil {
		return name, fmt.Errorf("sync spool dir: %w", err)
	}
	return name, nil
}

// publish gives the temp file its final name. Two hooks can fire in the
// same nanosecond, so a hard link (which never overwrites) claims the name
// and a taken name moves the clock on by one.
func (s Spool) publish(tmpName string, ev Event) (string, error) {
	nanos := time.Now().UnixNano()
	for range 1000 {
		name := fmt.Sprintf("%020d-%s-%s%s", nanos, sanitize(ev.Repo), sanitize(ev.Revision), spoolExt)
		final := filepath.Join(s.Dir, name)
		err := os.Link(tmpName, final)
		if err == nil {
			os.Remove(tmpName)
			return name, nil
		}
		if errors.Is(err, os.ErrExist) {
			nanos++
			continue
		}
		// Some file systems have no hard links; fall back to rename after
		// checking the name is free.
		if _, statErr := os.Lstat(final); statErr == nil {
			nanos++
			continue
		}
		if err := os.Rename(tmpName, final); err != nil {
			return "", fmt.Errorf("rename spool file: %w", err)
		}
		return name, nil
	}
	return "", errors.New("name spool file: no free name after 1000 tries")
}

// sanitize keeps names portable and free of path separators.
func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 64 {
			break
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

// List returns the names of spooled events, oldest first. A missing
// directory is an empty spool.
func (s Spool) List() ([]string, error) {
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list spool: %w", err)
	}
	var names []string
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, spoolExt) {
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	return names, nil
}

// Read returns the event in the named spool file and when it was
// spooled. A file that is not a regular file (a link, a FIFO), too large,
// not an event, unsigned or signed with another secret is moved to
// RejectedDir with its reason and a *RejectedFileError (matching
// ErrCorruptSpoolFile) returned, so one bad file never blocks a drain.
// Without a Secret nothing can be verified and ErrNoSecret is returned,
// leaving the file in place.
//
// The spool is the hook's account's to write, so the entry is opened
// without following a link or blocking on a FIFO, and what was opened is
// checked, not what was listed. Nothing of a refused file's content is
// kept (its size and hash identify it): it may be a link to a file only
// the daemon can read, swapped in after the listing.
//
// The signature is checked but not its age: a spooled event is
// legitimately hours old, and re-sending one twice is harmless because
// the daemon de-duplicates by (repo, revision).
func (s Spool) Read(name string) (Event, time.Time, error) {
	if _, err := s.path(name); err != nil {
		return Event{}, time.Time{}, err
	}
	if len(s.Secret) == 0 {
		return Event{}, time.Time{}, ErrNoSecret
	}
	dir, err := openDir(s.Dir)
	if err != nil {
		return Event{}, time.Time{}, fmt.Errorf("read spool file: %w", err)
	}
	defer dir.Close()
	body, size, err := readEntryAt(dir, name, MaxSpoolFileBytes)
	var reason string
	var notReg *NotRegularError
	switch {
	case errors.As(err, &notReg):
		reason = notReg.Error()
	case err != nil:
		return Event{}, time.Time{}, fmt.Errorf("read spool file: %w", err)
	}
	var ev Event
	var spooledAt time.Time
	if reason == "" {
		ev, spooledAt, reason = s.decode(body, size)
	}
	if reason != "" {
		rerr := &RejectedFileError{Name: name, Reason: reason, Bytes: size}
		if notReg == nil && body != nil {
			rerr.SHA256 = sha256Hex(body)
		}
		if err := s.reject(dir, name, reason); err != nil {
			rerr.MoveErr = err
		} else {
			rerr.MovedTo = filepath.Join(s.Dir, RejectedDir)
		}
		return Event{}, time.Time{}, rerr
	}
	return ev, spooledAt, nil
}

// RejectedFileError is a spool file Read refused and moved aside. It
// carries what identifies the file, never its content.
type RejectedFileError struct {
	Name   string
	Reason string
	Bytes  int64  // the size of what was read (0 for a link or FIFO)
	SHA256 string // hex digest of the content read; empty when none was
	// MovedTo is empty when moving it failed.
	MovedTo string
	MoveErr error
}

func (e *RejectedFileError) Error() string {
	if e.MoveErr != nil {
		return fmt.Sprintf("%s %s: %s (and could not move it aside: %v)", ErrCorruptSpoolFile, e.Name, e.Reason, e.MoveErr)
	}
	return fmt.Sprintf("%s %s: %s; moved to %s", ErrCorruptSpoolFile, e.Name, e.Reason, e.MovedTo)
}

func (e *RejectedFileError) Is(target error) bool { return target == ErrCorruptSpoolFile }

// Identity is the file as the audit trail records it: name, size and
// hash, enough to match it with the copy in rejected/.
func (e *RejectedFileError) Identity() string {
	if e.SHA256 == "" {
		return fmt.Sprintf("%s (%d bytes)", e.Name, e.Bytes)
	}
	return fmt.Sprintf("%s (%d bytes, sha256 %s)", e.Name, e.Bytes, e.SHA256)
}

// encode signs ev (when there is a secret) and wraps it in the envelope.
func (s Spool) encode(ev Event, now time.Time) ([]byte, error) {
	body, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("encode event: %w", err)
	}
	env := spoolEnvelope{Timestamp: now.Unix(), Event: body}
	if len(s.Secret) > 0 {
		env.Signature = Sign(s.Secret, env.Timestamp, body)
	}
	out, err := json.Marshal(env)
	if err != nil {
		return nil, fmt.Errorf("encode spool envelope: %w", err)
	}
	return append(out, '\n'), nil
}

// decode checks a spool file's size, envelope and signature; reason is
// empty when the event is good.
func (s Spool) decode(body []byte, size int64) (ev Event, spooledAt time.Time, reason string) {
	if size > MaxSpoolFileBytes {
		return ev, spooledAt, fmt.Sprintf("file is %d bytes, over the %d-byte limit of a spooled event: not written by aicr notify", size, MaxSpoolFileBytes)
	}
	var env spoolEnvelope
	if err := json.Unmarshal(body, &env); err != nil {
		// Not err's text: it quotes bytes of the file, which may be a
		// daemon-only file the hook's account cannot read.
		return ev, spooledAt, "not a spooled event (invalid JSON)"
	}
	if len(env.Event) == 0 {
		return ev, spooledAt, "unsigned spool file (no signed event envelope; written by an aicr before signed spools, or not by aicr notify): check it and re-send with `aicr review` if it is genuine"
	}
	if env.Signature == "" {
		return ev, spooledAt, "unsigned spool file: the hook had no secret when it spooled this event; fix the hook's secret and re-send the revision with `aicr review` if it is genuine"
	}
	if !validMAC(s.Secret, env.Timestamp, env.Signature, env.Event) {
		return ev, spooledAt, "signature does not match this secret: the file was altered or not written by a hook sharing the daemon's secret"
	}
	if err := json.Unmarshal(env.Event, &ev); err != nil {
		return ev, spooledAt, "signed event is not valid event JSON"
	}
	if ev.Repo == "" || ev.Revision == "" {
		return ev, spooledAt, "event has no repo or revision"
	}
	return ev, time.Unix(env.Timestamp, 0), ""
}

// validMAC checks a signature without Verify's age limit.
func validMAC(secret []byte, timestamp int64, signature string, body []byte) bool {
	return hmacsig.Verify(secret, timestamp, body, signature) == nil
}

// readCapped reads the spool entry at path as Read does (no links, no
// FIFOs, at most limit bytes) and reports its size.
func readCapped(path string, limit int64) ([]byte, int64, error) {
	dir, err := openDir(filepath.Dir(path))
	if err != nil {
		return nil, 0, err
	}
	defer dir.Close()
	return readEntryAt(dir, filepath.Base(path), limit)
}

// Remove deletes a delivered event. A file already gone is not an error:
// a concurrent drain may have delivered it first.
func (s Spool) Remove(name string) error {
	path, err := s.path(name)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove spool file: %w", err)
	}
	return nil
}

// Reject moves an event the daemon refused permanently to RejectedDir with
// a <name>.reason file beside it, so it is kept for an operator but never
// retried. A RejectedDir that is not a real directory is refused
// (*NotDirError), and the reason file replaces whatever has its name, so
// nothing the hook's account links there is written through.
func (s Spool) Reject(name, reason string) error {
	if _, err := s.path(name); err != nil {
		return err
	}
	dir, err := openDir(s.Dir)
	if err != nil {
		return fmt.Errorf("move to rejected: %w", err)
	}
	defer dir.Close()
	return s.reject(dir, name, reason)
}

func (s Spool) reject(dir *os.File, name, reason string) error {
	rej, err := openRejected(dir, true)
	if err != nil {
		return fmt.Errorf("open rejected dir: %w", err)
	}
	defer rej.Close()
	if err := renameAt(dir, name, rej, name); err != nil {
		return fmt.Errorf("move to rejected: %w", err)
	}
	if err := writeFileAt(rej, name+reasonExt, []byte(strings.TrimSpace(reason)+"\n")); err != nil {
		return fmt.Errorf("write reject reason: %w", err)
	}
	if err := rej.Sync(); err != nil {
		return fmt.Errorf("sync rejected dir: %w", err)
	}
	return nil
}

// openRejected opens the spool's RejectedDir, which must be a real
// directory; with create a missing one is made with the spool's mode,
// owner and group.
func openRejected(spool *os.File, create bool) (*os.File, error) {
	rej, created, err := openSubdir(spool, RejectedDir, create)
	if err != nil {
		return nil, err
	}
	if created {
		if err := shareSubdir(spool, rej); err != nil {
			rej.Close()
			return nil, err
		}
	}
	return rej, nil
}

// PruneRejected removes the entries of the spool's RejectedDir last
// modified before cutoff (the files, their reasons, and links or FIFOs
// themselves, never what a link points to), and reports how many. A
// missing RejectedDir is nothing to do; one that is not a real directory
// is a *NotDirError and nothing is removed.
func (s Spool) PruneRejected(cutoff time.Time) (int, error) {
	dir, err := openDir(s.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer dir.Close()
	rej, err := openRejected(dir, false)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer rej.Close()
	return pruneAt(rej, cutoff)
}

// Path returns the full path of a spool file, for messages.
func (s Spool) Path(name string) string { return filepath.Join(s.Dir, name) }

func (s Spool) path(name string) (string, error) {
	if name == "" || name != filepath.Base(name) || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, spoolExt) {
		return "", fmt.Errorf("%w: %q", ErrBadSpoolName, name)
	}
	return filepath.Join(s.Dir, name), nil
}

// ensureSpoolDir creates dir (and missing parents) readable by the
// group that will read it: a new dir takes the owner and group of the dir
// it is created in, so a hook run as root does not leave a root-only spool
// behind. It returns dir's final FileInfo.
func ensureSpoolDir(dir string) (os.FileInfo, error) {
	if st, err := os.Stat(dir); err == nil {
		if !st.IsDir() {
			return nil, fmt.Errorf("%s is not a directory", dir)
		}
		return st, nil
	}
	parent := filepath.Dir(dir)
	if _, err := ensureSpoolDir(parent); err != nil && parent != dir {
		return nil, err
	}
	parentInfo, err := os.Stat(parent)
	if err != nil {
		return nil, err
	}
	if err := os.Mkdir(dir, 0o770); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	// Mkdir honours the umask and drops setgid; set the mode explicitly.
	if err := os.Chmod(dir, spoolDirMode); err != nil {
		return nil, err
	}
	if err := shareWithDir(dir, parentInfo); err != nil {
		return nil, err
	}
	return os.Stat(dir)
}

// OpenNotifyLog opens <spoolDir>/notify.log for appending, creating the
// spool dir like Write does, so a trigger run as root leaves a log the
// spool's owner and group can read.
func OpenNotifyLog(spoolDir string) (*os.File, error) {
	dirInfo, err := ensureSpoolDir(spoolDir)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(spoolDir, "notify.log")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, spoolFileMode)
	if err != nil {
		return nil, err
	}
	_ = shareWithDir(path, dirInfo)
	return f, nil
}

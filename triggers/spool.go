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
)

// RejectedDir is the spool subdirectory for events the daemon refused
// permanently or that cannot be parsed. They wait there for an operator.
const RejectedDir = "rejected"

const (
	spoolExt       = ".json"
	reasonExt      = ".reason"
	spoolTmpPrefix = ".tmp-"
	spoolDirMode   = 0o770
	spoolFileMode  = 0o660
)

var (
	// ErrCorruptSpoolFile means a spool file could not be parsed; Read has
	// already moved it to RejectedDir, so a drain can skip it.
	ErrCorruptSpoolFile = errors.New("corrupt spool file")
	// ErrBadSpoolName means a name is not a plain spool file name.
	ErrBadSpoolName = errors.New("not a spool file name")
)

// Spool is a directory of events that could not be delivered. Names sort
// oldest first, so draining in name order keeps commit order.
type Spool struct{ Dir string }

// Write stores ev atomically (temp file, fsync, rename, fsync dir) and
// returns the new file's name inside Dir.
func (s Spool) Write(ev Event) (string, error) {
	if s.Dir == "" {
		return "", errors.New("write spool: no spool directory configured")
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return "", fmt.Errorf("encode event: %w", err)
	}
	body = append(body, '\n')
	if err := os.MkdirAll(s.Dir, spoolDirMode); err != nil {
		return "", fmt.Errorf("create spool dir: %w", err)
	}
	tmp, err := os.CreateTemp(s.Dir, spoolTmpPrefix+"*"+spoolExt)
	if err != nil {
		return "", fmt.Errorf("create spool file: %w", err)
	}
	tmpName := tmp.Name()
	published := false
	defer func() {
		if !published {
			os.Remove(tmpName)
		}
	}()
	if err := tmp.Chmod(spoolFileMode); err != nil {
		tmp.Close()
		return "", fmt.Errorf("chmod spool file: %w", err)
	}
	if _, err := tmp.Write(body); err != nil {
		tmp.Close()
		return "", fmt.Errorf("write spool file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", fmt.Errorf("sync spool file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("close spool file: %w", err)
	}
	name, err := s.publish(tmpName, ev)
	if err != nil {
		return "", err
	}
	published = true
	if err := syncDir(s.Dir); err != nil {
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
		name := fmt.Sprintf("%020d-%s-%s%s", nanos, sanitise(ev.Repo), sanitise(ev.Revision), spoolExt)
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

// sanitise keeps names portable and free of path separators.
func sanitise(s string) string {
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

// Read returns the event in the named spool file. A file that is not a
// valid event is moved to RejectedDir and ErrCorruptSpoolFile returned, so
// one bad file never blocks a drain.
func (s Spool) Read(name string) (Event, error) {
	path, err := s.path(name)
	if err != nil {
		return Event{}, err
	}
	body, err := os.ReadFile(path)
	if err != nil {
		return Event{}, fmt.Errorf("read spool file: %w", err)
	}
	var ev Event
	reason := ""
	if err := json.Unmarshal(body, &ev); err != nil {
		reason = "not valid event JSON: " + err.Error()
	} else if ev.Repo == "" || ev.Revision == "" {
		reason = "event has no repo or revision"
	}
	if reason != "" {
		if err := s.Reject(name, reason); err != nil {
			return Event{}, fmt.Errorf("%w %s: %s (and could not move it aside: %v)", ErrCorruptSpoolFile, name, reason, err)
		}
		return Event{}, fmt.Errorf("%w %s: %s; moved to %s", ErrCorruptSpoolFile, name, reason, filepath.Join(s.Dir, RejectedDir))
	}
	return ev, nil
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
// retried.
func (s Spool) Reject(name, reason string) error {
	path, err := s.path(name)
	if err != nil {
		return err
	}
	dir := filepath.Join(s.Dir, RejectedDir)
	if err := os.MkdirAll(dir, spoolDirMode); err != nil {
		return fmt.Errorf("create rejected dir: %w", err)
	}
	if err := os.Rename(path, filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("move to rejected: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+reasonExt), []byte(strings.TrimSpace(reason)+"\n"), spoolFileMode); err != nil {
		return fmt.Errorf("write reject reason: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("sync rejected dir: %w", err)
	}
	return nil
}

// Path returns the full path of a spool file, for messages.
func (s Spool) Path(name string) string { return filepath.Join(s.Dir, name) }

func (s Spool) path(name string) (string, error) {
	if name == "" || name != filepath.Base(name) || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, spoolExt) {
		return "", fmt.Errorf("%w: %q", ErrBadSpoolName, name)
	}
	return filepath.Join(s.Dir, name), nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

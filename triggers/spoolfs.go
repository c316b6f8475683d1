package triggers

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
)

const (
	kindRegular = "regular file"
	kindSymlink = "symbolic link"
	kindFIFO    = "named pipe (FIFO)"
	kindDir     = "directory"
	kindSocket  = "socket"
	kindDevice  = "device"
)

// NotRegularError is a spool entry that is not a regular file: a link, a
// FIFO, a directory. aicr notify only ever writes regular files, so it is
// refused without being followed or read.
type NotRegularError struct{ Kind string }

func (e *NotRegularError) Error() string {
	return "not a regular file (a " + e.Kind + "): aicr notify writes only regular files; the daemon neither follows nor reads it"
}

// NotDirError is a spool subdirectory (rejected/) that is not a real
// directory. The daemon refuses to write, list or prune through it: a link
// there would point the daemon's writes and deletions at another
// directory, such as data_dir.
type NotDirError struct {
	Path string
	Kind string
}

func (e *NotDirError) Error() string {
	return fmt.Sprintf("%s is a %s, not a directory: the daemon does not write or delete through it; remove it (rm %s) and the next drain creates a real one", e.Path, e.Kind, e.Path)
}

func fileKind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return kindRegular
	case m&fs.ModeSymlink != 0:
		return kindSymlink
	case m&fs.ModeNamedPipe != 0:
		return kindFIFO
	case m.IsDir():
		return kindDir
	case m&fs.ModeSocket != 0:
		return kindSocket
	case m&fs.ModeDevice != 0:
		return kindDevice
	}
	return "unknown type"
}

// readRegular reads an opened spool entry after checking (fstat, on what
// was opened) that it is a regular file of at most limit bytes; a larger
// one returns no body and its size.
func readRegular(f *os.File, limit int64) ([]byte, int64, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		return nil, 0, &NotRegularError{Kind: fileKind(st.Mode())}
	}
	if st.Size() > limit {
		return nil, st.Size(), nil
	}
	body, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, 0, err
	}
	if int64(len(body)) > limit {
		// It grew after the fstat.
		return nil, int64(len(body)), nil
	}
	return body, int64(len(body)), nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

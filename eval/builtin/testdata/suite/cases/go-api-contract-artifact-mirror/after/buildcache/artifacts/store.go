// Package artifacts stores build outputs by content hash.
package artifacts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// ErrNotFound is returned by Open when no artifact has the hash.
var ErrNotFound = errors.New("artifact not found")

// Store keeps artifacts under root/ab/abcdef....
type Store struct {
	root   string
	mirror Mirror // nil: no mirror
}

// Mirror is a remote store tried when an artifact is not on local disk.
type Mirror interface {
	// Fetch returns the artifact, or nil and no error when the mirror does
	// not have it either.
	Fetch(ctx context.Context, hash string) (io.ReadCloser, error)
}

func NewStore(root string, mirror Mirror) *Store { return &Store{root: root, mirror: mirror} }

func (s *Store) path(hash string) string {
	return filepath.Join(s.root, hash[:2], hash)
}

// Open returns a reader for the artifact with the given hash, or an error
// wrapping ErrNotFound when there is none. The caller closes the reader.
func (s *Store) Open(ctx context.Context, hash string) (io.ReadCloser, error) {
	if len(hash) < 8 {
		return nil, fmt.Errorf("artifact hash %q too short", hash)
	}
	f, err := os.Open(s.path(hash))
	if errors.Is(err, os.ErrNotExist) {
		if s.mirror == nil {
			return nil, fmt.Errorf("%s: %w", hash, ErrNotFound)
		}
		return s.mirror.Fetch(ctx, hash)
	}
	if err != nil {
		return nil, fmt.Errorf("open artifact %s: %w", hash, err)
	}
	return f, nil
}

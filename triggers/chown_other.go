//go:build !unix

package triggers

import "os"

// chownLike is a no-op where there are no Unix owners.
func chownLike(string, os.FileInfo) error { return nil }

// shareWithDir is a no-op where there are no Unix owners.
func shareWithDir(string, os.FileInfo) error { return nil }

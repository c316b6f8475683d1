//go:build !unix

package main

// checkDataDirOwner has no file ownership to compare on this platform.
func checkDataDirOwner(dir string) error { return nil }

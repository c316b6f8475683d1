// Package builtin holds the built-in evaluation suite that `aicr eval
// builtin` replays: realistic small changes in the languages Perforce and
// SVN shops write, each with the defect a good reviewer should report, or
// none (the clean cases that measure false positives). The format is
// documented in docs/eval-suite.md; package eval loads it.
package builtin

import (
	"embed"
	"io/fs"
)

// The suite lives under testdata/ because its cases hold Go source that is
// not part of this module (package main, imports of example.com/...):
// the go tool, go vet and golangci-lint skip testdata directories, and
// ./... would otherwise try to build every case. all: keeps files such as
// .gitignore or .env that a case's tree may need; without it embed drops
// names starting with . or _.
//
//go:embed all:testdata/suite
var suite embed.FS

// FS returns the suite rooted at its directory: suite.toml at the top and
// one directory per case under cases/.
func FS() fs.FS {
	sub, err := fs.Sub(suite, "testdata/suite")
	if err != nil {
		// fs.Sub fails only on an invalid path, and this one is a
		// constant the embed directive above has already checked.
		panic("eval/builtin: " + err.Error())
	}
	return sub
}

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

// all: keeps files such as .gitignore or .env that a case's tree may
// need; without it embed silently drops names starting with . or _.
//
//go:embed all:suite
var suite embed.FS

// FS returns the suite rooted at its directory: suite.toml at the top and
// one directory per case under cases/.
func FS() fs.FS {
	sub, err := fs.Sub(suite, "suite")
	if err != nil {
		// fs.Sub fails only on an invalid path, and "suite" is a
		// constant the embed directive above has already checked.
		panic("eval/builtin: " + err.Error())
	}
	return sub
}

// Package soak is the soak of the whole product (issue 22, item 18): the
// built binaries installed side by side, hooks written by `aicr install`,
// two Subversion repositories and one Perforce depot (the p4 emulator),
// seven channels on two IM stand-ins, the llm agent on the model
// simulator, four committers in parallel, and faults while it runs
// (SIGKILL, SIGTERM, an IM outage), checked at the end against the
// invariants an operator relies on.
//
// It holds only tests (soak_test.go); the chat stand-ins it posts to are
// internal/imtest's. `make soak` runs it; its short form runs in `make
// test`.
package soak

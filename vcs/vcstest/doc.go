// Package vcstest is test support for VCS adapters: fake client binaries
// that hang or report their environment, and the conformance suite every
// adapter runs against a real server (svn) or the p4 emulator.
package vcstest

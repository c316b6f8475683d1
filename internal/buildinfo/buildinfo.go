// Package buildinfo holds what the build stamps into the binaries: the
// one place -ldflags "-X" sets, so aicr, aicr-notify and the default
// sandbox image tag cannot disagree about the version.
//
// It is a leaf (nothing else), so the hook client links it too.
package buildinfo

// Version is aicr's version, set at build time with
// -ldflags "-X github.com/aicr-dev/aicr/internal/buildinfo.Version=...";
// a plain go build or go test leaves "dev".
var Version = "dev"

// Package e2e holds aicr's whole-product tests: each one runs the shipped
// binaries on real parts and checks what an operator would see. TestMain
// builds ./cmd/aicr once, static, with buildinfo.Version set to the tag of
// the image `make image` built (internal/testimage), so the sandbox tests
// mount the binary into the image aicr ships; ./cmd/aicr-notify is built
// beside it when a test needs the pair `make build` leaves in bin/.
//
// The parts are real: svnadmin repositories with the hook `aicr install
// svn-hook` wrote, `svn commit`, `aicr daemon` processes (SIGTERM,
// SIGKILL, reload), the p4 emulator, the scripted model server, Podman,
// PostgreSQL and the MCP TypeScript SDK. Results are read through the CLI,
// the file channel and the audit database.
//
// Run them with
//
//	go test -timeout 30m ./e2e/
//
// `make test` runs them with the rest of the suite. A test whose part is
// missing skips naming the remedy, and fails under CI or the AICR_REQUIRE_*
// variables .ci/run sets. A verb's unit test (newCmdXxx with its runF) and
// exitcodes_test.go stay in cmd/aicr, which builds no binary.
//
// Apart from this file the package is test files only.
package e2e

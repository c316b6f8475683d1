package main

import "testing"

// Packages and install scripts check the binary with `aicr --version`;
// it must answer, exit 0, and say exactly what `aicr version` says.
func TestVersionFlagPrintsWhatVersionVerbPrints(t *testing.T) {
	old := version
	version = "1.2.3-test"
	t.Cleanup(func() { version = old })

	flagOut, flagErr, flagCode := runCLI(t, "--version")
	verbOut, _, verbCode := runCLI(t, "version")
	if flagCode != 0 || verbCode != 0 {
		t.Fatalf("exit codes: --version %d (stderr %q), version %d", flagCode, flagErr, verbCode)
	}
	if want := "aicr 1.2.3-test\n"; flagOut != want || verbOut != want {
		t.Fatalf("--version printed %q, version printed %q; want both %q", flagOut, verbOut, want)
	}
}

// Command p4 is aicr's p4 emulator (see package p4emu). Tests build it
// into a temporary directory as an executable named p4.
package main

import (
	"os"

	"github.com/aicr-dev/aicr/internal/p4emu"
)

func main() {
	os.Exit(p4emu.Main(os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr))
}

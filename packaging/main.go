// Command package builds aicr's .deb and .rpm with nfpm used as a library.
// It is a module of its own so that nfpm and its dependencies never reach
// aicr's module graph or binary; it packages binaries built beforehand
// (make package builds them, then runs this).
//
//	go run . -root .. -bin ../bin -out ../dist -version "$(git describe --always --dirty)" -date 20261201054900
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
)

func main() {
	var opts Options
	flag.StringVar(&opts.Root, "root", "..", "the aicr checkout: configs/, LICENSE, README.md")
	flag.StringVar(&opts.BinDir, "bin", "../bin", "directory holding the built aicr and aicr-notify")
	flag.StringVar(&opts.OutDir, "out", "../dist", "where the packages are written")
	flag.StringVar(&opts.Describe, "version", "", "the binaries' version (git describe --always --dirty)")
	flag.StringVar(&opts.CommitTime, "date", "", "the commit's time as YYYYMMDDhhmmss; orders untagged builds")
	flag.StringVar(&opts.Arch, "arch", runtime.GOARCH, "GOARCH the binaries were built for")
	formats := flag.String("formats", "deb,rpm", "comma-separated package formats")
	flag.Parse()
	opts.Formats = strings.Split(*formats, ",")
	paths, err := Build(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "package:", err)
		os.Exit(1)
	}
	for _, p := range paths {
		fmt.Println(p)
	}
}

package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/internal/buildinfo"
)

// version is the CLI's view of buildinfo.Version, the one the build
// stamps; tests set it to check what the commands print.
var version = buildinfo.Version

// VersionOptions are the inputs of `aicr version`.
type VersionOptions struct {
	IO     *IOStreams
	Format string
}

func newCmdVersion(f *Factory, runF func(context.Context, *VersionOptions) error) *cobra.Command {
	opts := &VersionOptions{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the aicr version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return versionRun(cmd.Context(), opts)
		},
	}
	addFormatFlag(cmd, &opts.Format)
	return cmd
}

// versionOutput is `aicr version --format json`.
type versionOutput struct {
	Version string `json:"version"`
}

func versionRun(_ context.Context, opts *VersionOptions) error {
	return newExporter(opts.IO, opts.Format).Write(versionOutput{Version: version}, func(w io.Writer) error {
		_, err := io.WriteString(w, versionLine())
		return err
	})
}

// versionLine is what `aicr version` and `aicr --version` both print, so
// a script or a package check can use either.
func versionLine() string { return fmt.Sprintf("aicr %s\n", version) }

// setRootVersion gives the root command cobra's --version flag, printing
// versionLine rather than cobra's "aicr version X" wording.
func setRootVersion(root *cobra.Command) {
	root.Version = version
	root.SetVersionTemplate(versionLine())
}

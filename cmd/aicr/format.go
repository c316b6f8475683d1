package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Output formats of --format.
const (
	formatText = "text"
	formatJSON = "json"
)

// addFormatFlag gives a command that prints a result --format text|json.
// The value is checked by checkFormat before the command runs.
func addFormatFlag(cmd *cobra.Command, dst *string) {
	cmd.Flags().StringVar(dst, "format", formatText, "output format: text or json")
}

func checkFormat(format string) error {
	if format != formatText && format != formatJSON {
		return &usageError{err: fmt.Errorf("--format must be text or json, got %q", format)}
	}
	return nil
}

// exporter prints a command's result: with --format json the data as one
// JSON document on Out (status lines, if any, go to ErrOut), otherwise the
// text rendering.
type exporter struct {
	io     *IOStreams
	format string
}

func newExporter(ios *IOStreams, format string) exporter { return exporter{io: ios, format: format} }

// JSON says whether the result goes out as JSON.
func (e exporter) JSON() bool { return e.format == formatJSON }

// Write prints data as JSON or calls text to render it on Out.
func (e exporter) Write(data any, text func(w io.Writer) error) error {
	if e.JSON() {
		return writeJSON(e.io.Out, data)
	}
	return text(termSafe(e.io.Out))
}

// Status is a line for the operator: on ErrOut, so stdout stays data.
func (e exporter) Status(format string, args ...any) {
	fmt.Fprint(e.io.ErrOut, termText(fmt.Sprintf(format, args...))+"\n")
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// reportStream is where a console channel prints reports while this
// command runs: Out, unless Out carries the JSON result.
func (e exporter) reportStream() io.Writer {
	if e.JSON() {
		return termSafe(e.io.ErrOut)
	}
	return termSafe(e.io.Out)
}

package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/review"
)

func parseMCPServe(t *testing.T, args ...string) (*MCPServeOptions, error) {
	t.Helper()
	var got *MCPServeOptions
	f, _, _ := testFactory(t, "")
	ios := f.IOStreams
	cmd := newCmdMCPServe(f, func(_ context.Context, o *MCPServeOptions) error {
		got = o
		return nil
	})
	cmd.SetArgs(args)
	cmd.SetOut(ios.Out)
	cmd.SetErr(ios.ErrOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(context.Background())
	return got, err
}

func TestMCPServeFlags(t *testing.T) {
	o, err := parseMCPServe(t)
	if err != nil {
		t.Fatal(err)
	}
	if o.Server.StatePath != review.StateFileName || o.Server.ChangePath != "" || o.HTTPAddr != "" ||
		o.Server.ToolNames != review.ToolNamingDotted || o.Server.Limits != (review.Limits{}) {
		t.Errorf("defaults %+v", o)
	}

	// The flags an agent adapter derives from configured limits parse back
	// into the same limits.
	limits := review.Limits{MaxProblems: 7, MaxContextRequests: 3, MaxAttributionRequests: 2, MaxSummaries: 1, MaxMessageBytes: 900, MaxSummaryBytes: 5000, MaxRejected: 9}
	args := append([]string{"--state", "s.json", "--change", "c.json", "--http", "127.0.0.1:0", "--tool-names", "both"}, limits.ServeArgs()...)
	o, err = parseMCPServe(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	if o.Server.Limits != limits || o.Server.StatePath != "s.json" || o.Server.ChangePath != "c.json" ||
		o.HTTPAddr != "127.0.0.1:0" || o.Server.ToolNames != review.ToolNamingBoth {
		t.Errorf("parsed %+v", o)
	}
	if got := (review.Limits{MaxProblems: 4}).ServeArgs(); strings.Join(got, " ") != "--max-problems=4" {
		t.Errorf("ServeArgs keeps zero fields: %v", got)
	}

	for _, bad := range [][]string{
		{"--tool-names", "camel"},
		{"--http", "0.0.0.0:8080"},
		{"--http", ":8080:9"},
		{"--allow-non-loopback"},
	} {
		_, err := parseMCPServe(t, bad...)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: %v, want a usage error", bad, err)
		}
	}
	if o, err := parseMCPServe(t, "--http", "0.0.0.0:8080", "--allow-non-loopback"); err != nil || !o.AllowNonLoopback {
		t.Errorf("--allow-non-loopback: %+v %v", o, err)
	}
}

package main

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/triggers"
)

// testNow is the clock of every test factory.
var testNow = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// testFactory is a factory over buffers, a fixed clock and configPath.
func testFactory(t *testing.T, configPath string) (f *Factory, out, errOut *bytes.Buffer) {
	t.Helper()
	out, errOut = &bytes.Buffer{}, &bytes.Buffer{}
	f = &Factory{
		IOStreams:  &IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut},
		ConfigPath: configPath,
		Now:        func() time.Time { return testNow },
		Executable: func() (string, error) { return "/opt/aicr/bin/aicr", nil },
	}
	return f, out, errOut
}

// parseOpts runs the command build makes with args under a root wired
// like the real one, with runF capturing the options instead of running.
// It returns the options (nil when the command stopped before runF), the
// factory and the exit code.
func parseOpts[O any](t *testing.T, build func(*Factory, func(context.Context, *O) error) *cobra.Command, args ...string) (*O, *Factory, int, string) {
	t.Helper()
	f, _, errOut := testFactory(t, "")
	f.ConfigPath = triggers.ConfigPath()
	var got *O
	cmd := build(f, func(_ context.Context, o *O) error {
		got = o
		return nil
	})
	root := &cobra.Command{Use: "aicr"}
	root.AddCommand(cmd)
	wireUsageErrors(root)
	root.SetArgs(append([]string{cmd.Name()}, args...))
	root.SetOut(f.IOStreams.Out)
	root.SetErr(errOut)
	code := exitCode(root.ExecuteContext(context.Background()), errOut)
	return got, f, code, errOut.String()
}

// withoutDeps zeroes the Factory and IO fields, so options compare by
// what the flags filled.
func withoutDeps[O any](o *O) O {
	v := reflect.ValueOf(o).Elem()
	for _, name := range []string{"Factory", "IO"} {
		if fv := v.FieldByName(name); fv.IsValid() {
			fv.Set(reflect.Zero(fv.Type()))
		}
	}
	return *o
}

// flagCase is one row of a flags → options table.
type flagCase[O any] struct {
	name string
	args []string
	want O // compared when code is exitOK
	code int
	// config, when set, is what --config must have set.
	config string
	// errSays is part of the usage error.
	errSays string
	// stops: the command ends before its run function even with exit 0
	// (the hook client on a bad flag).
	stops bool
}

func checkFlags[O any](t *testing.T, build func(*Factory, func(context.Context, *O) error) *cobra.Command, cases []flagCase[O]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, f, code, errOut := parseOpts(t, build, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, errOut)
			}
			if tc.errSays != "" && !strings.Contains(errOut, tc.errSays) {
				t.Errorf("stderr %q does not say %q", errOut, tc.errSays)
			}
			if tc.code != exitOK || tc.stops {
				if got != nil {
					t.Errorf("the run function was reached with %+v", *got)
				}
				return
			}
			if got == nil {
				t.Fatal("the run function was not reached")
			}
			if g := withoutDeps(got); !reflect.DeepEqual(g, tc.want) {
				t.Errorf("options\n got %+v\nwant %+v", g, tc.want)
			}
			if tc.config != "" && f.ConfigPath != tc.config {
				t.Errorf("config %q, want %q", f.ConfigPath, tc.config)
			}
		})
	}
}

package im

import (
	"errors"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/review"
)

func TestChannelConfigValidate(t *testing.T) {
	ok := ChannelConfig{Name: "ops-chat", Kind: "console"}
	tests := []struct {
		name    string
		mutate  func(*ChannelConfig)
		wantErr []string // every substring must appear; nil means valid
		is      error
	}{
		{name: "minimal", mutate: func(*ChannelConfig) {}},
		{name: "all set", mutate: func(c *ChannelConfig) {
			c.NoProblems = NoProblemsPublishIfSummary
			c.MinSeverity = review.SeverityHigh
		}},
		{name: "bad no_problems", mutate: func(c *ChannelConfig) { c.NoProblems = "sometimes" },
			wantErr: []string{`no_problems: invalid value "sometimes" (want publish, suppress or publish_if_summary)`}, is: ErrInvalidValue},
		{name: "bad min_severity", mutate: func(c *ChannelConfig) { c.MinSeverity = "severe" },
			wantErr: []string{`min_severity: invalid value "severe" (want info, low, medium, high, critical)`}, is: ErrInvalidValue},
		{name: "case matters", mutate: func(c *ChannelConfig) { c.MinSeverity = "High" },
			wantErr: []string{`min_severity: invalid value "High"`}, is: ErrInvalidValue},
		{name: "repeat and mode", mutate: func(c *ChannelConfig) { c.Repeat, c.Mode = RepeatOmit, ModeDigest }},
		{name: "bad repeat", mutate: func(c *ChannelConfig) { c.Repeat = "once" },
			wantErr: []string{`repeat: invalid value "once" (want mention, omit or full)`}, is: ErrInvalidValue},
		{name: "bad mode", mutate: func(c *ChannelConfig) { c.Mode = "Digest" },
			wantErr: []string{`mode: invalid value "Digest" (want reports or digest)`}, is: ErrInvalidValue},
		{name: "no name", mutate: func(c *ChannelConfig) { c.Name = "" },
			wantErr: []string{"name: required"}, is: ErrRequired},
		{name: "bad name", mutate: func(c *ChannelConfig) { c.Name = "ops chat" },
			wantErr: []string{`name: invalid value "ops chat"`}, is: ErrInvalidValue},
		{name: "no kind", mutate: func(c *ChannelConfig) { c.Kind = "" },
			wantErr: []string{"kind: required"}, is: ErrRequired},
		{name: "errors are joined", mutate: func(c *ChannelConfig) {
			c.Kind, c.NoProblems, c.MinSeverity = "", "x", "y"
		}, wantErr: []string{"kind: required", `no_problems: invalid value "x"`, `min_severity: invalid value "y"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mutate(&c)
			err := c.Validate()
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate() = nil, want error")
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.is)
			}
		})
	}
}

func TestChannelConfigPolicyDefaults(t *testing.T) {
	got := ChannelConfig{Name: "x", Kind: "console"}.Policy()
	if got != (Policy{MinSeverity: DefaultMinSeverity, NoProblems: DefaultNoProblems}) {
		t.Fatalf("Policy() = %+v", got)
	}
	got = ChannelConfig{NoProblems: NoProblemsSuppress, MinSeverity: review.SeverityHigh}.Policy()
	if got != (Policy{MinSeverity: review.SeverityHigh, NoProblems: NoProblemsSuppress}) {
		t.Fatalf("Policy() = %+v", got)
	}
}

package main

import (
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/audit"
)

// `aicr reload` names the hash once: "sha256 0123456789ab", never
// "sha256 sha256:…".
func TestReloadDigestSaysSHA256Once(t *testing.T) {
	got := short("sha256:0123456789abcdef0123")
	if got != "0123456789ab" {
		t.Errorf("short = %q, want the hex digits only", got)
	}
}

// A dispatch sent as one message does not claim "0 parts delivered"
// in dispatch show; a split one counts its parts.
func TestDispatchShowPartsWording(t *testing.T) {
	for _, tc := range []struct {
		d    audit.Dispatch
		want string
	}{
		{audit.Dispatch{Status: audit.DispatchSent, MessageID: "m1"}, "message id: m1 (delivered as one message)\n"},
		{audit.Dispatch{Status: audit.DispatchSent, MessageID: "m1", PartsDelivered: 3}, "message id: m1 (3 parts delivered)\n"},
		{audit.Dispatch{Status: audit.DispatchPending, MessageID: "m1", PartsDelivered: 1}, "message id: m1 (1 part delivered)\n"},
	} {
		var b strings.Builder
		printDispatch(&b, dispatchView{Dispatch: tc.d})
		if got := b.String(); !strings.Contains(got, tc.want) || strings.Contains(got, "0 parts") {
			t.Errorf("%+v: dispatch show printed\n%s\nwant a line %q", tc.d, got, tc.want)
		}
	}
}

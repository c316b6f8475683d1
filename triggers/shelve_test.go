package triggers

import (
	"testing"
	"time"
)

func TestShelfRevision(t *testing.T) {
	at := time.Date(2026, 12, 1, 6, 0, 0, 123e6, time.UTC)
	rev := ShelfRevision("812", at)
	if rev != "shelf-812-1796104800123" {
		t.Errorf("ShelfRevision: %s", rev)
	}
	if c, ok := ParseShelfRevision(rev); !ok || c != "812" {
		t.Errorf("parse %s: %q %v", rev, c, ok)
	}
	for _, bad := range []string{"812", "shelf-", "shelf-812", "shelf-0812-1", "shelf-812-x", "shelf--1"} {
		if c, ok := ParseShelfRevision(bad); ok {
			t.Errorf("%q parsed as shelf %q", bad, c)
		}
	}
}

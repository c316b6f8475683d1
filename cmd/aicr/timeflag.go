package main

import (
	"strconv"
	"strings"
	"time"
)

// parseTimeFlag reads a --since/--until value: an RFC 3339 time, a date
// (2006-01-02) or a date and time (2006-01-02 15:04[:05]) in local time,
// or an age ("36h", "7d") meaning that long before now.
func parseTimeFlag(flag, value string, now time.Time) (time.Time, error) {
	v := strings.TrimSpace(value)
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	for _, layout := range []string{time.DateOnly, "2006-01-02 15:04", time.DateTime, "2006-01-02T15:04", "2006-01-02T15:04:05"} {
		if t, err := time.ParseInLocation(layout, v, time.Local); err == nil {
			return t, nil
		}
	}
	if days, ok := strings.CutSuffix(v, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 {
			return now.Add(-time.Duration(n) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, usageErrorf("%s %q: want a time (2026-01-31, \"2026-01-31 14:00\", 2026-01-31T14:00:00Z) or an age (36h, 7d)", flag, value)
}

package review

import "fmt"

// Limits bound what one pass of an agent may record. Zero fields take the
// defaults of DefaultLimits.
type Limits struct {
	MaxProblems            int
	MaxContextRequests     int
	MaxAttributionRequests int
	// MaxMessageBytes bounds a problem's message and suggestion and a
	// request's reason.
	MaxMessageBytes int
	MaxSummaries    int
	// MaxSummaryBytes bounds one summary's Markdown.
	MaxSummaryBytes int
	// MaxRejected bounds the refused calls kept in State.Rejected; later
	// refusals are only counted (State.RejectedTotal).
	MaxRejected int
}

// DefaultLimits returns the limits used when none are configured.
func DefaultLimits() Limits {
	return Limits{
		MaxProblems:            50,
		MaxContextRequests:     10,
		MaxAttributionRequests: 10,
		MaxMessageBytes:        4000,
		MaxSummaries:           5,
		MaxSummaryBytes:        16000,
		MaxRejected:            100,
	}
}

// WithDefaults returns l with every zero or negative field set to its default.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	set := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&l.MaxProblems, d.MaxProblems)
	set(&l.MaxContextRequests, d.MaxContextRequests)
	set(&l.MaxAttributionRequests, d.MaxAttributionRequests)
	set(&l.MaxMessageBytes, d.MaxMessageBytes)
	set(&l.MaxSummaries, d.MaxSummaries)
	set(&l.MaxSummaryBytes, d.MaxSummaryBytes)
	set(&l.MaxRejected, d.MaxRejected)
	return l
}

// Fixed bounds that are not worth configuring.
const (
	maxCategoryBytes    = 64
	maxFingerprintBytes = 128
	maxTitleBytes       = 200
	maxSkipReasonBytes  = 500
	maxPathBytes        = 1024
	// fingerprintHexLen is the length of derived fingerprints: 64 bits is
	// plenty to tell apart the problems of one change.
	fingerprintHexLen = 16
)

// ServeArgs returns the `aicr mcp serve` flags that set l, so an agent
// adapter can pass the configured limits to the server it starts. Zero
// fields are left out and keep the server's defaults.
func (l Limits) ServeArgs() []string {
	var args []string
	add := func(flag string, v int) {
		if v > 0 {
			args = append(args, fmt.Sprintf("--%s=%d", flag, v))
		}
	}
	add("max-problems", l.MaxProblems)
	add("max-context-requests", l.MaxContextRequests)
	add("max-attribution-requests", l.MaxAttributionRequests)
	add("max-summaries", l.MaxSummaries)
	add("max-message-bytes", l.MaxMessageBytes)
	add("max-summary-bytes", l.MaxSummaryBytes)
	add("max-rejected", l.MaxRejected)
	return args
}

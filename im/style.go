package im

import "github.com/aicr-dev/aicr/review"

// Style is how one severity looks, the same on every platform: a colour
// (a name every platform's palette has, and its hex for those that take
// any colour) and an icon for platforms, or places, that show no colour.
// Renderers take the severity's look from SeverityStyle only, so high is
// never orange in one channel and red in another.
type Style struct {
	// Colour is the colour's name: red, orange, yellow, blue or grey.
	// Feishu's font colours and card header templates take it as is.
	Colour string
	// Hex is the colour as #rrggbb, for surfaces that take any colour
	// (the web page, attachment bars).
	Hex string
	// Icon is a coloured circle emoji of the same colour. Every dialect
	// puts it before the severity, so a reader who cannot see the
	// platform's colours (DingTalk has none, WeCom three) still sees it.
	Icon string
	// WeCom is the nearest of the three font colours WeCom's markdown
	// documents: warm colours (red, orange, yellow) are "warning"
	// (orange-red), cool ones (blue, grey) "comment" (grey). "info" is
	// green there, which reads as "all good", so no severity uses it.
	WeCom string
}

// The colours of the severities, most severe first. Clean and skipped
// reports have no severity; Feishu's header shows them green and grey
// (StyleClean, StyleSkipped).
var severityStyles = map[review.Severity]Style{
	review.SeverityCritical: {Colour: "red", Hex: "#D83931", Icon: "🔴", WeCom: "warning"},
	review.SeverityHigh:     {Colour: "orange", Hex: "#F57C00", Icon: "🟠", WeCom: "warning"},
	review.SeverityMedium:   {Colour: "yellow", Hex: "#F5B800", Icon: "🟡", WeCom: "warning"},
	review.SeverityLow:      {Colour: "blue", Hex: "#1E6FD9", Icon: "🔵", WeCom: "comment"},
	review.SeverityInfo:     {Colour: "grey", Hex: "#8F959E", Icon: "⚪", WeCom: "comment"},
}

var (
	// StyleClean is the look of a review that found nothing.
	StyleClean = Style{Colour: "green", Hex: "#2EA121", Icon: "🟢", WeCom: "info"}
	// StyleSkipped is the look of a change that was not reviewed.
	StyleSkipped = Style{Colour: "grey", Hex: "#8F959E", Icon: "⚪", WeCom: "comment"}
)

// SeverityStyle returns sev's look, and false for a severity validation
// should have rejected (it is then shown without colour or icon, never
// as some other severity's).
func SeverityStyle(sev review.Severity) (Style, bool) {
	s, ok := severityStyles[sev]
	return s, ok
}

// Worst returns the highest severity among problems, or "" for none.
func Worst(problems []review.Problem) review.Severity {
	var worst review.Severity
	for _, p := range problems {
		if p.Severity.Rank() > worst.Rank() {
			worst = p.Severity
		}
	}
	return worst
}

// ReportStyle is the look of a whole report, for platforms that colour
// a message (Feishu's card header): its worst severity's, StyleSkipped
// when the change was not reviewed and StyleClean when nothing was found.
func ReportStyle(problems []review.Problem, skipped bool) Style {
	if s, ok := SeverityStyle(Worst(problems)); ok {
		return s
	}
	if skipped {
		return StyleSkipped
	}
	return StyleClean
}

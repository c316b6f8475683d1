// Package looktest holds the tests that hold every platform to one look:
// the golden bodies of one representative report (internal/imtest's
// LookMessage) as Slack, Feishu, DingTalk, WeCom, the webhook and plain
// text (console, file) send it, in every language, in im/testdata/golden,
// and the check that they show the same problems, in the same order, in
// the same severity colours, with the committer's text as typed.
package looktest

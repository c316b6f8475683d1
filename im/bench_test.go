package im_test

import (
	"testing"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/dingtalk"
	"github.com/aicr-dev/aicr/im/feishu"
	"github.com/aicr-dev/aicr/im/wecom"
	"github.com/aicr-dev/aicr/internal/imtest"
)

// A 300-problem report rendered and split by each byte-limited dialect.
func BenchmarkRender300(b *testing.B) {
	rep := im.BuildReport(imtest.BigMessage(300))
	dialects := map[string]func() error{
		"feishu":   func() error { _, err := feishu.Render(rep, true, 0); return err },
		"dingtalk": func() error { _, err := dingtalk.Render(rep, 0); return err },
		"wecom":    func() error { _, err := wecom.Render(rep, 0); return err },
	}
	for name, render := range dialects {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if err := render(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

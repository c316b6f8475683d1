// Package channels lists the channel kinds this binary supports. It is the
// one place a new kind is added; package im cannot hold the list because
// the kinds import im.
package channels

import (
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/console"
	"github.com/aicr-dev/aicr/im/dingtalk"
	"github.com/aicr-dev/aicr/im/feishu"
	"github.com/aicr-dev/aicr/im/file"
	"github.com/aicr-dev/aicr/im/slack"
	"github.com/aicr-dev/aicr/im/webhook"
	"github.com/aicr-dev/aicr/im/wecom"
)

// Kinds returns the supported kinds keyed by their `kind` value. The map
// is new on every call, so callers may modify it (tests add fakes).
func Kinds() map[string]im.Kind {
	list := []im.Kind{
		{Name: console.KindName, NewConfig: func() im.KindConfig { return &console.Config{} }},
		{Name: file.KindName, NewConfig: func() im.KindConfig { return &file.Config{} }},
		{Name: slack.KindName, NewConfig: func() im.KindConfig { return &slack.Config{} }},
		{Name: webhook.KindName, NewConfig: func() im.KindConfig { return &webhook.Config{} }},
		{Name: feishu.KindName, NewConfig: func() im.KindConfig { return feishu.NewConfig() }},
		{Name: dingtalk.KindName, NewConfig: func() im.KindConfig { return dingtalk.NewConfig() }},
		{Name: wecom.KindName, NewConfig: func() im.KindConfig { return wecom.NewConfig() }},
	}
	kinds := make(map[string]im.Kind, len(list))
	for _, k := range list {
		kinds[k.Name] = k
	}
	return kinds
}

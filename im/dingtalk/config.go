package dingtalk

import (
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/internal/botpost"
)

// KindName is the value of `kind` that selects this channel.
const KindName = "dingtalk"

// Config is the DingTalk-specific part of a [[channel]] table. The webhook
// URL (https://oapi.dingtalk.com/robot/send?access_token=<token>) carries the
// token, so it is a secret too; pointing it at a local server is how
// tests and air-gapped setups work, so there is no separate base URL.
type Config struct {
	botpost.WebhookKeys
}

// Validate checks the keys without reading any secret.
func (c *Config) Validate() error { return c.WebhookKeys.Validate(true) }

// Build returns the channel. The webhook URL and secret are read at
// every Send, not here: a wrong or missing secret file fails deliveries
// (until it is fixed, without a restart), never the daemon's start.
func (c *Config) Build(common im.ChannelConfig, deps im.Deps) (im.Channel, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return botpost.Build(platform, common.Name, c.WebhookKeys, deps), nil
}

// Options configure a Channel built without a config file (tests).
type Options = botpost.Options

package wecom

import "github.com/aicr-dev/aicr/im/internal/botpost"

// KindName is the value of `kind` that selects this channel.
const KindName = "wecom"

// Config is the WeCom part of a [[channel]] table: the custom-bot webhook
// keys. The webhook URL (https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=<key>)
// carries the token, so it is a secret too; pointing it at a local
// server is how tests and air-gapped setups work, so there is no
// separate base URL.
type Config = botpost.Config[Payload]

// NewConfig returns an empty config for the loader to decode into.
func NewConfig() *Config { return botpost.NewConfig(platform) }

// Options configure a Channel built without a config file (tests).
type Options = botpost.Options

package wecom

import (
	"errors"
	"net/http"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/internal/botpost"
)

// KindName is the value of `kind` that selects this channel.
const KindName = "wecom"

// Config is the WeCom-specific part of a [[channel]] table. The webhook
// URL (https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=<key>) carries the
// token, so it is a secret too; pointing it at a local server is how
// tests and air-gapped setups work, so there is no separate base URL.
type Config struct {
	WebhookURLEnv  string `toml:"webhook_url_env"`
	WebhookURLFile string `toml:"webhook_url_file"`
	// MaxParts caps how many messages one report becomes (default 5).
	MaxParts int `toml:"max_parts"`
}

// Validate checks the keys without reading any secret.
func (c *Config) Validate() error {
	var errs []error
	errs = append(errs, botpost.SecretKeys("webhook_url", c.WebhookURLEnv, c.WebhookURLFile, true))
	if c.MaxParts < 0 || c.MaxParts > 20 {
		errs = append(errs, &im.ConfigError{Key: "max_parts", Err: im.ErrInvalidValue, Hint: "between 1 and 20"})
	}
	return errors.Join(errs...)
}

// Build reads the secrets and returns the channel.
func (c *Config) Build(common im.ChannelConfig, deps im.Deps) (im.Channel, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	hook, err := botpost.ReadSecret("webhook_url", c.WebhookURLEnv, c.WebhookURLFile, deps.BaseDir)
	if err != nil {
		return nil, err
	}
	return New(common.Name, Options{
		WebhookURL: hook, MaxParts: c.MaxParts,
	})
}

// Options configure a Channel built without a config file (tests).
type Options struct {
	WebhookURL string
	Client     *http.Client // nil: a client with a 15 s timeout
	MaxParts   int
	// Limits overrides the platform's rate (tests); nil means 20/min.
	Limits botpost.Limits
}

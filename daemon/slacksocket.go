package daemon

import (
	"context"
	"log/slog"
	"path/filepath"

	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/im/slack"
	"github.com/aicr-dev/aicr/im/slack/socket"
)

// slackApps lists the Slack apps whose buttons the daemon receives: one
// per distinct app token (the same variable or file, and Web API base)
// across the slack channels, since two channels of one app share its
// connection. Each app answers with the bot tokens of its channels.
func slackApps(cfg *config.Config) []socket.App {
	base := filepath.Dir(cfg.Path)
	index := map[string]int{}
	var apps []socket.App
	for _, ch := range cfg.Channels {
		sc, ok := ch.Settings.(*slack.Config)
		if !ok || (sc.AppTokenEnv == "" && sc.AppTokenFile == "") {
			continue
		}
		ref := sc.AppToken(base)
		key := ref.Env + "\x00" + ref.File + "\x00" + sc.API()
		bot := socket.Bot{Conversation: sc.Channel, Token: sc.BotToken(base)}
		if i, ok := index[key]; ok {
			apps[i].Channels = append(apps[i].Channels, ch.Name)
			apps[i].Bots = append(apps[i].Bots, bot)
			continue
		}
		index[key] = len(apps)
		apps = append(apps, socket.App{Channels: []string{ch.Name}, Token: ref, APIURL: sc.API(), Bots: []socket.Bot{bot}})
	}
	return apps
}

// startSlackSockets starts one Socket Mode connection per Slack app, as
// jobs of the generation: a reload ends them and the new config's
// start again (token, channels and users as configured now); a stop
// ends them with the other jobs.
func startSlackSockets(ctx context.Context, j *jobs, parts *Components, store socket.Store, log *slog.Logger) {
	cfg := parts.Config
	apps := slackApps(cfg)
	if len(apps) == 0 {
		return
	}
	links, err := cfg.Web.LinkSigner(cfg.Daemon.DataDir)
	if err != nil {
		log.Warn("slack socket mode: answers carry no link to the web page", "err", err)
	}
	opts := socket.Options{Store: store, Users: cfg.Users, Links: links, Logger: log, Counted: parts.metrics().FindingAction}
	for _, app := range apps {
		j.goBackground(func() { socket.Run(ctx, app, opts) })
	}
}

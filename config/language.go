package config

import (
	"slices"

	"github.com/aicr-dev/aicr/im"
)

// Report is the [report] table: what every channel's reports share
// unless the [[channel]] says otherwise.
type Report struct {
	// Language is the language of every word aicr writes in reports
	// ("en" or "zh-CN"); a [[channel]] language overrides it.
	Language im.Language `toml:"language"`
}

// settleLanguages reads [report] language, each [[channel]] language
// and [web] language (defaulting to [report]'s) and [agent] output_language into their
// catalogue form ("zh_CN" becomes "zh-CN"). A channel's bad value is left
// as typed, for its table's Validate to name.
func (c *Config) settleLanguages() []fieldProblem {
	var out []fieldProblem
	report, err := im.ParseLanguage(string(c.Report.Language))
	if err != nil {
		out = append(out, fieldProblem{"report.language", err.Error()})
	}
	c.Report.Language = report
	if c.Web.Language == "" {
		c.Web.Language = report
	} else if l, err := im.ParseLanguage(string(c.Web.Language)); err != nil {
		out = append(out, fieldProblem{"web.language", err.Error()})
	} else {
		c.Web.Language = l
	}
	for i := range c.Channels {
		ch := &c.Channels[i].ChannelConfig
		if ch.Language == "" {
			ch.Language = report
		} else if l, err := im.ParseLanguage(string(ch.Language)); err == nil {
			ch.Language = l
		}
	}
	if c.Agent.OutputLanguage != "" {
		l, err := im.ParseLanguage(c.Agent.OutputLanguage)
		if err != nil {
			out = append(out, fieldProblem{"agent.output_language", err.Error()})
		}
		c.Agent.OutputLanguage = string(l)
	}
	return out
}

// ChannelLanguage is the language of channel's reports: its [[channel]]
// language, else [report] language, else English.
func (c *Config) ChannelLanguage(channel string) im.Language {
	if ch, ok := c.Channel(channel); ok && ch.Language != "" {
		return ch.Language.Norm()
	}
	return c.Report.Language.Norm()
}

// OutputLanguage is the language the agent writes repo's messages,
// suggestions and summaries in: [agent] output_language when set, else
// the language most of the repo's report channels read (its channels,
// shelve channels and route channels, digest-only ones aside), ties
// going to English. One review serves every channel of a change, so
// channels that want different languages get the review in this one.
func (c *Config) OutputLanguage(repo string) im.Language {
	if c.Agent.OutputLanguage != "" {
		return im.Language(c.Agent.OutputLanguage).Norm()
	}
	r, ok := c.Repo(repo)
	if !ok {
		return c.Report.Language.Norm()
	}
	names := slices.Concat(r.Channels, r.ShelveChannels)
	for _, rt := range r.Routes {
		names = append(names, rt.Channels...)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	votes := map[im.Language]int{}
	for _, name := range names {
		if ch, ok := c.Channel(name); ok && !ch.DigestOnly() {
			votes[c.ChannelLanguage(name)]++
		}
	}
	if len(votes) == 0 {
		return c.Report.Language.Norm()
	}
	best := im.LangEnglish
	for _, l := range im.Languages {
		if votes[l] > votes[best] {
			best = l
		}
	}
	return best
}

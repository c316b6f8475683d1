package main

import "strings"

// defaultShelveTriggerName names the shelve-commit lines unless --name
// is given: per repo, like defaultTriggerName.
func defaultShelveTriggerName(repo string) string { return defaultTriggerName(repo) + "-shelve" }

// P4ShelveTriggerLines are the shelve-commit lines of the triggers
// table: like P4TriggerLines, fired when files are shelved (p4 shelve),
// with --shelve so the daemon reviews the shelf and publishes it to the
// repo's shelve_channels.
func P4ShelveTriggerLines(name string, depotPaths []string, aicrPath, configPath, repo string) []string {
	lines := P4TriggerLines(name, depotPaths, aicrPath, configPath, repo)
	for i, l := range lines {
		l = strings.Replace(l, " change-commit ", " shelve-commit ", 1)
		lines[i] = strings.Replace(l, " --change %change%", " --shelve --change %change%", 1)
	}
	return lines
}

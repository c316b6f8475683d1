package config

// DigestTable is one [[digest]] table: a periodic summary of findings
// (open by path and age, new and resolved in the period, the false
// positive rate, the review cost) sent to one channel.
type DigestTable struct {
	// Name names the digest in logs, dispatch rows and the report title.
	Name string `toml:"name"`
	// Channel is the [[channel]] it goes to.
	Channel string `toml:"channel"`
	// Every is its cron schedule ("0 9 * * 1-5", "@daily").
	Every string `toml:"every"`
	// Repos and Paths narrow what it counts; empty means every repo and
	// path.
	Repos []string `toml:"repos"`
	Paths []string `toml:"paths"`
}

package config

import (
	"reflect"
	"strings"

	"github.com/aicr-dev/aicr/im/channels"
	"github.com/aicr-dev/aicr/vcs/registry"
)

// ExamplePath is where the packages install the commented example
// config; a checkout has it as configs/aicr.example.toml.
const ExamplePath = "/usr/share/aicr/aicr.example.toml"

// knownKeys are the keys the config accepts, in the form
// toml.MetaData.Undecoded reports ("daemon.workers", "repo.url"), read
// from the same structs the decoder fills, so they cannot drift apart.
func knownKeys() map[string]bool {
	out := map[string]bool{}
	addTomlKeys(out, "", reflect.TypeOf(Config{}))
	addTomlKeys(out, "repo", reflect.TypeOf(Repo{}))
	for _, newSettings := range registry.Kinds() {
		addTomlKeys(out, "repo", reflect.TypeOf(newSettings()))
	}
	for _, k := range channels.Kinds() {
		addTomlKeys(out, "channel", reflect.TypeOf(Channel{}.ChannelConfig))
		addTomlKeys(out, "channel", reflect.TypeOf(k.NewConfig()))
	}
	return out
}

func addTomlKeys(out map[string]bool, prefix string, t reflect.Type) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			addTomlKeys(out, prefix, f.Type)
			continue
		}
		if name == "" {
			continue
		}
		full := name
		if prefix != "" {
			full = prefix + "." + name
		}
		out[full] = true
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft.PkgPath() != "time" {
			addTomlKeys(out, full, ft)
		}
	}
}

// closestKey is the known key of the same table nearest to key by edit
// distance, when it is near enough to be a typo; "" otherwise.
func closestKey(key string, known map[string]bool) string {
	table, leaf := "", key
	if i := strings.LastIndex(key, "."); i >= 0 {
		table, leaf = key[:i], key[i+1:]
	}
	best, bestD := "", len(leaf)/3+1
	if bestD > 3 {
		bestD = 3
	}
	for k := range known {
		kt, kl := "", k
		if i := strings.LastIndex(k, "."); i >= 0 {
			kt, kl = k[:i], k[i+1:]
		}
		if kt != table {
			continue
		}
		if d := editDistance(leaf, kl); d < bestD || (d == bestD && best != "" && kl < best) {
			best, bestD = kl, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

package doctor

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/aicr-dev/aicr/config"
)

// namedFile is a file the config names under a *_file key, which the
// daemon reads: a secret, password, ticket, token, key or rules file.
type namedFile struct {
	Repo string // the [[repo]] it belongs to, if any
	Key  string // where it is named, for people: "[daemon] secret_file"
	Path string
}

// daemonFiles walks the whole config, kind settings included, for every
// non-empty *_file key, so a key added to any section later is checked
// without doctor knowing it. [notify] is left out: the hook reads it,
// and the hook's dry run checks it as the hook's account. envNames are
// the variables named by *_env keys the daemon reads.
func daemonFiles(cfg *config.Config, only string) (files []namedFile, envNames []string) {
	seen := map[string]bool{}
	var walk func(v reflect.Value, where, repo string)
	walk = func(v reflect.Value, where, repo string) {
		switch v.Kind() {
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem(), where, repo)
			}
		case reflect.Struct:
			t := v.Type()
			top := t == reflect.TypeOf(config.Config{})
			for i := 0; i < t.NumField(); i++ {
				f := t.Field(i)
				if !f.IsExported() {
					continue
				}
				tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
				fv := v.Field(i)
				switch {
				case top && f.Name == "Notify":
					continue
				case top && f.Name == "Repos":
					for j := 0; j < fv.Len(); j++ {
						r := fv.Index(j).Interface().(config.Repo)
						if only != "" && r.Name != only {
							continue
						}
						walk(fv.Index(j), fmt.Sprintf("[[repo]] %s", r.Name), r.Name)
					}
					continue
				case top && f.Name == "Channels":
					for j := 0; j < fv.Len(); j++ {
						c := fv.Index(j).Interface().(config.Channel)
						walk(fv.Index(j), fmt.Sprintf("[[channel]] %s", c.Name), "")
					}
					continue
				case fv.Kind() == reflect.String && strings.HasSuffix(tag, "_file") && fv.String() != "":
					key := strings.TrimSpace(where + " " + tag)
					if !seen[key+"\x00"+fv.String()] {
						seen[key+"\x00"+fv.String()] = true
						files = append(files, namedFile{Repo: repo, Key: key, Path: fv.String()})
					}
					continue
				case fv.Kind() == reflect.String && strings.HasSuffix(tag, "_env") && fv.String() != "":
					envNames = append(envNames, fv.String())
					continue
				}
				sub := where
				if tag != "" && tag != "-" && !f.Anonymous {
					if where == "" {
						sub = "[" + tag + "]"
					} else if strings.HasPrefix(where, "[") && strings.HasSuffix(where, "]") && !strings.HasPrefix(where, "[[") {
						sub = strings.TrimSuffix(where, "]") + "." + tag + "]"
					}
				}
				walk(fv, sub, repo)
			}
		case reflect.Slice, reflect.Array:
			for j := 0; j < v.Len(); j++ {
				walk(v.Index(j), where, repo)
			}
		case reflect.Map:
			keys := v.MapKeys()
			sort.Slice(keys, func(a, b int) bool { return fmt.Sprint(keys[a]) < fmt.Sprint(keys[b]) })
			for _, k := range keys {
				walk(v.MapIndex(k), where, repo)
			}
		}
	}
	walk(reflect.ValueOf(cfg).Elem(), "", "")
	sort.Strings(envNames)
	return files, envNames
}

package config

import (
	"fmt"
	"regexp"
	"strings"
)

// keyIndex maps TOML keys to the lines that define them, so config errors
// can say "file:line". BurntSushi/toml keeps key positions private, and its
// undecoded-key list drops array indices, so we index the file ourselves.
// Keys are recorded with array-of-table indices ("repo[1].channels") and
// without them ("repo.channels"), the form toml.MetaData.Undecoded uses.
type keyIndex struct {
	lines map[string][]int
}

var (
	arrayHeaderRE = regexp.MustCompile(`^\s*\[\[\s*([^\]]+?)\s*\]\]`)
	tableHeaderRE = regexp.MustCompile(`^\s*\[\s*([^\]]+?)\s*\]`)
	keyRE         = regexp.MustCompile(`^\s*([A-Za-z0-9_\-."' ]+?)\s*=`)
)

func indexKeys(data []byte) keyIndex {
	idx := keyIndex{lines: map[string][]int{}}
	arrayCount := map[string]int{}
	var table, tableIndexed string
	inMultiline := ""
	for i, line := range strings.Split(string(data), "\n") {
		lineNo := i + 1
		if inMultiline != "" {
			if strings.Count(line, inMultiline)%2 == 1 {
				inMultiline = ""
			}
			continue
		}
		if m := arrayHeaderRE.FindStringSubmatch(line); m != nil {
			table = normalizeKey(m[1])
			tableIndexed = fmt.Sprintf("%s[%d]", table, arrayCount[table])
			arrayCount[table]++
			idx.add(table, lineNo)
			idx.add(tableIndexed, lineNo)
			continue
		}
		if m := tableHeaderRE.FindStringSubmatch(line); m != nil {
			table = normalizeKey(m[1])
			tableIndexed = table
			idx.add(table, lineNo)
			continue
		}
		m := keyRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		key := normalizeKey(m[1])
		full, fullIndexed := key, key
		if table != "" {
			full, fullIndexed = table+"."+key, tableIndexed+"."+key
		}
		idx.add(full, lineNo)
		if fullIndexed != full {
			idx.add(fullIndexed, lineNo)
		}
		rest := line[len(m[0]):]
		for _, q := range []string{`"""`, `'''`} {
			if strings.Count(rest, q)%2 == 1 {
				inMultiline = q
			}
		}
	}
	return idx
}

func (k keyIndex) add(key string, line int) { k.lines[key] = append(k.lines[key], line) }

// line returns the first line defining key, or 0 when unknown. It falls back
// to the closest enclosing table so an error about a missing key still
// points somewhere useful.
func (k keyIndex) line(key string) int {
	for key != "" {
		if ls := k.lines[key]; len(ls) > 0 {
			return ls[0]
		}
		cut := strings.LastIndexAny(key, ".")
		if cut < 0 {
			return 0
		}
		key = key[:cut]
	}
	return 0
}

func normalizeKey(s string) string {
	parts := strings.Split(s, ".")
	for i, p := range parts {
		parts[i] = strings.Trim(strings.TrimSpace(p), `"'`)
	}
	return strings.Join(parts, ".")
}

package p4_test

import (
	"reflect"
	"testing"

	. "github.com/aicr-dev/aicr/vcs/p4"
)

func TestRepoRoots(t *testing.T) {
	cases := map[string]struct {
		paths []string
		want  []string
	}{
		"plain":            {[]string{"//depot/main/..."}, []string{"depot/main"}},
		"exclusions skip":  {[]string{"//depot/main/...", "-//depot/main/vendor/..."}, []string{"depot/main"}},
		"two trees":        {[]string{"//depot/main/...", "//depot/rel/..."}, []string{"depot/main", "depot/rel"}},
		"wildcard in name": {[]string{"//depot/main/src/*.c"}, []string{"depot/main/src"}},
		"dots in a name":   {[]string{"//depot/main.v2/..."}, []string{"depot/main.v2"}},
	}
	for name, c := range cases {
		a, err := New(Config{Port: "localhost:1666", User: "aicr", P4Path: "/bin/true", DepotPaths: c.paths})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := a.RepoRoots(); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: RepoRoots(%q) = %q, want %q", name, c.paths, got, c.want)
		}
	}
}

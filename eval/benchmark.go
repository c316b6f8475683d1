package eval

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// The offline code-review benchmark (github.com/withmartian/code-review-
// benchmark, directory offline/) publishes golden comments per pull
// request: golden_comments/<repo>.json, each a list of
//
//	{"pr_title": "...", "url": "https://github.com/<owner>/<repo>/pull/<n>",
//	 "comments": [{"comment": "...", "severity": "High", "category": "concurrency"}]}
//
// The comments name no file or line, so only the judge can match them.
// aicr does not ship the benchmark or the PRs' code: the user puts the
// golden files and, for each PR to replay, its base and head trees in
//
//	DIR/golden_comments/<repo>.json
//	DIR/trees/<repo>/<n>/base/...   (the PR's base; only the changed files are enough)
//	DIR/trees/<repo>/<n>/head/...
//
// where <repo> is the golden file's name without .json and <n> the PR
// number of its url.

// benchmarkLanguages are the languages of the benchmark's repositories.
var benchmarkLanguages = map[string]string{
	"sentry": "python", "grafana": "go", "keycloak": "java", "discourse": "ruby", "cal_dot_com": "typescript",
}

type benchmarkPR struct {
	Title    string `json:"pr_title"`
	URL      string `json:"url"`
	Comments []struct {
		Comment  string `json:"comment"`
		Severity string `json:"severity"`
		Category string `json:"category"`
	} `json:"comments"`
}

// IsBenchmark reports whether dir is laid out as the offline benchmark
// (golden_comments/ and no suite.toml).
func IsBenchmark(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, "suite.toml")); err == nil {
		return false
	}
	st, err := os.Stat(filepath.Join(dir, "golden_comments"))
	return err == nil && st.IsDir()
}

// LoadBenchmark reads the offline benchmark's golden comments under dir
// as a suite, one case per PR whose trees are present. missing lists the
// PRs left out for want of their trees, each with the path it looked
// for, so a partial download never passes for the whole benchmark.
func LoadBenchmark(dir string) (s *Suite, missing []string, err error) {
	files, err := filepath.Glob(filepath.Join(dir, "golden_comments", "*.json"))
	if err != nil {
		return nil, nil, err
	}
	if len(files) == 0 {
		return nil, nil, fmt.Errorf("%w: %s: no golden_comments/*.json (copy offline/golden_comments from github.com/withmartian/code-review-benchmark)", ErrBadSuite, dir)
	}
	sort.Strings(files)
	s = &Suite{Name: "offline-code-review-benchmark", Description: "golden comments of " + dir}
	var errs []error
	for _, f := range files {
		repo := strings.TrimSuffix(filepath.Base(f), ".json")
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, err
		}
		var prs []benchmarkPR
		if err := json.Unmarshal(data, &prs); err != nil {
			errs = append(errs, fmt.Errorf("%w: %s: %w (want a list of {pr_title, url, comments: [{comment, severity}]})", ErrBadSuite, f, err))
			continue
		}
		for i, pr := range prs {
			n, err := prNumber(pr.URL)
			if err != nil {
				errs = append(errs, fmt.Errorf("%w: %s: entry %d: %w", ErrBadSuite, f, i, err))
				continue
			}
			if len(pr.Comments) == 0 {
				errs = append(errs, fmt.Errorf("%w: %s: entry %d (%s): no comments", ErrBadSuite, f, i, pr.URL))
				continue
			}
			treeDir := filepath.Join(dir, "trees", repo, n)
			head := filepath.Join(treeDir, "head")
			if st, err := os.Stat(head); err != nil || !st.IsDir() {
				missing = append(missing, fmt.Sprintf("%s PR %s (%s): no %s", repo, n, pr.URL, head))
				continue
			}
			c := &Case{ID: repo + "-" + n, Language: benchmarkLanguages[repo], Title: pr.Title, Message: pr.Title,
				Author: "benchmark", After: os.DirFS(head), Before: emptyFS{}}
			if c.Language == "" {
				c.Language = "unknown"
			}
			if st, err := os.Stat(filepath.Join(treeDir, "base")); err == nil && st.IsDir() {
				c.Before = os.DirFS(filepath.Join(treeDir, "base"))
			}
			for _, cm := range pr.Comments {
				c.Golden = append(c.Golden, Golden{Description: cm.Comment, Severity: cm.Severity, Category: cm.Category})
			}
			s.Cases = append(s.Cases, c)
		}
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	if len(s.Cases) == 0 {
		return nil, missing, fmt.Errorf("%w: %s: no PR has its trees under trees/<repo>/<n>/head (first missing: %s)", ErrBadSuite, dir, first(missing))
	}
	sort.Slice(s.Cases, func(i, j int) bool { return s.Cases[i].ID < s.Cases[j].ID })
	return s, missing, nil
}

func prNumber(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("url %q is not a pull request URL", raw)
	}
	dir, n := path.Split(strings.TrimSuffix(u.Path, "/"))
	if path.Base(strings.TrimSuffix(dir, "/")) != "pull" || n == "" || strings.Trim(n, "0123456789") != "" {
		return "", fmt.Errorf("url %q does not end in /pull/<number>", raw)
	}
	return n, nil
}

func first(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return s[0]
}

// Unlocated counts the golden findings only a judge can match.
func (s *Suite) Unlocated() int {
	n := 0
	for _, c := range s.Cases {
		for _, g := range c.Golden {
			if !g.Located() {
				n++
			}
		}
	}
	return n
}

var _ fs.FS = emptyFS{}

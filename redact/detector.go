package redact

import (
	_ "embed"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"
	"github.com/spf13/viper"
	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/logging"
)

// compiled records that the rules were compiled, so a test can show that
// importing the package does not compile them.
var compiled atomic.Bool

//go:embed rules.toml
var aicrRules string

// detector compiles the rules once, on first use. The hook client links
// this package (one binary) but never calls it, so it never pays for the
// ~220 regular expressions.
var detector = sync.OnceValue(func() *detect.Detector {
	compiled.Store(true)
	// gitleaks logs through a package-level zerolog logger, at trace level
	// with the secret; aicr reports findings itself and must never write a
	// secret to a log.
	logging.Logger = zerolog.Nop()
	cfg, err := loadRules()
	if err != nil {
		// The rules are embedded and covered by tests: failing here is a
		// build defect, not an operating condition.
		panic(err)
	}
	d := detect.NewDetector(cfg)
	// Decoding (base64, percent-encoding) would report values that do not
	// appear in the text, which neither a line anchor nor redaction can
	// use.
	d.MaxDecodeDepth = 0
	return d
})

// loadRules merges gitleaks' default rules with aicr's additions. Each
// file is read through its own viper instance: gitleaks' own
// NewDetectorDefaultConfig uses viper's process-wide singleton.
func loadRules() (config.Config, error) {
	base, err := translate("gitleaks default rules", config.DefaultConfig)
	if err != nil {
		return config.Config{}, err
	}
	extra, err := translate("aicr rules", aicrRules)
	if err != nil {
		return config.Config{}, err
	}
	for _, id := range extra.OrderedRules {
		if _, dup := base.Rules[id]; dup {
			return config.Config{}, fmt.Errorf("aicr rules: rule %q already exists in gitleaks' rules", id)
		}
		r := extra.Rules[id]
		base.Rules[id] = r
		base.OrderedRules = append(base.OrderedRules, id)
		for _, k := range r.Keywords {
			base.Keywords[strings.ToLower(k)] = struct{}{}
		}
	}
	return base, nil
}

func translate(name, toml string) (config.Config, error) {
	v := viper.New()
	v.SetConfigType("toml")
	if err := v.ReadConfig(strings.NewReader(toml)); err != nil {
		return config.Config{}, fmt.Errorf("%s: %w", name, err)
	}
	var vc config.ViperConfig
	if err := v.Unmarshal(&vc); err != nil {
		return config.Config{}, fmt.Errorf("%s: %w", name, err)
	}
	cfg, err := vc.Translate()
	if err != nil {
		return config.Config{}, fmt.Errorf("%s: %w", name, err)
	}
	return cfg, nil
}

// find runs the detector over text and locates each value. prose adds the
// rule for unquoted values. Where rules overlap on one value, gitleaks'
// maintained rule is kept over an aicr addition.
func find(path, text string, prose bool) []Secret {
	if text == "" {
		return nil
	}
	d := detector()
	findings := d.Detect(detect.Fragment{Raw: text, FilePath: path})
	lineStarts := []int{0}
	for i := 0; i < len(text); i++ {
		if text[i] == '\n' {
			lineStarts = append(lineStarts, i+1)
		}
	}
	var out []Secret
	for _, f := range findings {
		aicr := strings.HasPrefix(f.RuleID, "aicr-")
		switch {
		case f.RuleID == RuleCredentialInProse && (!prose || !secretLooking(f.Secret)),
			aicr && f.RuleID != RulePrivateKeyHeader && IsPlaceholder(f.Secret),
			f.Secret == "":
			continue
		}
		line := min(max(f.StartLine, 0), len(lineStarts)-1)
		from := lineStarts[line]
		idx := strings.Index(text[from:], f.Secret)
		if idx < 0 {
			// Not expected with decoding off; fall back to the first
			// occurrence anywhere.
			if idx = strings.Index(text, f.Secret); idx < 0 {
				continue
			}
			from = 0
		}
		start := from + idx
		ln := sort.Search(len(lineStarts), func(i int) bool { return lineStarts[i] > start })
		out = append(out, Secret{
			RuleID: f.RuleID, Description: f.Description,
			Line: ln, Column: start - lineStarts[ln-1] + 1,
			start: start, end: start + len(f.Secret),
		})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].start != out[j].start {
			return out[i].start < out[j].start
		}
		return rank(out[i].RuleID) < rank(out[j].RuleID)
	})
	// One secret per value span: the same value found by two rules is
	// one leak.
	kept := out[:0]
	for _, s := range out {
		if n := len(kept); n > 0 && overlaps(kept[n-1], s) {
			prev := kept[n-1]
			if rank(s.RuleID) < rank(prev.RuleID) {
				kept[n-1] = s
			}
			kept[n-1].start, kept[n-1].end = min(prev.start, s.start), max(prev.end, s.end)
			continue
		}
		kept = append(kept, s)
	}
	return kept
}

// rank prefers gitleaks' maintained rules, then aicr's additions.
func rank(ruleID string) int {
	if strings.HasPrefix(ruleID, "aicr-") {
		return 1
	}
	return 0
}

func overlaps(a, b Secret) bool { return b.start < a.end && a.start < b.end }

// Package compose turns a pool of verified items into a training corpus and
// a validation set: an ancestor-level split by lineage root, a first pass
// that represents every lineage, a fill pass that balances the mix toward
// configured targets under per-lineage caps, and a coverage report.
package compose

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/crucible-data/crucible/engine"
)

// ErrConfig wraps every invalid configuration.
var ErrConfig = fmt.Errorf("compose: %w", engine.ErrConfig)

// Dimensions along which the mix is balanced and reported.
const (
	DimDomain     = "domain"
	DimFamily     = "family"
	DimRoute      = "route"
	DimDifficulty = "difficulty"
	DimCost       = "cost"
)

// Dims lists the balanced dimensions in report order.
var Dims = []string{DimDomain, DimFamily, DimRoute, DimDifficulty, DimCost}

// Bucket names a range of a numeric field: values below Below (or every
// value, when Below is nil: the last bucket).
type Bucket struct {
	Name  string   `yaml:"name" json:"name"`
	Below *float64 `yaml:"below" json:"below,omitempty"`
}

// Config drives Compose. Start from DefaultConfig.
type Config struct {
	// ValidationFraction of lineage roots go to validation.
	ValidationFraction float64 `yaml:"validation_fraction" json:"validation_fraction"`
	Seed               uint64  `yaml:"seed" json:"seed"`
	// LineageCap bounds the items taken from one lineage in each split.
	LineageCap int `yaml:"lineage_cap" json:"lineage_cap"`
	// TrainSize and ValidationSize bound each split; 0 takes every valid
	// item the caps allow. The first pass is never cut short, so a split
	// holds at least one item per lineage even above its size.
	TrainSize      int `yaml:"train_size" json:"train_size"`
	ValidationSize int `yaml:"validation_size" json:"validation_size"`
	// RequireVerified admits only items whose reference is verified;
	// otherwise every item but those with a failed reference is admitted.
	RequireVerified bool `yaml:"require_verified" json:"require_verified"`
	// Targets are shares per value of each dimension. A dimension without
	// targets is balanced toward uniform over the values present.
	Targets map[string]map[string]float64 `yaml:"targets" json:"targets"`
	// Weights say how much each dimension counts in the balance; default 1.
	Weights map[string]float64 `yaml:"weights" json:"weights"`
	// DifficultyBuckets and CostBuckets cut the numeric fields into
	// categories. Empty (the default) cuts the admissible pool at its
	// tertiles, since neither field has a fixed scale across sources; the
	// bucket names then state their bounds (e.g. "<2", "2-3", ">=3").
	DifficultyBuckets []Bucket `yaml:"difficulty_buckets" json:"difficulty_buckets"`
	CostBuckets       []Bucket `yaml:"cost_buckets" json:"cost_buckets"`
}

func f64(v float64) *float64 { return &v }

// DefaultConfig: 20% of lineages to validation, at most 4 items per lineage,
// every admissible item, tertile difficulty and cost buckets.
func DefaultConfig() Config {
	return Config{
		ValidationFraction: 0.2,
		LineageCap:         4,
		RequireVerified:    true,
	}
}

// Validate reports every bad field.
func (c Config) Validate() error {
	var errs []error
	if c.ValidationFraction < 0 || c.ValidationFraction > 1 || math.IsNaN(c.ValidationFraction) {
		errs = append(errs, fmt.Errorf("validation_fraction: %g, must be in [0, 1]", c.ValidationFraction))
	}
	if c.LineageCap < 1 {
		errs = append(errs, fmt.Errorf("lineage_cap: %d, must be >= 1", c.LineageCap))
	}
	if c.TrainSize < 0 {
		errs = append(errs, fmt.Errorf("train_size: %d, must be >= 0", c.TrainSize))
	}
	if c.ValidationSize < 0 {
		errs = append(errs, fmt.Errorf("validation_size: %d, must be >= 0", c.ValidationSize))
	}
	for _, d := range sortedKeys(c.Targets) {
		if !isDim(d) {
			errs = append(errs, fmt.Errorf("targets: unknown dimension %q (want domain|family|route|difficulty|cost)", d))
			continue
		}
		var sum float64
		for _, v := range sortedKeys(c.Targets[d]) {
			share := c.Targets[d][v]
			if share < 0 || math.IsNaN(share) {
				errs = append(errs, fmt.Errorf("targets.%s.%s: %g, must be >= 0", d, v, share))
			}
			sum += share
		}
		if sum <= 0 {
			errs = append(errs, fmt.Errorf("targets.%s: shares sum to %g, need a positive sum", d, sum))
		}
	}
	for _, d := range sortedKeys(c.Weights) {
		if !isDim(d) {
			errs = append(errs, fmt.Errorf("weights: unknown dimension %q", d))
		} else if w := c.Weights[d]; w < 0 || math.IsNaN(w) {
			errs = append(errs, fmt.Errorf("weights.%s: %g, must be >= 0", d, w))
		}
	}
	errs = append(errs, checkBuckets("difficulty_buckets", c.DifficultyBuckets)...)
	errs = append(errs, checkBuckets("cost_buckets", c.CostBuckets)...)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

func checkBuckets(field string, bs []Bucket) []error {
	var errs []error
	if len(bs) == 0 {
		return nil // tertiles of the pool
	}
	names := map[string]bool{}
	prev := math.Inf(-1)
	for i, b := range bs {
		if b.Name == "" {
			errs = append(errs, fmt.Errorf("%s[%d].name: empty", field, i))
		}
		if names[b.Name] {
			errs = append(errs, fmt.Errorf("%s[%d].name: %q repeated", field, i, b.Name))
		}
		names[b.Name] = true
		last := i == len(bs)-1
		switch {
		case last && b.Below != nil:
			errs = append(errs, fmt.Errorf("%s[%d].below: the last bucket must be open (no below)", field, i))
		case !last && b.Below == nil:
			errs = append(errs, fmt.Errorf("%s[%d].below: required on all but the last bucket", field, i))
		case !last && *b.Below <= prev:
			errs = append(errs, fmt.Errorf("%s[%d].below: %g not above the previous bound %g", field, i, *b.Below, prev))
		}
		if b.Below != nil {
			prev = *b.Below
		}
	}
	return errs
}

func isDim(d string) bool {
	for _, x := range Dims {
		if d == x {
			return true
		}
	}
	return false
}

// tertileBuckets cuts values at their 1/3 and 2/3 quantiles, dropping
// repeated cuts, and names each bucket by its bounds.
func tertileBuckets(values []float64) []Bucket {
	if len(values) == 0 {
		return []Bucket{{Name: "all"}}
	}
	v := append([]float64(nil), values...)
	sort.Float64s(v)
	var cuts []float64
	for _, q := range []int{1, 2} {
		c := v[len(v)*q/3]
		if c > v[0] && (len(cuts) == 0 || c > cuts[len(cuts)-1]) {
			cuts = append(cuts, c)
		}
	}
	if len(cuts) == 0 && v[len(v)-1] > v[0] {
		// One value fills both tertiles: still separate it from the rest.
		cuts = append(cuts, v[sort.SearchFloat64s(v, math.Nextafter(v[0], math.Inf(1)))])
	}
	if len(cuts) == 0 {
		return []Bucket{{Name: "all"}}
	}
	bs := []Bucket{{Name: fmt.Sprintf("<%g", cuts[0]), Below: f64(cuts[0])}}
	for i := 1; i < len(cuts); i++ {
		bs = append(bs, Bucket{Name: fmt.Sprintf("%g-%g", cuts[i-1], cuts[i]), Below: f64(cuts[i])})
	}
	return append(bs, Bucket{Name: fmt.Sprintf(">=%g", cuts[len(cuts)-1])})
}

func bucketOf(bs []Bucket, v float64) string {
	for _, b := range bs {
		if b.Below == nil || v < *b.Below {
			return b.Name
		}
	}
	return bs[len(bs)-1].Name
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Package filter provides the "filter" stage: keep the items whose domain,
// family and route are in configured sets; the others become rejection rows
// (reason "filtered"), so the funnel still counts them.
package filter

import (
	"context"
	"errors"
	"fmt"

	"github.com/crucible-data/crucible/engine"
)

// Config selects items. An empty list admits every value.
type Config struct {
	Domains  []string `yaml:"domains"`
	Families []string `yaml:"families"`
	Routes   []string `yaml:"routes"`
}

// Validate reports every bad field at once.
func (c Config) Validate() error {
	var errs []error
	for _, d := range c.Domains {
		if d != engine.DomainRTL && d != engine.DomainKernel {
			errs = append(errs, fmt.Errorf("domains: %q is not rtl|kernel", d))
		}
	}
	for _, r := range c.Routes {
		switch r {
		case engine.RouteSeed, engine.RouteSolutionFirst, engine.RouteInstructionFirst, engine.RouteContractMutation:
		default:
			errs = append(errs, fmt.Errorf("routes: unknown route %q", r))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: filter: %w", engine.ErrConfig, errors.Join(errs...))
	}
	return nil
}

// Keep reports whether an item passes, and if not, which field stopped it.
func (c Config) Keep(it *engine.Item) (bool, string) {
	for _, f := range []struct {
		name, v string
		set     []string
	}{{"domain", it.Domain, c.Domains}, {"family", it.Family, c.Families}, {"route", it.Route, c.Routes}} {
		if len(f.set) > 0 && !contains(f.set, f.v) {
			return false, fmt.Sprintf("%s %q not in %v", f.name, f.v, f.set)
		}
	}
	return true, ""
}

func contains(set []string, v string) bool {
	for _, s := range set {
		if s == v {
			return true
		}
	}
	return false
}

// RegisterStages adds the "filter" stage type.
func RegisterStages(reg *engine.Registry) {
	reg.RegisterType(engine.StageType{Name: "filter", Config: Config{}, Parallelism: engine.PerPart, Outputs: []string{"items", "rejections"},
		Factory: func(sc engine.StageConfig) (engine.Stage, error) {
			var cfg Config
			if err := sc.Decode(&cfg); err != nil {
				return nil, err
			}
			if err := cfg.Validate(); err != nil {
				return nil, err
			}
			return engine.StageFunc(func(ctx context.Context, sc *engine.StageContext) error { return run(ctx, sc, cfg) }), nil
		}, Doc: "keeps items by domain/family/route; the rest become rejection rows"})
}

func run(ctx context.Context, sc *engine.StageContext, cfg Config) error {
	kept, err := engine.StageWriter[engine.Item](sc, "items")
	if err != nil {
		return err
	}
	rejected, err := engine.StageWriter[engine.Rejection](sc, "rejections")
	if err != nil {
		return err
	}
	p := sc.Progress(sc.InputRows("items"))
	defer p.Done()
	var n int64
	return engine.ScanRows(ctx, sc.InputPaths("items"), func(it *engine.Item) error {
		if n++; n%1024 == 0 {
			p.Add(1024)
		}
		if ok, why := cfg.Keep(it); !ok {
			sc.Count("filtered", 1)
			return rejected.Write(engine.Rejection{ItemID: it.ItemID, Stage: sc.Name, Gate: "filter", Reason: "filtered", Detail: why})
		}
		sc.Count("kept", 1)
		return kept.Write(*it)
	})
}

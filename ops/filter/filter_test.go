package filter

import (
	"errors"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
)

func TestKeep(t *testing.T) {
	it := engine.Item{Domain: "rtl", Family: "fifo", Route: "seed"}
	for _, tc := range []struct {
		cfg  Config
		keep bool
		why  string
	}{
		{Config{}, true, ""},
		{Config{Domains: []string{"rtl"}}, true, ""},
		{Config{Domains: []string{"kernel"}}, false, "domain"},
		{Config{Families: []string{"fifo", "alu"}, Routes: []string{"seed"}}, true, ""},
		{Config{Families: []string{"alu"}}, false, "family"},
		{Config{Routes: []string{"contract_mutation"}}, false, "route"},
	} {
		keep, why := tc.cfg.Keep(&it)
		if keep != tc.keep || !strings.Contains(why, tc.why) {
			t.Errorf("%+v: keep=%v why=%q", tc.cfg, keep, why)
		}
	}
}

func TestValidateReportsEveryField(t *testing.T) {
	err := Config{Domains: []string{"fpga"}, Routes: []string{"sideways"}}.Validate()
	if !errors.Is(err, engine.ErrConfig) || !strings.Contains(err.Error(), "fpga") || !strings.Contains(err.Error(), "sideways") {
		t.Fatalf("%v", err)
	}
}

package report

import (
	"context"
	"html/template"
	"sort"
	"strings"

	"github.com/crucible-data/crucible/engine"
)

// HarnessStrength is the measured strength of the build's verifiers (the
// RTL harness-strength audit, rtl.Verifier.Strength): per family and the
// weakest tasks.
type HarnessStrength struct {
	Tasks    int64            `json:"tasks"` // tasks with a measured strength
	Weak     int64            `json:"weak"`  // of those, passed by a trivial candidate
	Families []FamilyStrength `json:"families"`
	Weakest  []TaskStrength   `json:"weakest"` // weak first, then by mutant kill rate, at most maxWeakest
}

// FamilyStrength aggregates one domain/family.
type FamilyStrength struct {
	Family             string  `json:"family"`
	Tasks              int64   `json:"tasks"`
	Weak               int64   `json:"weak"`
	MeanMutantKillRate float64 `json:"mean_mutant_kill_rate"` // over tasks with judged mutants
	MinMutantKillRate  float64 `json:"min_mutant_kill_rate"`
}

// TaskStrength is one task's audit.
type TaskStrength struct {
	ItemID         string   `json:"item_id"`
	Family         string   `json:"family"`
	Weak           bool     `json:"weak"`
	TrivialKilled  int32    `json:"trivial_killed"`
	TrivialTried   int32    `json:"trivial_tried"`
	MutantKilled   int32    `json:"mutant_killed"`
	MutantTried    int32    `json:"mutant_tried"`
	MutantKillRate float64  `json:"mutant_kill_rate"` // 1 when no mutant was judged
	Survivors      []string `json:"survivors,omitempty"`
}

const maxWeakest = 10

type strengthItemRow struct {
	ItemID           string                  `arrow:"item_id"`
	Domain           string                  `arrow:"domain"`
	Family           string                  `arrow:"family"`
	VerifierStrength engine.VerifierStrength `arrow:"verifier_strength"`
}

type strengthEvidenceRow struct {
	ItemID       string               `arrow:"item_id"`
	CandidateID  string               `arrow:"candidate_id"`
	Measurements []engine.Measurement `arrow:"measurements"`
}

// collectStrength reads the strength recorded on items (any stage) and, for
// tasks dropped before any items stage kept them (a weak seed is rejected
// by verify_rtl), on their reference evidence.
func (r *Report) collectStrength(ctx context.Context, stages []stageOut) error {
	family := map[string]string{}
	byID := map[string]engine.VerifierStrength{}
	for _, so := range stages {
		for _, p := range stageItemShards(so) {
			if err := scanRows(ctx, p, func(rows []strengthItemRow) error {
				for _, it := range rows {
					if _, ok := family[it.ItemID]; !ok {
						family[it.ItemID] = orDash(it.Domain) + "/" + orDash(it.Family)
					}
					if it.VerifierStrength.Measured {
						byID[it.ItemID] = it.VerifierStrength
					}
				}
				return nil
			}); err != nil {
				return err
			}
		}
		for _, p := range so.out.Shards("evidence") {
			if err := scanRows(ctx, p, func(rows []strengthEvidenceRow) error {
				for _, e := range rows {
					if _, ok := byID[e.ItemID]; ok || e.CandidateID != "reference" {
						continue
					}
					if s, ok := strengthFromMeasurements(e.Measurements); ok {
						byID[e.ItemID] = s
					}
				}
				return nil
			}); err != nil {
				return err
			}
		}
	}
	if len(byID) == 0 {
		return nil
	}
	r.Strength = harnessStrength(byID, family)
	return nil
}

func strengthFromMeasurements(ms []engine.Measurement) (engine.VerifierStrength, bool) {
	ev := engine.Evidence{Measurements: ms}
	get := func(n string) int32 { m, _ := ev.Measurement(n); return int32(m.Int) }
	if _, ok := ev.Measurement("strength_trivial_tried"); !ok {
		return engine.VerifierStrength{}, false
	}
	s := engine.VerifierStrength{Measured: true, TrivialKilled: get("strength_trivial_killed"), TrivialTried: get("strength_trivial_tried"),
		MutantKilled: get("strength_mutants_killed"), MutantTried: get("strength_mutants_tried")}
	if m, ok := ev.Measurement("strength_survivors"); ok && m.Text != "" {
		s.Survivors = strings.Split(m.Text, ", ")
	}
	return s, true
}

func harnessStrength(byID map[string]engine.VerifierStrength, family map[string]string) *HarnessStrength {
	hs := &HarnessStrength{}
	type agg struct {
		FamilyStrength
		rates []float64
	}
	fams := map[string]*agg{}
	for id, s := range byID {
		fam := family[id]
		if fam == "" {
			fam = "-"
		}
		rate, ok := s.MutantKillRate()
		if !ok {
			rate = 1
		}
		t := TaskStrength{ItemID: id, Family: fam, Weak: s.Weak(), TrivialKilled: s.TrivialKilled, TrivialTried: s.TrivialTried,
			MutantKilled: s.MutantKilled, MutantTried: s.MutantTried, MutantKillRate: rate, Survivors: s.Survivors}
		hs.Tasks++
		a := fams[fam]
		if a == nil {
			a = &agg{FamilyStrength: FamilyStrength{Family: fam, MinMutantKillRate: 1}}
			fams[fam] = a
		}
		a.Tasks++
		if t.Weak {
			hs.Weak++
			a.Weak++
		}
		if ok {
			a.rates = append(a.rates, rate)
			a.MinMutantKillRate = min(a.MinMutantKillRate, rate)
		}
		hs.Weakest = append(hs.Weakest, t)
	}
	for _, a := range fams {
		if len(a.rates) > 0 {
			var sum float64
			for _, x := range a.rates {
				sum += x
			}
			a.MeanMutantKillRate = sum / float64(len(a.rates))
		} else {
			a.MeanMutantKillRate = 1
		}
		hs.Families = append(hs.Families, a.FamilyStrength)
	}
	sort.Slice(hs.Families, func(i, j int) bool { return hs.Families[i].Family < hs.Families[j].Family })
	sort.Slice(hs.Weakest, func(i, j int) bool {
		a, b := hs.Weakest[i], hs.Weakest[j]
		if a.Weak != b.Weak {
			return a.Weak
		}
		if a.MutantKillRate != b.MutantKillRate {
			return a.MutantKillRate < b.MutantKillRate
		}
		return a.ItemID < b.ItemID
	})
	if len(hs.Weakest) > maxWeakest {
		hs.Weakest = hs.Weakest[:maxWeakest]
	}
	return hs
}

// The page's strength section (included by the main template).
var _ = template.Must(page.New("strength").Parse(`{{with .}}<section id="strength"><h2>Harness strength</h2>
<p>{{.Tasks}} tasks audited with trivial candidates and mutants of the reference; {{.Weak}} weak (a trivial candidate passes: their candidates' passes are unjudged and they are not admitted).</p>
<table><tr><th>family</th><th class="n">tasks</th><th class="n">weak</th><th class="n">mean mutant kill rate</th><th class="n">min</th></tr>
{{range .Families}}<tr><td>{{.Family}}</td><td class="n">{{.Tasks}}</td><td class="n">{{.Weak}}</td><td class="n">{{pct .MeanMutantKillRate}}</td><td class="n">{{pct .MinMutantKillRate}}</td></tr>
{{end}}</table>
<table><tr><th>weakest tasks</th><th>family</th><th class="n">trivial killed</th><th class="n">mutants killed</th><th class="n">kill rate</th><th>survivors</th></tr>
{{range .Weakest}}<tr><td>{{.ItemID}}{{if .Weak}} <b>(weak)</b>{{end}}</td><td>{{.Family}}</td><td class="n">{{.TrivialKilled}}/{{.TrivialTried}}</td><td class="n">{{.MutantKilled}}/{{.MutantTried}}</td><td class="n">{{pct .MutantKillRate}}</td><td>{{range $i, $s := .Survivors}}{{if $i}}, {{end}}{{$s}}{{end}}</td></tr>
{{end}}</table></section>{{end}}`))

package main

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/crucible-data/crucible/engine"
)

// stageFlags binds a stage's config struct to a command's flags, so a
// command's options are the stage's config and nothing else: each flag
// writes straight into its field as the command line is parsed (the field's
// value before binding is the flag's default), and there is no second
// struct of flag values to copy over by hand. Every scalar or string-list
// field gets a flag; the rest (maps, lists of structs) are reached with
// --set, which takes any key.
type stageFlags struct {
	cfg  any      // pointer to the config struct
	sets []string // --set key=value, in command-line order
}

// flagDoc overrides what bindStageFlags derives for the field at a YAML
// path ("strength.min_mutant_kill_rate"): the flag name (a command's flag
// that predates the derivation keeps its name, because scripts use it),
// its help text, or Skip for a field the command sets itself.
type flagDoc struct {
	Name string
	Help string
	Skip bool
}

// bindStageFlags registers cfg's flags and --set on fs. cfg must be a
// pointer to a struct holding the defaults.
func bindStageFlags(fs *pflag.FlagSet, cfg any, docs map[string]flagDoc) *stageFlags {
	s := &stageFlags{cfg: cfg}
	for _, f := range configFields(reflect.ValueOf(cfg).Elem(), "") {
		d := docs[f.path]
		if d.Skip {
			continue
		}
		name := d.Name
		if name == "" {
			name = strings.NewReplacer("_", "-", ".", "-").Replace(f.path)
		}
		help := d.Help
		if help == "" {
			help = "stage config " + f.path
		}
		bindField(fs, f.v, name, help)
	}
	fs.StringArrayVar(&s.sets, "set", nil, "set a stage config key (its YAML path, e.g. a.b=value; the value is YAML); repeatable, applied after the other flags")
	return s
}

type configField struct {
	path string
	v    reflect.Value
}

// configFields lists the settable leaves of a config struct with their
// YAML paths, in declaration order.
func configFields(v reflect.Value, prefix string) []configField {
	var out []configField
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		key, inline, ok := yamlKey(sf)
		if !ok {
			continue
		}
		fv := v.Field(i)
		if inline {
			if fv.Kind() == reflect.Struct {
				out = append(out, configFields(fv, prefix)...)
			}
			continue
		}
		path := prefix + key
		if fv.Kind() == reflect.Struct && !isYAMLLeaf(fv) {
			out = append(out, configFields(fv, path+".")...)
			continue
		}
		out = append(out, configField{path, fv})
	}
	return out
}

// yamlKey is the key a struct field has in YAML, as yaml.v3 names it.
func yamlKey(sf reflect.StructField) (key string, inline, ok bool) {
	if !sf.IsExported() {
		return "", false, false
	}
	tag := sf.Tag.Get("yaml")
	if tag == "-" {
		return "", false, false
	}
	name, opts, _ := strings.Cut(tag, ",")
	if strings.Contains(","+opts+",", ",inline,") {
		return "", true, true
	}
	if name == "" {
		name = strings.ToLower(sf.Name)
	}
	return name, false, true
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

// isYAMLLeaf reports whether a struct decodes itself (a YAML scalar, not a
// mapping of its fields).
func isYAMLLeaf(v reflect.Value) bool {
	return v.Type().Implements(unmarshalerType) || reflect.PointerTo(v.Type()).Implements(unmarshalerType) || v.Type() == reflect.TypeFor[time.Time]()
}

// bindField registers a flag writing into v; a kind with no flag form is
// left to --set.
func bindField(fs *pflag.FlagSet, v reflect.Value, name, help string) {
	p := v.Addr().Interface()
	switch p := p.(type) {
	case *time.Duration:
		fs.DurationVar(p, name, *p, help)
	case *string:
		fs.StringVar(p, name, *p, help)
	case *bool:
		fs.BoolVar(p, name, *p, help)
	case *int:
		fs.IntVar(p, name, *p, help)
	case *int64:
		fs.Int64Var(p, name, *p, help)
	case *uint64:
		fs.Uint64Var(p, name, *p, help)
	case *float64:
		fs.Float64Var(p, name, *p, help)
	case *[]string:
		fs.StringSliceVar(p, name, *p, help)
	}
}

// apply applies the --set overrides, in order, onto the config the flags
// filled. A key that is not in the config is a usage error naming it.
func (s *stageFlags) apply() error {
	for _, kv := range s.sets {
		key, val, ok := strings.Cut(kv, "=")
		if !ok || key == "" {
			return fmt.Errorf("%w: --set %q: want key=value", errUsage, kv)
		}
		if err := checkConfigKey(reflect.TypeOf(s.cfg).Elem(), key); err != nil {
			return fmt.Errorf("%w: --set %s: %v", errUsage, key, err)
		}
		var vn yaml.Node
		if err := yaml.Unmarshal([]byte(val), &vn); err != nil {
			return fmt.Errorf("%w: --set %s: value %q is not YAML: %v", errUsage, key, val, err)
		}
		node := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
		if len(vn.Content) > 0 {
			node = vn.Content[0]
		}
		segs := strings.Split(key, ".")
		for i := len(segs) - 1; i >= 0; i-- {
			node = &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: segs[i]}, node}}
		}
		text, err := yaml.Marshal(node)
		if err != nil {
			return fmt.Errorf("%w: --set %s: %v", errUsage, key, err)
		}
		dec := yaml.NewDecoder(strings.NewReader(string(text)))
		dec.KnownFields(true)
		if err := dec.Decode(s.cfg); err != nil {
			return fmt.Errorf("%w: --set %s=%s: %v", errUsage, key, val, err)
		}
	}
	return nil
}

// node is the config as a pipeline's `config:` block, for the stage spec.
func (s *stageFlags) node() (yaml.Node, error) {
	var n yaml.Node
	if err := n.Encode(s.cfg); err != nil {
		return n, fmt.Errorf("%w: %v", engine.ErrConfig, err)
	}
	return n, nil
}

// checkConfigKey reports whether a dotted YAML path names a field of t (a
// path into a map field names one of its entries, which may be new).
func checkConfigKey(t reflect.Type, key string) error {
	segs := strings.Split(key, ".")
	for i, seg := range segs {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case t.Kind() == reflect.Map:
			return nil
		case t.Kind() != reflect.Struct || isYAMLLeaf(reflect.New(t).Elem()):
			return fmt.Errorf("%s is not a mapping, so it has no key %s", strings.Join(segs[:i], "."), seg)
		}
		ft, ok := fieldByKey(t, seg)
		if !ok {
			where := "the config"
			if i > 0 {
				where = strings.Join(segs[:i], ".")
			}
			return fmt.Errorf("no key %q in %s (keys: %s)", seg, where, strings.Join(configKeys(t), ", "))
		}
		t = ft
	}
	return nil
}

func fieldByKey(t reflect.Type, key string) (reflect.Type, bool) {
	for i := 0; i < t.NumField(); i++ {
		k, inline, ok := yamlKey(t.Field(i))
		switch {
		case !ok:
		case inline:
			if ft := t.Field(i).Type; ft.Kind() == reflect.Struct {
				if ft, ok := fieldByKey(ft, key); ok {
					return ft, true
				}
			}
		case k == key:
			return t.Field(i).Type, true
		}
	}
	return nil, false
}

package main

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

// stageFlags binds a stage's config struct to a command's flags, so a
// command's options are the stage's config and nothing else: one flag per
// scalar or string-list field, derived once from the struct (the field's
// value before binding is the flag's default), and --set for any key (maps,
// lists of structs). The flags parse into a copy of the config; apply
// layers the config in one place — defaults, then the --config file where
// the command has one, then the flags given on the command line, then
// --set — so no command keeps its own struct of flag values to copy over.
type stageFlags struct {
	cfg    reflect.Value // pointer to the config struct
	parsed reflect.Value // pointer to the copy the flags parse into
	fs     *pflag.FlagSet
	bound  []boundFlag
	file   string   // --config, where registered
	sets   []string // --set key=value, in command-line order
}

type boundFlag struct {
	name   string
	index  []int // the field, from the config struct down
	invert *bool // a --no-X flag for a bool field that defaults to true
}

// flagDoc overrides what bindStageFlags derives for the field at a YAML
// path ("strength.min_mutant_kill_rate"): the flag name (a command's flag
// that predates the derivation keeps its name, because scripts use it),
// its help text, Invert for a --no-X flag that sets a bool field to false,
// or Skip for a field (or a whole nested struct) the command sets itself
// or that only --set reaches.
type flagDoc struct {
	Name   string
	Help   string
	Invert bool
	Skip   bool
}

// bindStageFlags registers cfg's flags and --set on fs. cfg must be a
// pointer to a struct holding the defaults.
func bindStageFlags(fs *pflag.FlagSet, cfg any, docs map[string]flagDoc) *stageFlags {
	v := reflect.ValueOf(cfg)
	s := &stageFlags{cfg: v, parsed: reflect.New(v.Elem().Type()), fs: fs}
	s.parsed.Elem().Set(v.Elem())
	skip := func(path string) bool { return docs[path].Skip }
	for _, f := range configFields(v.Elem(), "", nil, skip) {
		d := docs[f.path]
		name := d.Name
		if name == "" {
			name = strings.NewReplacer("_", "-", ".", "-").Replace(f.path)
		}
		help := d.Help
		if help == "" {
			help = "stage config " + f.path
		}
		b := boundFlag{name: name, index: f.index}
		if d.Invert {
			b.invert = fs.Bool(name, false, help)
		} else if !bindField(fs, s.parsed.Elem().FieldByIndex(f.index), name, help) {
			continue
		}
		s.bound = append(s.bound, b)
	}
	fs.StringArrayVar(&s.sets, "set", nil, "set a stage config key (its YAML path, e.g. a.b=value; the value is YAML); repeatable, applied after the other flags")
	return s
}

// withConfigFile adds --config FILE: a YAML file with the stage's config
// block, applied before the flags.
func (s *stageFlags) withConfigFile(help string) *stageFlags {
	s.fs.StringVar(&s.file, "config", "", help)
	return s
}

type configField struct {
	path  string
	index []int
}

// configFields lists the settable leaves of a config struct with their
// YAML paths, in declaration order; skip leaves out a path's subtree.
func configFields(v reflect.Value, prefix string, index []int, skip func(string) bool) []configField {
	var out []configField
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		key, inline, ok := yamlKey(sf)
		if !ok {
			continue
		}
		fv := v.Field(i)
		idx := append(append([]int(nil), index...), i)
		if inline {
			if fv.Kind() == reflect.Struct {
				out = append(out, configFields(fv, prefix, idx, skip)...)
			}
			continue
		}
		path := prefix + key
		switch {
		case skip(path):
		case fv.Kind() == reflect.Struct && !isYAMLLeaf(fv):
			out = append(out, configFields(fv, path+".", idx, skip)...)
		default:
			out = append(out, configField{path, idx})
		}
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
// left to --set (false).
func bindField(fs *pflag.FlagSet, v reflect.Value, name, help string) bool {
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
	case *int32:
		fs.Int32Var(p, name, *p, help)
	case *int64:
		fs.Int64Var(p, name, *p, help)
	case *uint64:
		fs.Uint64Var(p, name, *p, help)
	case *float64:
		fs.Float64Var(p, name, *p, help)
	case *[]string:
		fs.StringSliceVar(p, name, *p, help)
	default:
		return false
	}
	return true
}

// apply layers the config: the --config file, the flags given on the
// command line, then the --set overrides in order. A key that is not in
// the config is a usage error naming it.
func (s *stageFlags) apply() error {
	if s.file != "" {
		if err := s.decodeFile(); err != nil {
			return err
		}
	}
	for _, b := range s.bound {
		if !s.fs.Changed(b.name) {
			continue
		}
		dst := s.cfg.Elem().FieldByIndex(b.index)
		if b.invert != nil {
			dst.SetBool(!*b.invert)
		} else {
			dst.Set(s.parsed.Elem().FieldByIndex(b.index))
		}
	}
	for _, kv := range s.sets {
		key, val, ok := strings.Cut(kv, "=")
		if !ok || key == "" {
			return fmt.Errorf("%w: --set %q: want key=value", errUsage, kv)
		}
		if err := checkConfigKey(s.cfg.Type().Elem(), key); err != nil {
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
		if err := dec.Decode(s.cfg.Interface()); err != nil {
			return fmt.Errorf("%w: --set %s=%s: %v", errUsage, key, val, err)
		}
	}
	return nil
}

// decodeFile decodes the --config file onto the config. A map the file
// sets replaces the default one instead of adding to it (a file's
// strata_weights is the whole mix), as the stages decode their blocks.
func (s *stageFlags) decodeFile() error {
	type saved struct {
		field, def reflect.Value
	}
	var maps []saved
	for _, f := range configFields(s.cfg.Elem(), "", nil, func(string) bool { return false }) {
		if v := s.cfg.Elem().FieldByIndex(f.index); v.Kind() == reflect.Map && !v.IsNil() {
			maps = append(maps, saved{v, reflect.ValueOf(v.Interface())})
			v.SetZero()
		}
	}
	err := decodeYAMLFile(s.file, s.cfg.Interface())
	for _, m := range maps {
		if m.field.IsNil() {
			m.field.Set(m.def)
		}
	}
	return err
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

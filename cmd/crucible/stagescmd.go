package main

import (
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/spf13/cobra"

	"github.com/crucible-data/crucible/engine"
)

func newStagesCmd() *cobra.Command {
	var markdown bool
	c := &cobra.Command{
		Use:   "stages",
		Short: "List every pipeline stage type with its parallelism (per-part or global), output kinds and broadcast inputs",
		Long: `Lists the stage types a pipeline's "type:" may name, as each declares itself where it is
registered. per-part: under --shard i/N, part i reads part i of its upstreams (or every Nth
shard) and writes part i. global: runs once over every part of every upstream (a sharded run
hands it all parts once they are committed; --stage S --shard i/N is refused). broadcast:
input kinds every part of the stage reads whole.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if markdown {
				_, err := io.WriteString(cmd.OutOrStdout(), stagesMarkdown(newRegistry()))
				return err
			}
			return writeStages(cmd.OutOrStdout(), newRegistry())
		},
	}
	c.Flags().BoolVar(&markdown, "markdown", false, "print the table the README's scaling section holds")
	return c
}

func writeStages(w io.Writer, reg *engine.Registry) error {
	for _, name := range reg.Types() {
		t, _ := reg.Type(name)
		if _, err := fmt.Fprintf(w, "%-14s %-9s outputs: %s", name, t.Parallelism, strings.Join(t.Outputs, ", ")); err != nil {
			return err
		}
		if len(t.Broadcast) > 0 {
			fmt.Fprintf(w, "; broadcast: %s", strings.Join(t.Broadcast, ", "))
		}
		if _, err := fmt.Fprintf(w, "\n  %s\n", t.Doc); err != nil {
			return err
		}
		if keys := configKeys(reflect.TypeOf(t.Config)); len(keys) > 0 {
			fmt.Fprintf(w, "  config: %s\n", strings.Join(keys, ", "))
		}
	}
	return nil
}

// stagesMarkdown is the README's stage table (checked by a test).
func stagesMarkdown(reg *engine.Registry) string {
	var b strings.Builder
	b.WriteString("| stage type | parallelism | outputs | broadcast inputs |\n|---|---|---|---|\n")
	for _, name := range reg.Types() {
		t, _ := reg.Type(name)
		bc := "—"
		if len(t.Broadcast) > 0 {
			bc = "`" + strings.Join(t.Broadcast, "`, `") + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | `%s` | %s |\n", name, t.Parallelism, strings.Join(t.Outputs, "`, `"), bc)
	}
	return b.String()
}

// configKeys are the YAML keys of a stage's config struct (inline structs
// flattened), in declaration order.
func configKeys(t reflect.Type) []string {
	if t == nil {
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for i := 0; i < t.NumField(); i++ {
		key, inline, ok := yamlKey(t.Field(i))
		switch {
		case !ok:
		case inline:
			out = append(out, configKeys(t.Field(i).Type)...)
		default:
			out = append(out, key)
		}
	}
	return out
}

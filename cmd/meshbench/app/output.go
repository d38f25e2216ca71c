package app

import (
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"
)

// printValue writes v as JSON or YAML, or the human text from table() for -o table.
func printValue(w io.Writer, format string, v any, table func() string) error {
	switch format {
	case "json":
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return fmt.Errorf("encode JSON: %w", err)
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode YAML: %w", err)
		}
		_, err = w.Write(b)
		return err
	case "table", "":
		_, err := io.WriteString(w, table())
		return err
	default:
		return badInput(fmt.Errorf("--output %q: use table, json or yaml", format))
	}
}

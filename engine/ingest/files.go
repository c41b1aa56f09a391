package ingest

import (
	"path/filepath"
	"strings"

	"github.com/crucible-data/crucible/engine"
)

func isTaskJSON(path string) bool { return filepath.Base(path) == "task.json" }

func isDataFile(path string) bool {
	return engine.IsJSONLName(path) || strings.HasSuffix(path, ".json") && !isTaskJSON(path) || engine.IsParquet(path)
}

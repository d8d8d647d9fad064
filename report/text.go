// Package report renders results files: text tables, Markdown, CSV, charts and HTML.
package report

import (
	"fmt"
	"io"

	"github.com/pgceiling/pgceiling/result"
)

// WriteText writes the summary table a command prints: for a run, the probe's figures;
// for a search, the sweeps side by side. (Placeholder until the report package lands.)
func WriteText(w io.Writer, f *result.File) error {
	for _, s := range f.Sweeps {
		fmt.Fprintf(w, "%s sync=%s knee=%.0f probes=%d\n", s.Workload, s.SyncCommit, s.Knee, len(s.Probes))
	}
	return nil
}

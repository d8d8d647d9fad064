package report

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/pgceiling/pgceiling/result"
)

// WriteAll writes the whole report into dir (created if missing): report.md, probes.csv,
// series.csv, every chart as PNG and SVG, and report.html. It returns the paths written, in order.
// Each file is written whole to a temporary name and renamed, so a failure never leaves
// half a file under its final name.
func WriteAll(dir string, f *result.File) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("report directory: %w", err)
	}
	var written []string
	put := func(name string, write func(io.Writer) error) error {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			return err
		}
		path := filepath.Join(dir, name)
		if err := result.WriteFileAtomic(path, b.Bytes()); err != nil {
			return err
		}
		written = append(written, path)
		return nil
	}
	if err := put("report.md", func(w io.Writer) error { return WriteMarkdown(w, f) }); err != nil {
		return written, err
	}
	if err := put("probes.csv", func(w io.Writer) error { return WriteCSV(w, f) }); err != nil {
		return written, err
	}
	if err := put("series.csv", func(w io.Writer) error { return WriteSeriesCSV(w, f) }); err != nil {
		return written, err
	}
	charts, err := Charts(f)
	if err != nil {
		return written, err
	}
	for _, c := range charts {
		if err := put(c.Name+".png", c.WritePNG); err != nil {
			return written, err
		}
		if err := put(c.Name+".svg", c.WriteSVG); err != nil {
			return written, err
		}
	}
	if err := put("report.html", func(w io.Writer) error { return writeHTML(w, f, f.CommandLine, charts) }); err != nil {
		return written, err
	}
	return written, nil
}

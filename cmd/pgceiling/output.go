package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/pgceiling/pgceiling/config"
	"github.com/pgceiling/pgceiling/report"
	"github.com/pgceiling/pgceiling/result"
)

// setOutput applies run's and search's output flags to env: --quiet, and the human text
// on stderr when stdout carries JSON (--json - or --summary-json -).
func setOutput(env *Env, o *config.Output, jsonPath string) {
	env.quiet = o.Quiet
	env.textToStderr = o.ToStdout(jsonPath)
}

// checkOutputs refuses, before any work, a results file, summary file or report
// directory that cannot be written.
func checkOutputs(jsonPath, summaryPath, reportDir string) error {
	if err := config.CheckOutputFile("--json", jsonPath); err != nil {
		return err
	}
	if err := config.CheckOutputFile("--summary-json", summaryPath); err != nil {
		return err
	}
	return config.CheckOutputDir("--report", reportDir)
}

// writeText prints the summary of f fitted to width, or whole with wide.
func writeText(w io.Writer, f *result.File, width int, wide bool) error {
	return report.WriteTextOpts(w, f, report.TextOptions{Width: width, Wide: wide})
}

// writeResults writes the results file to path, or to stdout for "-".
func writeResults(env *Env, path string, f *result.File) error {
	if path != config.Stdout {
		return result.Write(path, f)
	}
	return writeJSON(env.Stdout, f)
}

// writeSummary writes the short summary of f (with the run's thresholds) to path, or to
// stdout for "-"; nothing for "".
func writeSummary(env *Env, path string, f *result.File, th []result.Threshold) error {
	if path == "" {
		return nil
	}
	s := result.Summarize(f, th)
	if path == config.Stdout {
		return writeJSON(env.Stdout, s)
	}
	var b bytes.Buffer
	if err := writeJSON(&b, s); err != nil {
		return fmt.Errorf("--summary-json: %w", err)
	}
	if err := result.WriteFileAtomic(path, b.Bytes()); err != nil {
		return fmt.Errorf("--summary-json: %w", err)
	}
	return nil
}

// writeJSON writes v as indented JSON (no HTML escapes: "<=" stays readable).
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}

// thresholdLines describes each threshold: what was asked, what was measured, ok or
// BROKEN.
func thresholdLines(th []result.Threshold) []string {
	var out []string
	for _, t := range th {
		verdict := "ok"
		if !t.OK {
			verdict = "BROKEN"
		}
		switch t.Name {
		case "error_rate":
			out = append(out, fmt.Sprintf("threshold error rate <= %s (--fail-on-error-rate): %s, measured %s",
				percent(t.Limit), verdict, percent(t.Value)))
		default:
			out = append(out, fmt.Sprintf("threshold p99 <= %.1f ms (--p99-slo): %s, measured %.1f ms", t.Limit, verdict, t.Value))
		}
	}
	return out
}

// brokenThresholds is the ThresholdError for the broken thresholds in th (nil: none).
func brokenThresholds(th []result.Threshold, where string) error {
	var broken []string
	for i, l := range thresholdLines(th) {
		if !th[i].OK {
			broken = append(broken, strings.TrimPrefix(l, "threshold "))
		}
	}
	if len(broken) == 0 {
		return nil
	}
	return config.Thresholdf("run: %s%s", strings.Join(broken, "; "), where)
}

func percent(v float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.4f", 100*v), "0"), ".") + " %"
}

package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/pgceiling/pgceiling/result"
)

// WriteMarkdown writes the report as GitHub-flavoured Markdown: the same tables as the
// text report, warnings as block quotes first and last, the command line as code.
func WriteMarkdown(w io.Writer, f *result.File) error {
	m := buildModel(f, false)
	bw := bufio.NewWriter(w)
	writeMarkdownWarnings(bw, m.Warnings)
	fmt.Fprintf(bw, "# %s\n\n", m.Title)
	for _, l := range m.Meta {
		if c, ok := strings.CutPrefix(l, "command: "); ok {
			fmt.Fprintf(bw, "- command: `%s`\n", strings.ReplaceAll(c, "`", "'"))
			continue
		}
		fmt.Fprintf(bw, "- %s\n", mdEscape(l))
	}
	if m.Disclosure != "" {
		fmt.Fprintf(bw, "- %s\n", mdEscape(m.Disclosure))
	}
	for _, p := range m.Problems {
		fmt.Fprintf(bw, "- **%s**\n", mdEscape(p))
	}
	for _, t := range m.Tables {
		fmt.Fprintf(bw, "\n## %s\n\n", mdEscape(t.Title))
		writeMarkdownTable(bw, t)
		if len(t.Notes) > 0 {
			fmt.Fprintln(bw)
			for _, n := range t.Notes {
				fmt.Fprintf(bw, "- %s\n", mdEscape(n))
			}
		}
	}
	if len(m.Warnings) > 0 {
		fmt.Fprintln(bw)
	}
	writeMarkdownWarnings(bw, m.Warnings)
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("markdown report: %w", err)
	}
	return nil
}

func writeMarkdownTable(w io.Writer, t table) {
	row := func(cells []string) {
		esc := make([]string, len(cells))
		for i, c := range cells {
			esc[i] = mdEscape(c)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(esc, " | "))
	}
	row(t.Header)
	seps := make([]string, len(t.Header))
	for i := range seps {
		seps[i] = "---"
	}
	fmt.Fprintf(w, "|%s|\n", strings.Join(seps, "|"))
	for _, r := range t.Rows {
		row(r)
	}
}

func writeMarkdownWarnings(w io.Writer, ws []string) {
	for _, s := range ws {
		fmt.Fprintf(w, "> **WARNING:** %s\n\n", mdEscape(s))
	}
}

// mdEscape keeps a cell from breaking the table or turning into markup.
var mdReplacer = strings.NewReplacer("|", `\|`, "*", `\*`, "_", `\_`, "`", "'", "<", "&lt;", ">", "&gt;", "\n", " ")

func mdEscape(s string) string { return mdReplacer.Replace(s) }

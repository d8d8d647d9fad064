package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// defaultWidth is the width text fits when neither $COLUMNS nor a terminal says.
const defaultWidth = 100

// columns is the width the CLI's text fits: $COLUMNS when it is a number, else the
// terminal's (term: the width of stdout or stderr when one is a terminal), else 100.
func columns(getenv func(string) string, term func() (int, bool)) int {
	if n, err := strconv.Atoi(strings.TrimSpace(getenv("COLUMNS"))); err == nil && n > 0 {
		return max(n, 40)
	}
	if term != nil {
		if n, ok := term(); ok {
			return max(n, 40)
		}
	}
	return defaultWidth
}

// width is the width the command's text fits.
func (e *Env) width() int {
	if e.Width > 0 {
		return e.Width
	}
	return defaultWidth
}

// info is where progress and announcements go: stderr, or nowhere with --quiet.
func (e *Env) info() io.Writer {
	if e.quiet {
		return io.Discard
	}
	return e.Stderr
}

// text is where the human summary goes: stdout, or stderr when stdout carries JSON.
func (e *Env) text() io.Writer {
	if e.textToStderr {
		return e.Stderr
	}
	return e.Stdout
}

// say prints one announcement on stderr (unless --quiet), wrapped to the width with
// indented continuation lines.
func (e *Env) say(format string, args ...any) {
	printWrapped(e.info(), fmt.Sprintf(format, args...), e.width())
}

// warnf prints a warning on stderr, also with --quiet, wrapped like say.
func (e *Env) warnf(format string, args ...any) {
	printWrapped(e.Stderr, "pgceiling: warning: "+fmt.Sprintf(format, args...), e.width())
}

func printWrapped(w io.Writer, s string, width int) {
	for i, l := range wrapWords(s, width-1) {
		if i > 0 {
			l = "    " + l
		}
		fmt.Fprintln(w, l)
	}
}

// wrapWords breaks s at spaces into lines of at most width characters, continuation
// lines 4 shorter (for their indent); a word longer than a line is cut.
func wrapWords(s string, width int) []string { return fill(s, width, 4) }

// fill breaks s at spaces into a first line of at most width characters and further
// lines of at most width - indent; a word longer than a line is cut.
func fill(s string, width, indent int) []string {
	width = max(width, 20)
	var lines []string
	cur, limit := []rune(nil), width
	for _, f := range strings.Fields(s) {
		w := []rune(f)
		if len(cur) > 0 && len(cur)+1+len(w) > limit {
			lines, cur, limit = append(lines, string(cur)), nil, width-indent
		}
		for len(cur) == 0 && len(w) > limit {
			lines, w, limit = append(lines, string(w[:limit])), w[limit:], width-indent
		}
		if len(cur) > 0 {
			cur = append(cur, ' ')
		}
		cur = append(cur, w...)
	}
	return append(lines, string(cur))
}

// reflow re-fills text of paragraphs (separated by blank lines) to width; lines that
// start with a space are kept as they are (examples, lists).
func reflow(text string, width int) string {
	var paras []string
	for _, para := range strings.Split(strings.TrimSpace(text), "\n\n") {
		var out, words []string
		flush := func() {
			if len(words) > 0 {
				out = append(out, fill(strings.Join(words, " "), width-1, 0)...)
				words = nil
			}
		}
		for _, l := range strings.Split(para, "\n") {
			if strings.HasPrefix(l, " ") {
				flush()
				body := strings.TrimLeft(l, " ")
				indent := strings.Repeat(" ", len(l)-len(body))
				for i, f := range fill(body, width-1-len(indent), 4) {
					if i > 0 {
						f = "    " + f
					}
					out = append(out, indent+f)
				}
			} else {
				words = append(words, l)
			}
		}
		flush()
		paras = append(paras, strings.Join(out, "\n"))
	}
	return strings.Join(paras, "\n\n")
}

// Package report renders a pgceiling results file (result.File) for people: the text
// tables the commands print, Markdown, CSV (one row per probe), charts (PNG and SVG, drawn
// with gonum/plot) and one self-contained HTML page. It knows nothing of how the results
// were made: its only input is the file.
//
// Every textual format is built from the same model (see model.go), so the text, Markdown
// and HTML renderings always carry the same figures, and the warnings (an unsafe server,
// a driver-limited probe) appear first and last in each of them.
package report

// Command codesize prints the code-size figures of a refactoring note: for each package
// directory, its lines of Go outside and inside _test.go files and its largest non-test
// function; with -dup N, the blocks of N or more consecutive identical lines that occur
// in more than one place of the module's non-test Go files.
//
// Usage, from anywhere inside the module:
//
//	go run ./bench/codesize [-dup N] [-top K] [DIR ...]
//
// With no DIR it reports every package of the module (directories holding .go files,
// skipping testdata, vendor, nested modules and names starting with . or _). Lines are
// counted as wc -l counts them, comments and blank lines included, in every .go file
// whatever its build constraints. A function's size runs from its func keyword to its
// closing brace; methods are named Type.Method.
//
// Duplicated blocks are found on normalized lines: each line is trimmed of surrounding
// white space; lines that are blank or hold only brackets, commas and semicolons (a
// closing "})", say) are dropped, and so are the package clause and the imports. A
// block is a maximal run of at least N consecutive normalized lines that also occurs
// elsewhere. Occurrences do not overlap (a run repeating every d lines is d-line
// copies), and a block lying wholly inside the occurrences of a larger one is part of
// it. A block found at several places counts once; "dup lines" adds the lines of every
// occurrence but the first. The search always covers the whole module, so with -dup
// the package table also says how many blocks touch each listed package. Compare two
// states of the tree by running it in each (a worktree per commit, or a git archive of
// the old one: git archive REV | tar -x -C DIR, then codesize from DIR).
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
)

func main() {
	dup := flag.Int("dup", 0, "also find duplicated blocks of at least this many normalized lines (0: don't)")
	top := flag.Int("top", 5, "with -dup: how many of the largest duplicated blocks to list")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: codesize [-dup N] [-top K] [DIR ...]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := run(os.Stdout, flag.Args(), *dup, *top); err != nil {
		fmt.Fprintf(os.Stderr, "codesize: %v\n", err)
		os.Exit(1)
	}
}

func run(w io.Writer, dirs []string, dup, top int) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	all, err := packageDirs(root)
	if err != nil {
		return err
	}
	if len(dirs) == 0 {
		dirs = all
	} else {
		for i, d := range dirs {
			abs, err := filepath.Abs(d)
			if err != nil {
				return err
			}
			dirs[i] = abs
		}
	}
	pkgs := make([]pkgSize, 0, len(dirs))
	for _, d := range dirs {
		p, err := measure(d)
		if err != nil {
			return err
		}
		p.name = rel(root, d)
		pkgs = append(pkgs, p)
	}
	var blocks []block
	if dup > 0 {
		var files []string
		for _, d := range all {
			fs, err := goFiles(d, false)
			if err != nil {
				return err
			}
			files = append(files, fs...)
		}
		blocks, err = duplicates(files, dup)
		if err != nil {
			return err
		}
		for i := range blocks {
			for j := range blocks[i].at {
				blocks[i].at[j].file = rel(root, blocks[i].at[j].file)
			}
		}
	}
	printPackages(w, pkgs, blocks, dup > 0)
	if dup > 0 {
		printDuplicates(w, blocks, dup, top)
	}
	return nil
}

// moduleRoot is the nearest directory at or above the working directory holding go.mod.
func moduleRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", errors.New("no go.mod at or above the working directory")
		}
		d = parent
	}
}

// packageDirs lists the module's directories that hold .go files, sorted.
func packageDirs(root string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.IsDir() {
			return nil
		}
		name := e.Name()
		if path != root {
			if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		files, err := filepath.Glob(filepath.Join(path, "*.go"))
		if err != nil {
			return err
		}
		if len(files) > 0 {
			dirs = append(dirs, path)
		}
		return nil
	})
	sort.Strings(dirs)
	return dirs, err
}

// goFiles lists dir's .go files: the test files if tests, else the others.
func goFiles(dir string, tests bool) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") == tests {
			out = append(out, f)
		}
	}
	return out, nil
}

func rel(root, path string) string {
	r, err := filepath.Rel(root, path)
	if err != nil || strings.HasPrefix(r, "..") {
		return path
	}
	if r == "." {
		return "(root)"
	}
	return filepath.ToSlash(r)
}

type pkgSize struct {
	name        string
	dir         string
	lines, test int
	largest     string // name of the largest non-test function
	largestN    int    // its lines
}

func measure(dir string) (pkgSize, error) {
	p := pkgSize{dir: dir}
	src, err := goFiles(dir, false)
	if err != nil {
		return p, err
	}
	tests, err := goFiles(dir, true)
	if err != nil {
		return p, err
	}
	fset := token.NewFileSet()
	for _, f := range src {
		data, err := os.ReadFile(f)
		if err != nil {
			return p, err
		}
		p.lines += countLines(data)
		file, err := parser.ParseFile(fset, f, data, parser.SkipObjectResolution)
		if err != nil {
			return p, err
		}
		for _, d := range file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			if n > p.largestN {
				p.largest, p.largestN = funcName(fd), n
			}
		}
	}
	for _, f := range tests {
		data, err := os.ReadFile(f)
		if err != nil {
			return p, err
		}
		p.test += countLines(data)
	}
	return p, nil
}

// countLines counts lines as wc -l does, plus a last line without its newline.
func countLines(data []byte) int {
	n := bytes.Count(data, []byte("\n"))
	if len(data) > 0 && data[len(data)-1] != '\n' {
		n++
	}
	return n
}

func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fd.Name.Name
		}
		return fd.Name.Name
	}
}

func printPackages(w io.Writer, pkgs []pkgSize, blocks []block, withDup bool) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "package\tlines\ttest lines\tlargest function\tlines\t"
	if withDup {
		head += "dup blocks\t"
	}
	fmt.Fprintln(tw, head)
	var lines, test, dups int
	for _, p := range pkgs {
		row := fmt.Sprintf("%s\t%d\t%d\t%s\t%d\t", p.name, p.lines, p.test, p.largest, p.largestN)
		if withDup {
			n := touching(blocks, p.name)
			dups += n
			row += fmt.Sprintf("%d\t", n)
		}
		fmt.Fprintln(tw, row)
		lines += p.lines
		test += p.test
	}
	fmt.Fprintf(tw, "total\t%d\t%d\t\t\t\n", lines, test)
	tw.Flush()
}

// touching counts the blocks with an occurrence in package directory pkg.
func touching(blocks []block, pkg string) int {
	n := 0
	for _, b := range blocks {
		for _, o := range b.at {
			if filepath.ToSlash(filepath.Dir(o.file)) == pkg || (pkg == "(root)" && !strings.Contains(o.file, "/")) {
				n++
				break
			}
		}
	}
	return n
}

func printDuplicates(w io.Writer, blocks []block, min, top int) {
	extra := 0
	for _, b := range blocks {
		extra += b.lines * (len(b.at) - 1)
	}
	fmt.Fprintf(w, "\nduplicated blocks of %d or more normalized lines: %d (dup lines %d)\n", min, len(blocks), extra)
	for i, b := range blocks {
		if i == top {
			break
		}
		locs := make([]string, len(b.at))
		for j, o := range b.at {
			locs[j] = fmt.Sprintf("%s:%d-%d", o.file, o.from, o.to)
		}
		fmt.Fprintf(w, "  %d lines x%d: %s\n", b.lines, len(b.at), strings.Join(locs, " "))
	}
}

// A line is one normalized line and where it came from.
type line struct {
	text string
	num  int // 1-based line number in its file
}

// An occurrence is where a block sits: file and original first and last line.
type occurrence struct {
	file     string
	from, to int
}

func (o occurrence) before(p occurrence) bool {
	if o.file != p.file {
		return o.file < p.file
	}
	return o.from < p.from
}

// A block is one duplicated run of normalized lines and every place it occurs.
type block struct {
	lines int // normalized lines
	at    []occurrence
}

// normalize reads a file's lines, trimmed, without the blank and bracket-only ones
// and without the package clause and imports (two files importing the same six
// packages share no code).
func normalize(path string) ([]line, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, path, data, parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	skip := map[int]bool{fset.Position(file.Package).Line: true}
	for _, d := range file.Decls {
		if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.IMPORT {
			for l := fset.Position(gd.Pos()).Line; l <= fset.Position(gd.End()).Line; l++ {
				skip[l] = true
			}
		}
	}
	var out []line
	s := bufio.NewScanner(bytes.NewReader(data))
	s.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; s.Scan(); n++ {
		t := strings.TrimSpace(s.Text())
		if skip[n] || strings.Trim(t, "{}()[],;") == "" {
			continue
		}
		out = append(out, line{t, n})
	}
	return out, s.Err()
}

// duplicates finds the maximal runs of at least min normalized lines that occur more
// than once across files, largest first (by the lines the copies add).
func duplicates(files []string, min int) ([]block, error) {
	c := corpus{files: files, texts: make([][]line, len(files)), blocks: map[string]*block{}}
	for i, f := range files {
		ls, err := normalize(f)
		if err != nil {
			return nil, err
		}
		c.texts[i] = ls
	}
	// Every window of min lines, keyed by its text; each pair of equal windows that
	// cannot be extended backwards starts a maximal pair of copies.
	windows := map[string][]pos{}
	for f := range c.texts {
		for i := 0; i+min <= len(c.texts[f]); i++ {
			k := c.text(pos{f, i}, min)
			windows[k] = append(windows[k], pos{f, i})
		}
	}
	for _, ps := range windows {
		for x := range ps {
			for _, b := range ps[x+1:] {
				c.pair(ps[x], b, min)
			}
		}
	}
	out := make([]block, 0, len(c.order))
	for _, k := range c.order {
		if b := c.blocks[k]; !nested(b, c.blocks) {
			sort.Slice(b.at, func(i, j int) bool { return b.at[i].before(b.at[j]) })
			out = append(out, *b)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		wi, wj := out[i].lines*(len(out[i].at)-1), out[j].lines*(len(out[j].at)-1)
		if wi != wj {
			return wi > wj
		}
		return out[i].at[0].before(out[j].at[0])
	})
	return out, nil
}

// pos is a normalized line: the index of its file and its index in that file's lines.
type pos struct{ file, i int }

// corpus is the normalized files and the blocks found in them, keyed by their text.
type corpus struct {
	files  []string
	texts  [][]line
	blocks map[string]*block
	order  []string // the blocks' keys in the order found
}

// text is the n normalized lines from p, one string.
func (c *corpus) text(p pos, n int) string {
	var b strings.Builder
	for _, l := range c.texts[p.file][p.i : p.i+n] {
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	return b.String()
}

// equal reports whether the lines at a and b exist and are equal.
func (c *corpus) equal(a, b pos) bool {
	return a.i >= 0 && b.i >= 0 && a.i < len(c.texts[a.file]) && b.i < len(c.texts[b.file]) &&
		c.texts[a.file][a.i].text == c.texts[b.file][b.i].text
}

// pair records the copies that start at a and b (whose first min lines are equal, a
// before b) unless they extend backwards, which makes them part of an earlier pair.
func (c *corpus) pair(a, b pos, min int) {
	if c.equal(pos{a.file, a.i - 1}, pos{b.file, b.i - 1}) {
		return
	}
	n := min
	for c.equal(pos{a.file, a.i + n}, pos{b.file, b.i + n}) {
		n++
	}
	at := []pos{a, b}
	if a.file == b.file && b.i < a.i+n {
		// The copies overlap: a run that repeats every d lines, whose whole periods
		// are the occurrences of one d-line block.
		d := b.i - a.i
		if d < min {
			return
		}
		at = at[:0]
		for s := a.i; s+d <= b.i+n; s += d {
			at = append(at, pos{a.file, s})
		}
		n = d
	}
	k := c.text(a, n)
	bl := c.blocks[k]
	if bl == nil {
		bl = &block{lines: n}
		c.blocks[k] = bl
		c.order = append(c.order, k)
	}
	for _, p := range at {
		o := occurrence{c.files[p.file], c.texts[p.file][p.i].num, c.texts[p.file][p.i+n-1].num}
		if !slices.Contains(bl.at, o) {
			bl.at = append(bl.at, o)
		}
	}
}

// nested reports whether every occurrence of b lies inside an occurrence of one larger
// block: then b is only a part of that one (as in a long run of one repeated line).
func nested(b *block, all map[string]*block) bool {
	for _, big := range all {
		if big.lines <= b.lines {
			continue
		}
		inside := true
		for _, o := range b.at {
			in := false
			for _, p := range big.at {
				if o.file == p.file && p.from <= o.from && o.to <= p.to {
					in = true
					break
				}
			}
			if !in {
				inside = false
				break
			}
		}
		if inside {
			return true
		}
	}
	return false
}

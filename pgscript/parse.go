package pgscript

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Kind is what one command of a script is.
type Kind uint8

// The commands of a script.
const (
	KindSet     Kind = iota // \set VAR EXPR
	KindSQL                 // a statement the executor sends, with its :variables as bind parameters
	KindBegin               // BEGIN: the executor opens the transaction itself
	KindCommit              // COMMIT or END: the executor commits itself
	KindSetSync             // SET LOCAL synchronous_commit: the run's own setting replaces it
)

// Command is one command of a script, in file order.
type Command struct {
	Line int // where it starts (1-based)
	Kind Kind
	// Var and Expr: a \set.
	Var  string
	Expr *Expr
	// SQL is a statement's text with its :variables replaced by $1..$n, and Params the
	// variables' names in that order (each occurrence its own parameter, as pgbench does).
	SQL    string
	Params []string
	// Gset: the statement's single row is stored into variables (\gset), one per
	// column, named GsetPrefix + the column's name.
	Gset       bool
	GsetPrefix string
}

// Script is one parsed script file.
type Script struct {
	File     string
	Commands []Command
}

// Error is a problem with a script, at file:line.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// MaxSize is the largest script Parse reads; a script is a transaction, not a data file.
const MaxSize = 1 << 20

// maxParams is the most :variable references one statement may have (pgbench's limit).
const maxParams = 256

// Parse reads a script. Anything outside the subset, and a script that is not one
// transaction (see docs/scripts.md), is an *Error naming file:line.
func Parse(file string, src string) (*Script, error) {
	if len(src) > MaxSize {
		return nil, &Error{file, 1, fmt.Sprintf("script is %d bytes; at most %d", len(src), MaxSize)}
	}
	if !utf8.ValidString(src) {
		return nil, &Error{file, 1, "script is not valid UTF-8"}
	}
	p := &parser{file: file, src: src, line: 1}
	if err := p.parse(); err != nil {
		return nil, err
	}
	s := &Script{File: file, Commands: p.cmds}
	if err := s.checkTransaction(); err != nil {
		return nil, err
	}
	return s, nil
}

type parser struct {
	file string
	src  string
	pos  int
	line int
	cmds []Command
	// pipe is the line of an open \startpipeline (0: none). A pipeline may hold only the
	// transaction's head, BEGIN and SET LOCAL, which pgceiling sends in one round trip
	// anyway; a pipeline of other statements would change the script's round trips.
	pipe int
}

func (p *parser) errf(line int, format string, args ...any) error {
	return &Error{p.file, line, fmt.Sprintf(format, args...)}
}

func (p *parser) parse() error {
	for {
		p.skipSpaceAndComments()
		if p.pos >= len(p.src) {
			if p.pipe > 0 {
				return p.errf(p.pipe, "\\startpipeline without \\endpipeline")
			}
			return nil
		}
		if p.src[p.pos] == '\\' {
			if err := p.meta(); err != nil {
				return err
			}
			continue
		}
		if err := p.statement(); err != nil {
			return err
		}
	}
}

// skipSpaceAndComments skips white space and -- and /* */ comments between commands.
func (p *parser) skipSpaceAndComments() {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == '\n':
			p.line++
			p.pos++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			p.pos++
		case strings.HasPrefix(p.src[p.pos:], "--"):
			p.skipLineComment()
		case strings.HasPrefix(p.src[p.pos:], "/*"):
			p.skipBlockComment()
		default:
			return
		}
	}
}

func (p *parser) skipLineComment() {
	for p.pos < len(p.src) && p.src[p.pos] != '\n' {
		p.pos++
	}
}

// skipBlockComment skips a /* */ comment, nested as in PostgreSQL; an unterminated one
// runs to the end of the text.
func (p *parser) skipBlockComment() {
	depth := 0
	for p.pos < len(p.src) {
		switch {
		case strings.HasPrefix(p.src[p.pos:], "/*"):
			depth++
			p.pos += 2
		case strings.HasPrefix(p.src[p.pos:], "*/"):
			depth--
			p.pos += 2
			if depth == 0 {
				return
			}
		default:
			if p.src[p.pos] == '\n' {
				p.line++
			}
			p.pos++
		}
	}
}

// metaLine reads a meta-command from the backslash to the end of its line (a backslash
// at the end of a line continues it) and returns its text without the backslash.
func (p *parser) metaLine() string {
	var b strings.Builder
	p.pos++ // the backslash
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		if c == '\\' && (strings.HasPrefix(p.src[p.pos+1:], "\n") || strings.HasPrefix(p.src[p.pos+1:], "\r\n")) {
			p.pos += 2
			if p.src[p.pos-1] == '\r' {
				p.pos++
			}
			p.line++
			b.WriteByte(' ')
			continue
		}
		if c == '\n' {
			break
		}
		b.WriteByte(c)
		p.pos++
	}
	return strings.TrimRight(b.String(), " \t\r")
}

// unsupportedMeta says why each pgbench meta-command outside the subset is refused.
var unsupportedMeta = map[string]string{
	"sleep":        "\\sleep is not supported: a pause inside a transaction holds its locks and its connection; pgceiling's arrivals are paced by --rate",
	"if":           "\\if is not supported: pgceiling runs straight-line scripts (use least/greatest or SQL CASE)",
	"elif":         "\\elif is not supported: pgceiling runs straight-line scripts",
	"else":         "\\else is not supported: pgceiling runs straight-line scripts",
	"endif":        "\\endif is not supported: pgceiling runs straight-line scripts",
	"shell":        "\\shell is not supported: pgceiling runs no commands on the client",
	"setshell":     "\\setshell is not supported: pgceiling runs no commands on the client",
	"aset":         "\\aset is not supported: use \\gset after a statement that returns one row",
	"gexec":        "\\gexec is not supported: a script's statements are fixed",
	"syncpipeline": "\\syncpipeline is not supported: pgceiling pipelines only BEGIN with SET LOCAL",
}

// meta parses one meta-command (\set or \gset).
func (p *parser) meta() error {
	line := p.line
	text := p.metaLine()
	name, rest := cutWord(text)
	switch lower := strings.ToLower(name); lower {
	case "set":
		v, expr := cutWord(rest)
		if v == "" {
			return p.errf(line, "\\set: missing variable name")
		}
		if !validName(v) {
			return p.errf(line, "\\set: invalid variable name %q", v)
		}
		if strings.TrimSpace(expr) == "" {
			return p.errf(line, "\\set %s: missing expression", v)
		}
		e, err := parseExpr(expr)
		if err != nil {
			return p.errf(line, "\\set %s: %v", v, err)
		}
		p.cmds = append(p.cmds, Command{Line: line, Kind: KindSet, Var: v, Expr: e})
		return nil
	case "gset":
		prefix, more := cutWord(rest)
		if more != "" {
			return p.errf(line, "\\gset: too many arguments (it takes one optional prefix)")
		}
		if prefix != "" && !validName(prefix) {
			return p.errf(line, "\\gset: invalid prefix %q", prefix)
		}
		if len(p.cmds) == 0 {
			return p.errf(line, "\\gset must follow an SQL command")
		}
		prev := &p.cmds[len(p.cmds)-1]
		switch {
		case prev.Kind == KindSet:
			return p.errf(line, "\\gset must follow an SQL command")
		case prev.Kind != KindSQL:
			return p.errf(line, "\\gset must follow a statement that returns one row")
		case prev.Gset:
			return p.errf(line, "\\gset given twice for one statement")
		}
		prev.Gset, prev.GsetPrefix = true, prefix
		return nil
	case "startpipeline":
		if p.pipe > 0 {
			return p.errf(line, "\\startpipeline inside the pipeline opened at line %d", p.pipe)
		}
		p.pipe = line
		return nil
	case "endpipeline":
		if p.pipe == 0 {
			return p.errf(line, "\\endpipeline without \\startpipeline")
		}
		p.pipe = 0
		return nil
	case "":
		return p.errf(line, "a lone backslash is not a meta-command")
	default:
		if why, ok := unsupportedMeta[lower]; ok {
			return p.errf(line, "%s", why)
		}
		return p.errf(line, "invalid meta-command \\%s (pgceiling supports \\set and \\gset)", name)
	}
}

// cutWord splits s at its first run of white space after a leading word.
func cutWord(s string) (word, rest string) {
	s = strings.TrimLeft(s, " \t\r")
	i := strings.IndexAny(s, " \t\r")
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimLeft(s[i:], " \t\r")
}

// validName reports whether s is a variable name pgbench accepts (ASCII letters, digits
// and underscores, not starting with a digit).
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func isIdentChar(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// statement reads one SQL statement: up to an unquoted semicolon (the rest of its line
// must be empty or a comment), an unquoted backslash (a \gset follows), or the end.
func (p *parser) statement() error {
	line, start := p.line, p.pos
	var out strings.Builder
	var params []string
	depth := 0
	flush := start // out holds src[start:flush] rewritten
	end := -1      // where the statement's text ends
	endLine := line
	for end < 0 {
		if p.pos >= len(p.src) {
			end = p.pos
			break
		}
		c := p.src[p.pos]
		switch {
		case c == '\n':
			p.line++
			p.pos++
		case c == '\'':
			escapes := p.pos > start && (p.src[p.pos-1] == 'e' || p.src[p.pos-1] == 'E') &&
				(p.pos-1 == start || !isIdentChar(p.src[p.pos-2]))
			if err := p.quoted('\'', escapes); err != nil {
				return err
			}
		case c == '"':
			if err := p.quoted('"', false); err != nil {
				return err
			}
		case c == '$' && (p.pos == start || !isIdentChar(p.src[p.pos-1])):
			if p.pos+1 < len(p.src) && p.src[p.pos+1] >= '0' && p.src[p.pos+1] <= '9' {
				return p.errf(p.line, "positional parameter $%c in a script: use :variables", p.src[p.pos+1])
			}
			if tag, ok := dollarTag(p.src[p.pos:]); ok {
				if err := p.dollarQuoted(tag); err != nil {
					return err
				}
			} else {
				p.pos++
			}
		case strings.HasPrefix(p.src[p.pos:], "--"):
			p.skipLineComment()
		case strings.HasPrefix(p.src[p.pos:], "/*"):
			p.skipBlockComment()
		case c == '(':
			depth++
			p.pos++
		case c == ')':
			if depth > 0 {
				depth--
			}
			p.pos++
		case c == ';' && depth == 0:
			end, endLine = p.pos, p.line
			p.pos++
		case c == '\\':
			end = p.pos // a meta-command (\gset) ends the statement
		case c == ':' && strings.HasPrefix(p.src[p.pos:], "::"):
			p.pos += 2
		case c == ':':
			n := varLen(p.src[p.pos+1:])
			if n == 0 {
				p.pos++
				break
			}
			name := p.src[p.pos+1 : p.pos+1+n]
			if err := p.checkNotIdentifier(start, name); err != nil {
				return err
			}
			if len(params) == maxParams {
				return p.errf(p.line, "more than %d :variable references in one statement", maxParams)
			}
			params = append(params, name)
			out.WriteString(p.src[flush:p.pos])
			fmt.Fprintf(&out, "$%d", len(params))
			p.pos += 1 + n
			flush = p.pos
		default:
			p.pos++
		}
	}
	out.WriteString(p.src[flush:end])
	text := strings.TrimSpace(out.String())
	if end < len(p.src) && p.src[end] == ';' {
		if err := p.restOfLine(endLine); err != nil {
			return err
		}
	}
	if text == "" {
		return nil // a lone semicolon
	}
	cmd, err := classify(text, params)
	if err != nil {
		return p.errf(line, "%v", err)
	}
	cmd.Line = line
	if p.pipe > 0 && cmd.Kind != KindBegin && cmd.Kind != KindSetSync {
		return p.errf(line, "only BEGIN and SET LOCAL synchronous_commit may be pipelined (pgceiling sends them in one round trip); other statements go one round trip each")
	}
	p.cmds = append(p.cmds, cmd)
	return nil
}

// restOfLine checks that nothing but white space, a comment or a meta-command follows a
// statement's semicolon on its line.
func (p *parser) restOfLine(line int) error {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == ' ' || c == '\t' || c == '\r':
			p.pos++
		case c == '\n' || c == '\\' || strings.HasPrefix(p.src[p.pos:], "--"):
			return nil
		default:
			return p.errf(line, "one SQL statement per line: text after the semicolon (pgceiling sends one statement per round trip)")
		}
	}
	return nil
}

// checkNotIdentifier refuses a :variable where an identifier goes: a bind parameter can
// only stand for a value.
func (p *parser) checkNotIdentifier(start int, name string) error {
	after := p.pos + 1 + len(name)
	if after < len(p.src) && p.src[after] == '.' {
		return p.errf(p.line, ":%s as an identifier is not supported: :variables are bind parameters, values only", name)
	}
	before := strings.TrimRight(p.src[start:p.pos], " \t\r\n")
	if strings.HasSuffix(before, ".") {
		return p.errf(p.line, ":%s as an identifier is not supported: :variables are bind parameters, values only", name)
	}
	i := len(before)
	for i > 0 && isIdentChar(before[i-1]) {
		i--
	}
	switch strings.ToUpper(before[i:]) {
	case "FROM", "JOIN", "INTO", "UPDATE", "TABLE":
		return p.errf(p.line, ":%s as an identifier is not supported: :variables are bind parameters, values only", name)
	}
	return nil
}

// varLen is the length of the variable name at the start of s (after a colon), or 0.
func varLen(s string) int {
	i := 0
	for i < len(s) {
		c := s[i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			i++
			continue
		}
		break
	}
	return i
}

// quoted skips a quoted string or identifier starting at p.pos; a doubled quote is
// part of it, and with escapes so is a backslash and the character after it.
func (p *parser) quoted(q byte, escapes bool) error {
	line := p.line
	p.pos++
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == '\n':
			p.line++
		case escapes && c == '\\':
			p.pos++
			if p.pos < len(p.src) && p.src[p.pos] == '\n' {
				p.line++
			}
		case c == q:
			if p.pos+1 < len(p.src) && p.src[p.pos+1] == q {
				p.pos++
			} else {
				p.pos++
				return nil
			}
		}
		p.pos++
	}
	return p.errf(line, "unterminated quoted %s", map[byte]string{'\'': "string", '"': "identifier"}[q])
}

// dollarTag returns the $tag$ opening a dollar-quoted string at the start of s.
func dollarTag(s string) (string, bool) {
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '$':
			return s[:i+1], true
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80 || i > 1 && c >= '0' && c <= '9':
		default:
			return "", false
		}
	}
	return "", false
}

func (p *parser) dollarQuoted(tag string) error {
	line := p.line
	p.pos += len(tag)
	i := strings.Index(p.src[p.pos:], tag)
	if i < 0 {
		return p.errf(line, "unterminated dollar-quoted string %s", tag)
	}
	p.line += strings.Count(p.src[p.pos:p.pos+i], "\n")
	p.pos += i + len(tag)
	return nil
}

// allowedSQL are the statements a script may send: data manipulation only, so
// pgceiling never runs DDL for a script.
var allowedSQL = map[string]bool{"SELECT": true, "INSERT": true, "UPDATE": true, "DELETE": true,
	"MERGE": true, "WITH": true, "VALUES": true, "TABLE": true, "CALL": true}

// classify sorts a statement into its Kind, refusing what pgceiling does not run.
func classify(text string, params []string) (Command, error) {
	words := strings.Fields(strings.ToUpper(stripComments(text)))
	if len(words) == 0 {
		return Command{}, fmt.Errorf("empty statement")
	}
	rest := words[1:]
	only := func(allowed ...string) bool {
		if len(rest) == 0 {
			return true
		}
		if len(rest) > 1 {
			return false
		}
		for _, a := range allowed {
			if rest[0] == a {
				return true
			}
		}
		return false
	}
	control := func(k Kind, what string) (Command, error) {
		if len(params) > 0 {
			return Command{}, fmt.Errorf("%s takes no :variables", what)
		}
		return Command{Kind: k, SQL: text}, nil
	}
	switch first := words[0]; first {
	case "BEGIN":
		if !only("TRANSACTION", "WORK") {
			return Command{}, fmt.Errorf("BEGIN with options is not supported: pgceiling sends a plain BEGIN (put SET TRANSACTION ... as the first statement instead)")
		}
		return control(KindBegin, "BEGIN")
	case "START":
		if len(rest) != 1 || rest[0] != "TRANSACTION" {
			return Command{}, fmt.Errorf("START TRANSACTION with options is not supported: pgceiling sends a plain BEGIN (put SET TRANSACTION ... as the first statement instead)")
		}
		return control(KindBegin, "START TRANSACTION")
	case "COMMIT", "END":
		if !only("TRANSACTION", "WORK") {
			return Command{}, fmt.Errorf("%s with options is not supported: pgceiling sends a plain COMMIT", first)
		}
		return control(KindCommit, first)
	case "ROLLBACK", "ABORT":
		return Command{}, fmt.Errorf("%s is not supported: pgceiling runs each script as one transaction that commits", first)
	case "SET":
		switch {
		case len(rest) >= 2 && rest[0] == "LOCAL" && strings.Trim(rest[1], `"`) == "SYNCHRONOUS_COMMIT":
			return control(KindSetSync, "SET LOCAL")
		case len(rest) >= 1 && rest[0] == "LOCAL", len(rest) >= 1 && rest[0] == "TRANSACTION":
			return control(KindSQL, "SET "+rest[0])
		}
		return Command{}, fmt.Errorf("SET without LOCAL is not supported: it would change the pooled session for every later transaction (use SET LOCAL)")
	}
	if !allowedSQL[words[0]] {
		return Command{}, fmt.Errorf("%s statements are not supported: a script sends SELECT, INSERT, UPDATE, DELETE, MERGE, WITH, VALUES, TABLE or CALL between BEGIN and COMMIT, and SET LOCAL; pgceiling never runs DDL or utility statements for a script", words[0])
	}
	return Command{Kind: KindSQL, SQL: text, Params: params}, nil
}

// stripComments removes -- and /* */ comments from text for classifying it (quotes are
// not considered: only the leading words matter).
func stripComments(text string) string {
	var b strings.Builder
	for i := 0; i < len(text); {
		switch {
		case strings.HasPrefix(text[i:], "--"):
			for i < len(text) && text[i] != '\n' {
				i++
			}
		case strings.HasPrefix(text[i:], "/*"):
			depth := 0
			for i < len(text) {
				if strings.HasPrefix(text[i:], "/*") {
					depth++
					i += 2
				} else if strings.HasPrefix(text[i:], "*/") {
					depth--
					i += 2
					if depth == 0 {
						break
					}
				} else {
					i++
				}
			}
			b.WriteByte(' ')
		default:
			c := text[i]
			if c == ';' || c == '(' {
				b.WriteByte(' ')
			}
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// checkTransaction checks that the script is one transaction: BEGIN, statements, COMMIT
// (\set anywhere), or a single statement that pgbench would autocommit.
func (s *Script) checkTransaction() error {
	begin, commit, stmts := -1, -1, 0
	lastLine := 1
	for i, c := range s.Commands {
		lastLine = c.Line
		switch c.Kind {
		case KindBegin:
			if begin >= 0 {
				return &Error{s.File, c.Line, "a second BEGIN: a script is one transaction"}
			}
			if stmts > 0 {
				return &Error{s.File, c.Line, "BEGIN after statements: a script is one transaction, BEGIN first"}
			}
			begin = i
		case KindCommit:
			if begin < 0 {
				return &Error{s.File, c.Line, "COMMIT without BEGIN"}
			}
			if commit >= 0 {
				return &Error{s.File, c.Line, "a second COMMIT: a script is one transaction"}
			}
			commit = i
		case KindSQL, KindSetSync:
			if commit >= 0 {
				return &Error{s.File, c.Line, "a statement after COMMIT: a script is one transaction (pgceiling counts one per run)"}
			}
			if c.Kind == KindSQL {
				stmts++
			}
			if begin < 0 && c.Kind == KindSetSync {
				return &Error{s.File, c.Line, "SET LOCAL outside BEGIN .. COMMIT has no effect"}
			}
			if begin < 0 && stmts > 1 {
				return &Error{s.File, c.Line, "several statements without BEGIN .. COMMIT: pgbench commits each on its own, pgceiling counts one transaction per run: wrap them in BEGIN; ... COMMIT;"}
			}
		}
	}
	switch {
	case begin >= 0 && commit < 0:
		return &Error{s.File, lastLine, "BEGIN without COMMIT: a script is one transaction that commits"}
	case stmts == 0:
		return &Error{s.File, lastLine, "no SQL statement to send"}
	}
	return nil
}

// Statements are the script's statements to send (KindSQL), in order.
func (s *Script) Statements() []*Command {
	var out []*Command
	for i := range s.Commands {
		if s.Commands[i].Kind == KindSQL {
			out = append(out, &s.Commands[i])
		}
	}
	return out
}

// ParseWeight splits a --script argument FILE[@WEIGHT] (pgbench's -f FILE@W): the
// weight is an integer from 0, 1 when absent.
func ParseWeight(arg string) (file string, weight int, err error) {
	i := strings.LastIndexByte(arg, '@')
	if i < 0 {
		return arg, 1, nil
	}
	file = arg[:i]
	w, err := strconv.Atoi(arg[i+1:])
	if err != nil || w < 0 || w > MaxWeight {
		return "", 0, fmt.Errorf("--script %s: the weight after @ must be an integer from 0 to %d", arg, MaxWeight)
	}
	if file == "" {
		return "", 0, fmt.Errorf("--script %s: no file before @", arg)
	}
	return file, w, nil
}

// MaxWeight is the largest weight of a script.
const MaxWeight = 1_000_000

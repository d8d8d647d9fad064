package report

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/pgceiling/pgceiling/result"
)

// WriteDisclosure writes a server disclosure as aligned plain text (`pgceiling inspect`),
// at most DefaultWidth columns wide: WriteDisclosureOpts with the default options.
func WriteDisclosure(w io.Writer, d *result.Disclosure, order []string) error {
	return WriteDisclosureOpts(w, d, order, TextOptions{})
}

// WriteDisclosureOpts writes a server disclosure as aligned plain text (`pgceiling
// inspect`): where the server runs, the machines, the settings (those named in order
// first, in that order, then the rest by name), pgceiling's tables against
// shared_buffers, the distribution (Citus, or not distributed), and the warnings that
// make run and search refuse the server. Lines
// wrap at o.Width (a long setting's value under itself), unless o.Wide.
func WriteDisclosureOpts(w io.Writer, d *result.Disclosure, order []string, o TextOptions) error {
	width := o.width()
	if o.Wide {
		width = math.MaxInt
	}
	ew := bufio.NewWriter(w)
	line := func(prefix, s string) {
		for i, l := range wrapWords(s, width-dw(prefix), 2) {
			if i > 0 {
				l = strings.Repeat(" ", dw(prefix)) + l
			} else {
				l = prefix + l
			}
			fmt.Fprintln(ew, l)
		}
	}
	where := "remote (or not visible from this machine)"
	switch {
	case d.Embedded:
		where = "the throwaway server started for this command, on this machine"
	case d.ServerLocal:
		where = "on this machine"
	}
	line("", fmt.Sprintf("PostgreSQL %s, %s", d.Version, where))
	line("", fmt.Sprintf("client: %d cores, %s memory", d.ClientCores, bytesHuman(d.ClientMemBytes)))
	if d.ServerLocal {
		line("", fmt.Sprintf("server: %d cores, %s memory (same machine)", d.ServerCores, bytesHuman(d.ServerMemBytes)))
	} else {
		line("", "server: cores and memory unknown (not local)")
	}

	fmt.Fprintln(ew, "\nSettings")
	var names []string
	seen := map[string]bool{}
	for _, name := range order {
		if _, ok := d.Settings[name]; ok && !seen[name] {
			names = append(names, name)
			seen[name] = true
		}
	}
	var extra []string
	for name := range d.Settings {
		if !seen[name] {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	names = append(names, extra...)
	nameW := 0
	for _, name := range names {
		nameW = max(nameW, dw(name))
	}
	for _, name := range names {
		// The values line up after the longest name; a value too long for the line
		// wraps under itself.
		line(fmt.Sprintf("  %-*s  ", nameW, name), d.Settings[name])
	}

	fmt.Fprintln(ew, "\npgceiling tables")
	switch {
	case len(d.Tables) > 0:
		writeTables(ew, d.Tables, "")
		line("  ", fmt.Sprintf("data / shared_buffers: %.2f (%s of %s)", d.DataToSharedBuffers, bytesHuman(d.DataBytes), bytesHuman(d.SharedBuffersBytes)))
	case d.Embedded:
		line("  ", "none: the throwaway server is new and has no pgceiling schema (run and search create and fill one)")
	default:
		line("  ", "none: this database has no pgceiling schema (`pgceiling init` creates it)")
	}

	if d.Distribution != nil {
		fmt.Fprintln(ew, "\nDistribution")
		writeDistribution(ew, d.Distribution, line)
	}

	if len(d.Warnings) > 0 {
		fmt.Fprintln(ew)
		line("", "Warnings (run and search refuse this server unless --allow-unsafe-server)")
		for _, warn := range d.Warnings {
			line("  ! ", warn)
		}
	} else {
		fmt.Fprintln(ew)
		line("", "No warnings: fsync, full_page_writes and synchronous_commit are durable.")
	}
	return ew.Flush()
}

// WriteTableSizes writes pgceiling's tables (exact rows, heap, indexes) and, when
// sharedBuffers > 0, their ratio to it: what `pgceiling init` made.
func WriteTableSizes(w io.Writer, sizes []result.TableSize, sharedBuffers int64) error {
	ew := bufio.NewWriter(w)
	heap, idx := writeTables(ew, sizes, "rows")
	if sharedBuffers > 0 {
		fmt.Fprintf(ew, "  shared_buffers %s: heap %.2fx, indexes %.2fx, heap+indexes %.2fx\n", bytesHuman(sharedBuffers),
			float64(heap)/float64(sharedBuffers), float64(idx)/float64(sharedBuffers), float64(heap+idx)/float64(sharedBuffers))
	}
	return ew.Flush()
}

// writeTables writes the tables' sizes right-aligned, indented by two spaces, with a
// total line, and returns the total heap and index bytes. rows heads the rows column
// ("" = the estimate's heading).
func writeTables(w io.Writer, tables []result.TableSize, rows string) (heap, idx int64) {
	if rows == "" {
		rows = "rows (est.)"
	}
	// Names padded by hand: tabwriter right-aligns every column or none. Right
	// alignment puts the cell padding (2) before each cell: that is the indent.
	width := len("total")
	for _, t := range tables {
		width = max(width, len(t.Name))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\t%s\theap\tindexes\tindex size\t\n", width, "table", rows)
	for _, t := range tables {
		fmt.Fprintf(tw, "%-*s\t%s\t%s\t%d\t%s\t\n", width, t.Name, count(t.Rows), bytesHuman(t.HeapBytes), t.Indexes, bytesHuman(t.IndexBytes))
		heap += t.HeapBytes
		idx += t.IndexBytes
	}
	fmt.Fprintf(tw, "%-*s\t\t%s\t\t%s\t\n", width, "total", bytesHuman(heap), bytesHuman(idx))
	tw.Flush()
	return heap, idx
}

// writeDistribution writes whether and how pgceiling's tables are sharded: a line for a
// server without Citus or a schema it does not distribute, else the nodes and a table of
// each table's Citus type, distribution column, colocation group, shards and size over
// the shards.
func writeDistribution(w io.Writer, d *result.Distribution, line func(prefix, s string)) {
	switch {
	case d.Citus == "":
		line("  ", "not distributed (no citus extension in this database)")
		return
	case !d.Distributed():
		line("  ", fmt.Sprintf("not distributed (citus %s installed, %d workers; see `pgceiling init --distribute citus`)", d.Citus, d.Workers))
		return
	}
	line("  ", fmt.Sprintf("citus %s: %d nodes may hold shards (%d workers); sizes are over every shard", d.Citus, d.Nodes, d.Workers))
	if d.PropagateSetCommands != "local" {
		line("  ", fmt.Sprintf("citus.propagate_set_commands = %s: the workers commit with their own synchronous_commit (a synchronous_commit=off sweep needs it local)", orDash(d.PropagateSetCommands)))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  table\ttype\tcolumn\tcolocation\tshards\tnodes\theap\tindexes")
	for _, t := range d.Tables {
		col, coloc, shards, nodes, heap, idx := "-", "-", "-", "-", "-", "-"
		if t.Type != result.DistLocal {
			coloc, shards, nodes = fmt.Sprint(t.ColocationID), fmt.Sprint(t.Shards), fmt.Sprint(t.ShardNodes)
			heap, idx = bytesHuman(t.HeapBytes), bytesHuman(t.IndexBytes)
		}
		if t.Column != "" {
			col = t.Column
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, t.Type, col, coloc, shards, nodes, heap, idx)
	}
	tw.Flush()
}

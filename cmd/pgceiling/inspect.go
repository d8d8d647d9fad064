package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgceiling/pgceiling/config"
	"github.com/pgceiling/pgceiling/localpg"
	"github.com/pgceiling/pgceiling/observe"
	"github.com/pgceiling/pgceiling/result"
)

func init() {
	register(command{name: "inspect", summary: "show the server's settings, pgceiling's tables and the machines, with warnings", run: runInspect})
}

const inspectSynopsis = `Print what every pgceiling result discloses: the server's version and durability
settings, pgceiling's tables (rows, heap and index sizes against shared_buffers, index
counts), the client's and (when local) the server's cores and memory, and the warnings
that make run and search refuse the server unless --allow-unsafe-server is given.
Without --dsn it inspects a throwaway server, which has no pgceiling schema yet.`

func runInspect(ctx context.Context, env *Env, args []string) error {
	var c config.Inspect
	fs := newFlagSet(env, "inspect", inspectSynopsis)
	bindConn(fs, &c.Conn)
	c.Bind(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkDSN(c.Conn, env); err != nil {
		return err
	}
	t, err := openTarget(ctx, env, c.Conn, localpg.Options{})
	if err != nil {
		return err
	}
	defer t.Close()
	cfg, err := parseDSN(t.DSN)
	if err != nil {
		return err
	}
	cfg.RuntimeParams["application_name"] = "pgceiling-inspect"
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, cfg)
	if err != nil {
		return fmt.Errorf("inspect: connect to %s: %w", config.RedactDSN(t.DSN), err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	local := observe.LocalInfo{}
	if t.Embedded != nil {
		local = observe.LocalInfo{PostmasterPID: t.Embedded.PID(), Embedded: true}
	}
	d, err := observe.Disclose(cctx, conn, local)
	if err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	d.Warnings = observe.Unsafe(d, true)
	if c.JSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(d)
	}
	writeDisclosure(env.Stdout, d)
	return nil
}

// writeDisclosure prints a disclosure as aligned plain text.
func writeDisclosure(w io.Writer, d *result.Disclosure) {
	where := "remote (or not visible from this machine)"
	switch {
	case d.Embedded:
		where = "the throwaway server started for this command, on this machine"
	case d.ServerLocal:
		where = "on this machine"
	}
	fmt.Fprintf(w, "PostgreSQL %s, %s\n", d.Version, where)
	fmt.Fprintf(w, "client: %d cores, %s memory\n", d.ClientCores, inspectBytes(d.ClientMemBytes))
	if d.ServerLocal {
		fmt.Fprintf(w, "server: %d cores, %s memory (same machine)\n", d.ServerCores, inspectBytes(d.ServerMemBytes))
	} else {
		fmt.Fprintln(w, "server: cores and memory unknown (not local)")
	}

	fmt.Fprintln(w, "\nSettings")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	seen := map[string]bool{}
	for _, name := range observe.SettingNames {
		if v, ok := d.Settings[name]; ok {
			fmt.Fprintf(tw, "  %s\t%s\n", name, v)
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
	for _, name := range extra {
		fmt.Fprintf(tw, "  %s\t%s\n", name, d.Settings[name])
	}
	tw.Flush()

	fmt.Fprintln(w, "\npgceiling tables")
	if len(d.Tables) == 0 {
		if d.Embedded {
			fmt.Fprintln(w, "  none: the throwaway server is new and has no pgceiling schema (run and search create and fill one)")
		} else {
			fmt.Fprintln(w, "  none: this database has no pgceiling schema (`pgceiling init` creates it)")
		}
	} else {
		// Names padded by hand: tabwriter right-aligns every column or none. Right
		// alignment puts the cell padding (2) before each cell: that is the indent.
		width := len("total")
		for _, t := range d.Tables {
			width = max(width, len(t.Name))
		}
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "%-*s\trows (est.)\theap\tindexes\tindex size\t\n", width, "table")
		var heap, idx int64
		for _, t := range d.Tables {
			fmt.Fprintf(tw, "%-*s\t%s\t%s\t%d\t%s\t\n", width, t.Name, inspectThousands(t.Rows), inspectBytes(t.HeapBytes), t.Indexes, inspectBytes(t.IndexBytes))
			heap += t.HeapBytes
			idx += t.IndexBytes
		}
		fmt.Fprintf(tw, "%-*s\t\t%s\t\t%s\t\n", width, "total", inspectBytes(heap), inspectBytes(idx))
		tw.Flush()
		fmt.Fprintf(w, "  data / shared_buffers: %.2f (%s of %s)\n", d.DataToSharedBuffers, inspectBytes(d.DataBytes), inspectBytes(d.SharedBuffersBytes))
	}

	if len(d.Warnings) > 0 {
		fmt.Fprintln(w, "\nWarnings (run and search refuse this server unless --allow-unsafe-server)")
		for _, warn := range d.Warnings {
			fmt.Fprintf(w, "  ! %s\n", warn)
		}
	} else {
		fmt.Fprintln(w, "\nNo warnings: fsync, full_page_writes and synchronous_commit are durable.")
	}
}

// inspectBytes prints a byte count in binary units: "512 B", "8.0 KiB", "1.5 GiB".
func inspectBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// inspectThousands prints n with commas between groups of three digits.
func inspectThousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Command responder is a minimal PostgreSQL wire-protocol server with canned replies
// (internal/responder) for benchmarks of the client alone: pgceiling's engines and
// pgbench against it measure their own CPU per transaction, with no server's cost.
// It prints its DSN on stdout (and into -dsn-file), then serves until SIGINT or SIGTERM;
// on exit it prints its counters on stderr.
//
// Usage:
//
//	responder [-addr 127.0.0.1:0] [-dsn-file FILE] [-wallets 10000] [-v]
//
// -v logs every statement no canned reply matched (once per text) and connection errors.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/pgceiling/pgceiling/internal/responder"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen on host:port (port 0: a free one)")
	dsnFile := flag.String("dsn-file", "", "also write the DSN to this file once listening")
	wallets := flag.Int("wallets", 10_000, "the wallet count the schema reports")
	verbose := flag.Bool("v", false, "log statements answered by a fallback, and connection errors")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "responder: unexpected argument %q (see -h)\n", flag.Arg(0))
		os.Exit(2)
	}
	opt := responder.Options{Wallets: *wallets}
	if *verbose {
		opt.Log = log.New(os.Stderr, "responder: ", log.LstdFlags)
	}
	s, err := responder.Listen(*addr, opt)
	if err != nil {
		fmt.Fprintf(os.Stderr, "responder: %v\n", err)
		os.Exit(1)
	}
	fmt.Println(s.DSN())
	if *dsnFile != "" {
		if err := os.WriteFile(*dsnFile, []byte(s.DSN()+"\n"), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "responder: %v\n", err)
			os.Exit(1)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := s.ServeContext(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "responder: %v\n", err)
		os.Exit(1)
	}
	st := s.Stats()
	fmt.Fprintf(os.Stderr, "responder: %d connections, %d commits, %d fallback answers\n",
		st.Conns.Load(), st.Commits.Load(), st.Fallbacks.Load())
}

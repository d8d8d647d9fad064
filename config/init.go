package config

import (
	"math"
	"runtime"

	"github.com/spf13/pflag"
)

// Init is the configuration of `pgceiling init`: what schema to build (the spec) and how
// (workers, force). Conn is bound by the CLI's shared --dsn flag.
type Init struct {
	Conn    Conn
	Wallets int
	Rows    int64
	Months  int
	Zipf    float64
	Seed    int64
	// Workers is the number of parallel sessions for the load and the index build.
	Workers int
	// Force rebuilds a pgceiling schema made with another spec (or the same one).
	Force bool
	// Distribute is how the schema is spread: "none" (one server) or "citus" (distributed
	// by wallet from a Citus coordinator; docs/sharding.md).
	Distribute string
	// ConfigFile is the --config file of `name = value` lines.
	ConfigFile string
}

// The defaults of `pgceiling init`: a production-sized schema whose indexes outgrow
// shared_buffers on a real server.
const (
	DefaultWallets = 10_000
	DefaultRows    = 50_000_000
	DefaultMonths  = 12
	DefaultZipf    = 1.0
)

// Bind adds init's flags to fs.
func (c *Init) Bind(fs *pflag.FlagSet) {
	fs.IntVar(&c.Wallets, "wallets", DefaultWallets, "wallets (accounts) in pgceiling.wallets")
	fs.Int64Var(&c.Rows, "rows", DefaultRows, "rows prefilled into pgceiling.transactions (audit_log gets a tenth as many)")
	fs.IntVar(&c.Months, "months", DefaultMonths, "months of history the rows are spread over, ending 24h before now (3 empty months ahead and a default partition are always added)")
	fs.Float64Var(&c.Zipf, "zipf", DefaultZipf, "Zipf exponent of the wallet each row belongs to (0 = uniform; wallet 1 is the hottest)")
	fs.Int64Var(&c.Seed, "seed", 1, "seed of the generated rows (the same spec and seed give the same rows)")
	fs.IntVar(&c.Workers, "workers", runtime.NumCPU(), "parallel sessions for the load and the index build")
	fs.BoolVar(&c.Force, "force", false, "rebuild a pgceiling schema made with another spec (or the same spec); never touches a schema pgceiling did not make")
	fs.StringVar(&c.Distribute, "distribute", "none", "none, or citus: distribute the tables by wallet over a Citus cluster (run against its coordinator; needs the citus extension there)")
	bindConfigFlag(fs, &c.ConfigFile)
}

// Validate reports every problem with the values at once, as one usage error.
func (c *Init) Validate() error {
	var p Problems
	if c.Rows <= 0 {
		p.Addf("--rows %d: want at least 1", c.Rows)
	}
	if c.Wallets < 2 {
		p.Addf("--wallets %d: want at least 2", c.Wallets)
	}
	if c.Months < 1 || c.Months > 240 {
		p.Addf("--months %d: want 1 to 240", c.Months)
	}
	if c.Workers < 1 || c.Workers > 256 {
		p.Addf("--workers %d: want 1 to 256", c.Workers)
	}
	if math.IsNaN(c.Zipf) || math.IsInf(c.Zipf, 0) || c.Zipf < 0 || c.Zipf > 100 {
		p.Addf("--zipf %v: want 0 (uniform) to 100", c.Zipf)
	}
	switch c.Distribute {
	case "", "none", "citus":
	default:
		p.Addf("--distribute %q: want none or citus", c.Distribute)
	}
	return p.Err()
}

package config

import (
	"time"

	"github.com/spf13/pflag"
)

// Fleet is how several driver processes share one probe (package fleet): --drivers N on
// run and search (the leader), and the follow command's settings.
type Fleet struct {
	Drivers     int           // --drivers: processes offering the rate, this one included; 1 = alone
	Name        string        // --fleet: the fleet's name on the server
	MaxSkew     time.Duration // --max-skew: the most a driver's clock may be off the server's
	JoinTimeout time.Duration // --join-timeout: the wait for the followers (leader) or the leader (follower)
	Timeout     time.Duration // --fleet-timeout: a heartbeat older than this is a process gone
	DriverID    int           // --driver-id (follow only): 0 = the first free id
	Spawn       bool          // --spawn (leader only): start the N-1 followers here, as child processes
}

// BindFleet binds the fleet flags; leader adds --drivers, follow adds --driver-id.
func BindFleet(fs *pflag.FlagSet, f *Fleet, leader bool) {
	if leader {
		fs.IntVar(&f.Drivers, "drivers", 1, "driver processes offering the rate together, this one (the leader) included; the others run pgceiling follow (docs/kubernetes.md)")
		fs.BoolVar(&f.Spawn, "spawn", false, "start the --drivers N-1 followers on this machine as child processes of this one (their output prefixed follower K:, stopped when this one ends); no --dsn needed")
	} else {
		fs.IntVar(&f.DriverID, "driver-id", 0, "this follower's driver id, 1 to N-1 (0 = the first free one; on Kubernetes, $JOB_COMPLETION_INDEX)")
	}
	fs.StringVar(&f.Name, "fleet", "pgceiling", "the fleet's name on the server: one leader per name")
	fs.DurationVar(&f.MaxSkew, "max-skew", 50*time.Millisecond, "a driver whose clock is further than this off the server's refuses to start")
	fs.DurationVar(&f.JoinTimeout, "join-timeout", 5*time.Minute, "how long the leader waits for its followers, or a follower for its leader")
	fs.DurationVar(&f.Timeout, "fleet-timeout", 10*time.Second, "a driver whose heartbeat is older than this is gone (its probe a fault; a follower stops)")
}

// Validate reports the fleet flags' problems; haveDSN: the command has --dsn (followers
// must reach the same server).
func (f Fleet) Validate(haveDSN bool) error {
	var p Problems
	switch {
	case f.Drivers < 1:
		p.Addf("--drivers must be >= 1, got %d", f.Drivers)
	case f.Drivers > 1 && !haveDSN && !f.Spawn:
		p.Addf("--drivers %d needs --dsn (or %s), or --spawn: the followers connect to the same server", f.Drivers, EnvDSN)
	case f.Spawn && f.Drivers < 2:
		p.Addf("--spawn starts the followers of --drivers N: give --drivers 2 or more")
	}
	if f.DriverID < 0 {
		p.Addf("--driver-id must be >= 0, got %d", f.DriverID)
	}
	if f.Name == "" {
		p.Addf("--fleet must not be empty")
	}
	if f.MaxSkew <= 0 || f.JoinTimeout <= 0 || f.Timeout <= 0 {
		p.Addf("--max-skew, --join-timeout and --fleet-timeout must be > 0")
	}
	return p.Err()
}

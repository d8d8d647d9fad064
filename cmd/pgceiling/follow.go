package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pgceiling/pgceiling/config"
	"github.com/pgceiling/pgceiling/fleet"
)

func init() {
	register(command{name: "follow", summary: "drive a share of another process's run or search (--drivers N) on the same server", run: runFollow})
}

const followSynopsis = `Joins the fleet of driver processes led by a pgceiling run or search started with
--drivers N against the same server (--dsn), and runs the leader's probes: each driver
offers the rate / N as its own Poisson stream from a common instant, and uploads its
books and histograms for the leader to merge. Coordination goes through control tables
in schema pgceiling. Refuses to join when this machine's clock is further than
--max-skew off the server's. Exits when the leader ends the run (0), or with a message
when the leader is gone (its heartbeat older than --fleet-timeout) or never shows up
(--join-timeout). run and search --drivers N --spawn start their followers themselves.
On Kubernetes: docs/kubernetes.md.`

func runFollow(ctx context.Context, env *Env, args []string) error {
	var conn config.Conn
	var fl config.Fleet
	fs := newFlagSet(env, "follow", followSynopsis)
	bindConn(fs, &conn)
	config.BindFleet(fs, &fl, false)
	if err := parse(fs, args); err != nil {
		return err
	}
	fl.Drivers = 1
	dsn := conn.DSN
	if dsn == "" {
		dsn = env.Getenv(config.EnvDSN)
	}
	if dsn == "" {
		return config.Usagef("follow needs --dsn (or %s): the leader's server", config.EnvDSN)
	}
	if err := fl.Validate(true); err != nil {
		return err
	}
	if err := checkDSN(conn, env); err != nil {
		return err
	}
	err := fleet.Follow(ctx, dsn, fl.DriverID, fleetOptions(env, fl, "pgceiling follow"))
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return context.Canceled
	}
	return err
}

// fleetOptions are the fleet's settings from the flags; progress goes to stderr.
func fleetOptions(env *Env, fl config.Fleet, who string) fleet.Options {
	return fleet.Options{Name: fl.Name, MaxSkew: fl.MaxSkew, JoinTimeout: fl.JoinTimeout, Timeout: fl.Timeout,
		Say: func(format string, args ...any) { env.say(who+": "+format, args...) }}
}

// leadFleet makes s's probes those of a fleet of fl.Drivers processes (nothing when 1):
// with --spawn it starts the followers itself, then it waits for them, and every probe s
// runs is planned, run by every driver and merged. The caller closes the leader (nil when
// alone), which also ends the followers it started.
func leadFleet(ctx context.Context, env *Env, s *probeServer, t *target, p *config.Probe, fl config.Fleet, who string) (*fleetLead, error) {
	if fl.Drivers <= 1 {
		return nil, nil
	}
	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	opt := fleetOptions(env, fl, who)
	var kids *spawned
	if fl.Spawn {
		opt.Opened = func() error {
			env.say("%s: starting %d follower(s) here (--spawn)", who, fl.Drivers-1)
			var err error
			if kids, err = spawnFollowers(env, t.DSN, fl); err != nil {
				return err
			}
			// A follower that ends before the fleet is complete ends the wait at once,
			// with its reason (its own lines came before, prefixed).
			go func() {
				select {
				case <-kids.exited():
					cancel(kids.exitErr())
				case <-lctx.Done():
				}
			}()
			return nil
		}
	}
	l, err := fleet.Lead(lctx, t.DSN, fl.Drivers, opt)
	if err != nil {
		if kids != nil {
			kids.stop(0)
		}
		if cause := context.Cause(lctx); ctx.Err() == nil && cause != nil && !errors.Is(cause, context.Canceled) {
			err = fmt.Errorf("%s: %w before the fleet was complete", who, cause)
		}
		return nil, err
	}
	l.SetSpec(fleet.Spec{Session: driverSession(p.Session), ExecMode: execModes[p.ExecMode]})
	s.fleet = l
	return &fleetLead{Leader: l, kids: kids, grace: fl.Timeout}, nil
}

// fleetLead is the leader of a fleet and the followers it started (none without --spawn).
type fleetLead struct {
	*fleet.Leader
	kids  *spawned
	grace time.Duration
}

// Close ends the run (the followers exit, told why) and then the followers this process
// started: those still running after the grace are stopped.
func (f *fleetLead) Close(why string) {
	f.Leader.Close(why)
	if f.kids != nil {
		f.kids.stop(f.grace)
	}
}

package main

import (
	"context"
	"errors"

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
(--join-timeout). On Kubernetes: docs/kubernetes.md.`

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
// it waits for the followers, then every probe s runs is planned, run by every driver
// and merged. The caller closes the leader (nil when alone).
func leadFleet(ctx context.Context, env *Env, s *probeServer, t *target, p *config.Probe, fl config.Fleet, who string) (*fleet.Leader, error) {
	if fl.Drivers <= 1 {
		return nil, nil
	}
	l, err := fleet.Lead(ctx, t.DSN, fl.Drivers, fleetOptions(env, fl, who))
	if err != nil {
		return nil, err
	}
	l.SetSpec(fleet.Spec{Session: driverSession(p.Session), ExecMode: execModes[p.ExecMode]})
	s.fleet = l
	return l, nil
}

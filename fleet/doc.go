// Package fleet runs one probe from several driver processes (--drivers N): one leader
// (driver 0, the process that runs run or search) and N-1 followers (pgceiling follow),
// on one machine or many (a Kubernetes Indexed Job), coordinated through the target
// PostgreSQL itself.
//
// # Protocol
//
// Four control tables inside schema pgceiling (made on demand by the leader, never
// anywhere else): fleet_run (one row per fleet name: the leader's epoch, the number of
// drivers, its heartbeat, why it stopped), fleet_member (a follower's driver id, its
// heartbeat, its clock offset against the server), fleet_plan (one row per probe: the
// plan as JSON, and a halt reason the leader may set while the probe runs) and
// fleet_report (a follower's acknowledgement of a plan and then its upload: its result
// and its HDR histograms, encoded losslessly).
//
//  1. The leader starts a new epoch of the fleet (forgetting an earlier run's rows) and
//     waits until N-1 followers have joined it. A follower measures its clock's offset
//     against the server's (clock_timestamp(), the best of several round trips) and
//     refuses to join when it is off by more than --max-skew.
//  2. For each probe the leader prepares the server (restore, back-fill, CHECKPOINT) as
//     for one process, then publishes the plan: each driver's rate (the total / N), the
//     seed base (driver i's seed is base + i·1,000,003: independent Poisson streams, whose
//     sum is Poisson at the total rate), the start instant on the server's clock (a few
//     seconds ahead), warm-up, duration and the probe's settings.
//  3. Followers acknowledge, run the probe with driver.Config.StartAt at the instant
//     translated to their own clock, and upload. The leader runs its share, waits for
//     every upload (never longer than the probe's end plus its drain and a grace), merges
//     (books add up; histograms merge exactly, so the merged percentiles are those one
//     recorder would have given) and hands the merged probe to the search, which judges
//     it and asks for the next.
//  4. At the end the leader marks the run stopped; followers exit.
//
// A leader may start its followers itself (pgceiling run/search --drivers N --spawn, in
// cmd/pgceiling): Options.Opened is called once the run is open, before the wait, so
// followers started there find this run and no earlier one.
//
// # Polling, not LISTEN/NOTIFY
//
// Every process polls the control tables (every 100 ms while waiting, heartbeats every
// second). A notification is lost when its listener's connection drops, does not pass a
// transaction-mode pooler (pgbouncer) and carries no state, so a follower that reconnects
// or starts late would have to read the tables anyway; the tables are the state, polling
// them is one code path, and 100 ms is nothing next to a plan published seconds ahead of
// its start.
//
// # Failures
//
// No process waits forever: every wait has a deadline, and so does every statement on
// the control tables. A follower that stops uploading (dead, or its heartbeat older
// than the timeout) makes the merged probe fail with an Error, which the search judges a
// fault (retried once, then the search stops); the parts that did arrive are kept in the
// merged probe. A follower whose leader's heartbeat stops (or cannot be read: the server
// stopped answering) interrupts its probe and exits with a message within the timeout; a follower that never sees a leader, or a leader
// that never sees its followers, gives up after the join timeout.
//
// # What the merge cannot make exact
//
// The per-second series adds counts across drivers, but a second's percentiles are the
// worst driver's (the per-second histograms are not uploaded). The row check is the
// leader's: rows before the plan and after every upload against every driver's commits.
// Each driver stops early on its own share of the error budget; the leader's steady-state
// stop halts every driver through fleet_plan.halt.
package fleet

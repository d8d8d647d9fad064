package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pgceiling/pgceiling/config"
)

// spawned are the followers a leader started itself (--spawn): N-1 `pgceiling follow`
// processes of this same binary against the same server, each with its own cores, its
// own connections and its own Poisson stream, as a user on one big machine would start
// them by hand.
type spawned struct {
	env  *Env
	out  sync.Mutex     // one forwarded line at a time
	wait sync.WaitGroup // every child's exit and the end of its output
	done chan struct{}  // closed once every child has exited

	mu       sync.Mutex
	procs    map[int]*os.Process // the children still running, by driver id
	first    chan struct{}       // closed at the first exit
	firstErr error               // that exit, as an error
}

// followerCommand is follower k's command line: `pgceiling follow` with the fleet's
// settings, and the DSN in the environment (PGCEILING_DSN), never in the arguments,
// where ps and /proc would show its password to every user of the machine.
func followerCommand(exe, dsn string, fl config.Fleet, k int, environ []string) *exec.Cmd {
	cmd := exec.Command(exe, "follow", "--fleet", fl.Name, "--driver-id", strconv.Itoa(k),
		"--max-skew", fl.MaxSkew.String(), "--join-timeout", fl.JoinTimeout.String(), "--fleet-timeout", fl.Timeout.String())
	env := make([]string, 0, len(environ)+1)
	for _, kv := range environ {
		if !strings.HasPrefix(kv, config.EnvDSN+"=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, config.EnvDSN+"="+dsn)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Their own process group: a Ctrl-C on the terminal reaches the leader alone, which
		// halts the probe, keeps every driver's part and then ends its followers.
		Setpgid: true,
		// Killed with the leader, even by kill -9 (see spawnFollowers for the thread).
		Pdeathsig: syscall.SIGKILL,
	}
	return cmd
}

// spawnFollowers starts followers 1 to fl.Drivers-1 of this binary on dsn; their
// stderr is forwarded line by line to env.Stderr, each line prefixed "follower K: ". The
// caller must stop them (stop), and registers nothing: a second Ctrl-C kills them
// (atForcedExit is set here).
func spawnFollowers(env *Env, dsn string, fl config.Fleet) (*spawned, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("--spawn: cannot find this program to start its followers: %w", err)
	}
	sp := &spawned{env: env, done: make(chan struct{}), first: make(chan struct{}), procs: map[int]*os.Process{}}
	started := make(chan error, 1)
	go func() {
		// Linux sends Pdeathsig when the *thread* that started a child ends, not the
		// process: this goroutine keeps its thread, and never unlocks it, until every child
		// has exited.
		runtime.LockOSThread()
		started <- sp.start(exe, dsn, fl)
		sp.wait.Wait()
		close(sp.done)
	}()
	if err := <-started; err != nil {
		<-sp.done
		return nil, err
	}
	env.atForcedExit(sp.kill)
	return sp, nil
}

// start starts the children; when one cannot start, it kills those that did.
func (sp *spawned) start(exe, dsn string, fl config.Fleet) error {
	for k := 1; k < fl.Drivers; k++ {
		cmd := followerCommand(exe, dsn, fl, k, os.Environ())
		stderr, err := cmd.StderrPipe()
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			sp.kill()
			return fmt.Errorf("--spawn: start follower %d: %w", k, err)
		}
		sp.mu.Lock()
		sp.procs[k] = cmd.Process
		sp.mu.Unlock()
		sp.wait.Add(1)
		go sp.follow(k, cmd, stderr)
	}
	return nil
}

// follow forwards child k's stderr until it ends, then reaps the child and records its
// exit.
func (sp *spawned) follow(k int, cmd *exec.Cmd, stderr io.Reader) {
	defer sp.wait.Done()
	prefix := fmt.Sprintf("follower %d: ", k)
	r := bufio.NewReader(stderr)
	for {
		line, err := r.ReadString('\n')
		if line != "" {
			sp.line(prefix + sp.env.Scrub(strings.TrimRight(line, "\r\n")))
		}
		if err != nil {
			break
		}
	}
	err := cmd.Wait()
	if err != nil {
		sp.line(fmt.Sprintf("%sexited: %v", prefix, err))
		err = fmt.Errorf("follower %d exited: %w", k, err)
	} else {
		err = fmt.Errorf("follower %d exited", k)
	}
	sp.mu.Lock()
	delete(sp.procs, k)
	if sp.firstErr == nil {
		sp.firstErr = err
		close(sp.first)
	}
	sp.mu.Unlock()
}

// line writes one line in a single Write, so the followers' lines never interleave.
func (sp *spawned) line(s string) {
	sp.out.Lock()
	defer sp.out.Unlock()
	_, _ = io.WriteString(sp.env.Stderr, s+"\n")
}

// exited is closed at the first child's exit; exitErr says which and how.
func (sp *spawned) exited() <-chan struct{} { return sp.first }

func (sp *spawned) exitErr() error {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.firstErr
}

// signal sends sig to every child still running.
func (sp *spawned) signal(sig os.Signal) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	for _, p := range sp.procs {
		_ = p.Signal(sig)
	}
}

func (sp *spawned) kill() { sp.signal(os.Kill) }

// stop ends the children once the leader has ended the run: they exit by themselves
// within grace (they see the run stopped); those that do not are sent SIGTERM (they stop
// as on Ctrl-C), and after 3 s more SIGKILL. It returns once every child has exited.
func (sp *spawned) stop(grace time.Duration) {
	for _, step := range []struct {
		wait time.Duration
		sig  os.Signal
	}{{grace, syscall.SIGTERM}, {3 * time.Second, os.Kill}} {
		t := time.NewTimer(step.wait)
		select {
		case <-sp.done:
			t.Stop()
			return
		case <-t.C:
		}
		sp.signal(step.sig)
	}
	<-sp.done
}

package main

import (
	"context"
	"fmt"
	"os"

	"github.com/pgceiling/pgceiling/config"
	"github.com/pgceiling/pgceiling/pgscript"
	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/workload"
)

// workloadNames are the valid --workload names: the built-in shapes and "script", the
// custom scripts of --script.
func workloadNames() []string { return append(workload.Names(), workload.CustomName) }

// readScripts reads the --script FILE[@WEIGHT] files.
func readScripts(args []string) ([]workload.CustomFile, error) {
	files := make([]workload.CustomFile, 0, len(args))
	for _, a := range args {
		name, weight, err := pgscript.ParseWeight(a)
		if err != nil {
			return nil, config.Usagef("%v", err)
		}
		st, err := os.Stat(name)
		if err == nil && st.Size() > pgscript.MaxSize {
			err = fmt.Errorf("%d bytes; a script may have at most %d", st.Size(), pgscript.MaxSize)
		}
		var src []byte
		if err == nil {
			src, err = os.ReadFile(name)
		}
		if err != nil {
			return nil, config.Usagef("--script %s: %v", name, err)
		}
		files = append(files, workload.CustomFile{Name: name, Source: string(src), Weight: weight})
	}
	return files, nil
}

// checkScripts reads and parses the scripts before anything starts, so a script outside
// the subset fails in a moment with its file:line (exit 2).
func checkScripts(args []string) error {
	if len(args) == 0 {
		return nil
	}
	files, err := readScripts(args)
	if err != nil {
		return err
	}
	if _, err := workload.NewCustom(files, workload.Params{}); err != nil {
		return config.Usagef("%v", err)
	}
	return nil
}

// customWorkload makes the workload of the --script files at synchronous_commit sync and
// has the server describe their statements (a statement it refuses is a usage error at
// its file:line).
func (s *probeServer) customWorkload(ctx context.Context, p *config.Probe, sync result.SyncCommit) (workload.Workload, error) {
	files, err := readScripts(p.Scripts)
	if err != nil {
		return nil, err
	}
	w, err := workload.NewCustom(files, workload.Params{SyncCommit: sync.On()})
	if err != nil {
		return nil, config.Usagef("%v", err)
	}
	if err := w.Describe(ctx, s.admin); err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, config.Usagef("%v", err)
	}
	return w, nil
}

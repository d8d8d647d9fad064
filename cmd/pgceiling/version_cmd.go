package main

import (
	"context"
)

func init() {
	register(command{name: "version", summary: "print the version and the VCS revision the binary was built from (also --version)", run: runVersion})
}

func runVersion(_ context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "version", "Prints pgceiling's module version, the VCS revision, time and modified flag stamped into the binary by the Go toolchain, and the results format it reads and writes.")
	if err := parse(fs, args); err != nil {
		return err
	}
	printVersion(env.Stdout)
	return nil
}

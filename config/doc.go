// Package config turns command lines, an optional config file and the environment into one
// typed, validated Config per sub-command, built from shared parts: Probe (each probe's
// shape, sessions, observer, fraud check and safety guard) is embedded in Run and Search,
// bound and checked once. It binds spf13/pflag flags to plain structs, lets flags set on
// the command line override the file, reports every problem at once with a message that
// names the fix, and redacts DSN passwords. It knows nothing of pgx.
package config

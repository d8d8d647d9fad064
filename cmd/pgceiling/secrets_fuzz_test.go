package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// FuzzArgsNeverShowPassword: whatever surrounds a DSN on the command line, and however
// the DSN is (mis)spelled — one dash, no dash, a stray argument, key=value — no output
// of the command shows its password. The commands run against a server that cannot be
// reached, under a cancelled context, so every case ends in parsing or in connecting.
// Run it longer with: go test ./cmd/pgceiling -run '^$' -fuzz FuzzArgsNeverShowPassword -fuzztime 1m
func FuzzArgsNeverShowPassword(f *testing.F) {
	for _, seed := range []struct {
		cmd, before, after string
		form               uint8
	}{
		{"run", "--rate", "10", 0}, {"run", "", "", 1}, {"search", "--precision", "7", 2},
		{"init", "--rows", "x", 3}, {"inspect", "", "--bogus", 4}, {"drop", "-x", "", 5},
		{"report", "", "", 6}, {"run", "--dsn", "", 7}, {"search", "-d", "=", 8},
	} {
		f.Add(seed.cmd, seed.before, seed.after, seed.form)
	}
	const pw = "Fz-s3cret-Pw9"
	url := "postgres://u:" + pw + "@127.0.0.1:1/x?connect_timeout=1"
	kv := "host=127.0.0.1 port=1 user=u password=" + pw + " connect_timeout=1"
	forms := []func() []string{
		func() []string { return []string{"-dsn=" + url} },
		func() []string { return []string{"--dsn=" + url} },
		func() []string { return []string{"-dsn", url} },
		func() []string { return []string{"--dsn", kv} },
		func() []string { return []string{"dsn=" + url} },
		func() []string { return []string{url} },
		func() []string { return []string{"-dsn=" + kv} },
		func() []string { return []string{"--dsn=" + strings.Replace(url, "127.0.0.1:1", "127.0.0.1:bad", 1)} },
		func() []string { return []string{"--dsn", url + "&password=" + pw} },
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f.Fuzz(func(t *testing.T, cmd, before, after string, form uint8) {
		if strings.Contains(before+after+cmd, pw[:4]) {
			return // the secret only ever stands where a password stands
		}
		args := []string{cmd}
		if before != "" {
			args = append(args, before)
		}
		args = append(args, forms[int(form)%len(forms)]()...)
		if after != "" {
			args = append(args, after)
		}
		var out, errb bytes.Buffer
		// PGCEILING_DSN (no password) keeps a DSN swallowed as another flag's value from
		// starting the embedded server.
		getenv := func(k string) string {
			if k == "PGCEILING_DSN" {
				return "postgres://u@127.0.0.1:1/x?connect_timeout=1"
			}
			return ""
		}
		env := &Env{Stdout: &out, Stderr: &errb, Getenv: getenv,
			Args: append([]string{"pgceiling"}, args...)}
		Main(ctx, env, args)
		if strings.Contains(out.String()+errb.String(), pw) {
			t.Errorf("pgceiling %q printed the password:\nstdout %q\nstderr %q", args, out.String(), errb.String())
		}
	})
}

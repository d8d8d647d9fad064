package config

import (
	"strings"
	"testing"
)

func TestRedactDSN(t *testing.T) {
	cases := []struct{ in, want string }{
		{"postgres://bob:s3cret@db:5432/app", "postgres://bob:xxxxx@db:5432/app"},
		{"postgresql://bob@db/app", "postgresql://bob@db/app"},
		{"postgres://bob@db/app?password=s3cret&sslmode=disable", "postgres://bob@db/app?password=xxxxx&sslmode=disable"},
		{"host=db user=bob password=s3cret dbname=app", "host=db user=bob password=xxxxx dbname=app"},
		{"host=db password = 'se cret' dbname=app", "host=db password = xxxxx dbname=app"},
		{"postgres://bob:p%40ss@db/app", "postgres://bob:xxxxx@db/app"},
		{"postgres://bob:bad%zz@db/app", "postgres://bob:xxxxx@db/app"},
		{"", ""},
	}
	for _, c := range cases {
		if got := RedactDSN(c.in); got != c.want {
			t.Errorf("RedactDSN(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestPasswordsAndScrub(t *testing.T) {
	env := map[string]string{"PGPASSWORD": "envpw"}
	getenv := func(k string) string { return env[k] }
	cases := []struct {
		dsn  string
		want []string
	}{
		{"postgres://bob:s3cret@db/app", []string{"envpw", "s3cret"}},
		{"postgres://bob:p%40ss@db/app", []string{"envpw", "p@ss"}},
		{"host=db password='se cret'", []string{"envpw", "se cret"}},
		{"postgres://bob@db/app?password=qpw", []string{"envpw", "qpw"}},
	}
	for _, c := range cases {
		got := Passwords(c.dsn, getenv)
		for _, w := range c.want {
			if !contains(got, w) {
				t.Errorf("Passwords(%q) = %q, missing %q", c.dsn, got, w)
			}
		}
		msg := "failed: " + c.dsn + " envpw"
		scrubbed := Scrub(msg, got)
		for _, w := range c.want {
			if strings.Contains(scrubbed, w) {
				t.Errorf("Scrub(%q) = %q still contains %q", msg, scrubbed, w)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

func FuzzRedactDSN(f *testing.F) {
	for _, s := range []string{"postgres://u:pw@h/db", "host=h password=pw", "postgres://u:p%zz@h", "password='a b'", "postgresql://:@/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, dsn string) {
		// Whatever password the DSN carries, the redacted form carries none but "xxxxx".
		red := RedactDSN(dsn)
		for _, p := range Passwords(red, nil) {
			if p != "xxxxx" {
				t.Errorf("RedactDSN(%q) = %q still carries password %q", dsn, red, p)
			}
		}
	})
}

func TestRedactText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`unknown shorthand flag: 'd' in -dsn=postgres://u:s3cr@t@db:5432/x`, `unknown shorthand flag: 'd' in -dsn=postgres://u:xxxxx@db:5432/x`},
		{`got "dsn: postgres://me:pw@host/db?sslmode=disable"`, `got "dsn: postgres://me:xxxxx@host/db?sslmode=disable"`},
		{`got "dsn: host=h user=u password=pw dbname=d"`, `got "dsn: host=h user=u password=xxxxx dbname=d"`},
		{`postgres://h/db?user=u&password=pw`, `postgres://h/db?user=u&password=xxxxx`},
		{`postgres://u@h/db and postgres://v:q@h2/db`, `postgres://u@h/db and postgres://v:xxxxx@h2/db`},
		{`nothing secret here: 10.5 tx/s`, `nothing secret here: 10.5 tx/s`},
	} {
		if got := RedactText(tc.in); got != tc.want {
			t.Errorf("RedactText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := Passwords(`-dsn=postgres://u:s3cr@t@db/x`, nil); len(got) == 0 || got[0] != "s3cr@t" {
		t.Errorf("Passwords(-dsn=URL) = %q, want the password", got)
	}
}

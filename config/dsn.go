package config

import (
	"net/url"
	"regexp"
	"strings"
)

// EnvDSN is the environment variable read when --dsn is not given.
const EnvDSN = "PGCEILING_DSN"

// Conn holds how to reach the server. An empty DSN means: start the embedded throwaway
// server.
type Conn struct {
	DSN string
}

var kvPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*(?:'|$)\S*|\S+)`)

// urlUserinfo matches the user:password@ part of a URL anywhere in a text: group 1 is up
// to the colon before the password, group 2 the password (which may hold any character
// but whitespace and quotes; the last @ before the host ends it).
var urlUserinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^:/@\s"']*:)([^\s"']*)@`)

// RedactDSN returns dsn with any password replaced by "xxxxx", for URL and key=value forms.
func RedactDSN(dsn string) string {
	if strings.Contains(dsn, "://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return redactURLByHand(dsn)
		}
		if u.User != nil {
			if _, has := u.User.Password(); has {
				u.User = url.UserPassword(u.User.Username(), "xxxxx")
			}
		}
		q := u.Query()
		if q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	return kvPassword.ReplaceAllString(dsn, "${1}xxxxx")
}

// RedactText returns s with every password it can find hidden: the user:password@ of any
// URL in it and any password=… (in a key=value DSN or a URL query), wherever they stand.
// For messages that echo input pgceiling did not parse as a DSN — a mistyped flag
// (`-dsn=postgres://u:secret@h`), a config-file line (`dsn: postgres://…`) — so no error
// ever prints a password.
func RedactText(s string) string {
	s = urlUserinfo.ReplaceAllString(s, "${1}xxxxx@")
	return kvPassword.ReplaceAllString(s, "${1}xxxxx")
}

// redactURLByHand handles URLs net/url refuses: everything between "://user:" and the last
// "@" before the host is hidden.
func redactURLByHand(dsn string) string {
	scheme, rest, _ := strings.Cut(dsn, "://")
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return dsn
	}
	user, _, hasPw := strings.Cut(rest[:at], ":")
	if !hasPw {
		return dsn
	}
	return scheme + "://" + user + ":xxxxx" + rest[at:]
}

// Passwords returns every password that dsn or the environment carries, so output can be
// scrubbed of them whatever library produced the text.
func Passwords(dsn string, getenv func(string) string) []string {
	var out []string
	add := func(p string) {
		if p != "" {
			out = append(out, p)
			if dec, err := url.QueryUnescape(p); err == nil && dec != p {
				out = append(out, dec)
			}
		}
	}
	if getenv != nil {
		add(getenv("PGPASSWORD"))
	}
	if strings.Contains(dsn, "://") {
		if u, err := url.Parse(dsn); err == nil {
			if u.User != nil {
				p, _ := u.User.Password()
				add(p)
			}
			add(u.Query().Get("password"))
		} else if _, rest, ok := strings.Cut(dsn, "://"); ok {
			if at := strings.LastIndex(rest, "@"); at >= 0 {
				if _, pw, ok := strings.Cut(rest[:at], ":"); ok {
					add(pw)
				}
			}
		}
	}
	for _, m := range kvPassword.FindAllStringSubmatch(dsn, -1) {
		add(strings.Trim(m[2], "'"))
	}
	for _, m := range urlUserinfo.FindAllStringSubmatch(dsn, -1) {
		add(m[2])
	}
	return out
}

// Scrub replaces every occurrence of each secret in s with "xxxxx".
func Scrub(s string, secrets []string) string {
	for _, p := range secrets {
		if len(p) >= 1 {
			s = strings.ReplaceAll(s, p, "xxxxx")
		}
	}
	return s
}

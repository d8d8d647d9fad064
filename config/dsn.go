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

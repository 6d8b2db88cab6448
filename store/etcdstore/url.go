package etcdstore

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/wisent/stado/store"
)

// PasswordEnv names the environment variable the etcd password is read
// from when the URL's userinfo carries a user but no password.
const PasswordEnv = "STADO_ETCD_PASSWORD"

// Defaults of a Config.
const (
	DefaultDialTimeout    = 5 * time.Second
	DefaultRequestTimeout = 30 * time.Second
)

// Upper bounds of the URL's numeric options (docs/limits.md). A larger
// value is refused naming the option: dial_timeout=1000h would leave a
// command waiting for an unreachable member for weeks.
const (
	MaxDialTimeout    = time.Minute
	MaxRequestTimeout = 10 * time.Minute
	// MaxCompactRetain keeps etcd's history within its default 2 GiB
	// quota for a fleet's beacon rewrites.
	MaxCompactRetain = 1_000_000
)

// Config says how to reach an etcd cluster and which part of its key space
// stado owns.
type Config struct {
	// Endpoints are the members' client addresses, HOST:PORT each.
	Endpoints []string
	// Prefix is the key prefix every stado key is stored under (without
	// the trailing slash): store key K lives at etcd key Prefix + "/" + K.
	Prefix string
	// Username and Password authenticate to an etcd with auth enabled.
	// Password is never printed (see Config.String and Redact).
	Username string
	Password string
	// TLS turns on TLS; CACert, Cert and Key are PEM file paths. CACert
	// empty means the system roots; Cert and Key go together (client
	// certificate authentication).
	TLS    bool
	CACert string
	Cert   string
	Key    string
	// DialTimeout bounds connecting to a member, and how long a member
	// may stay silent before a call moves on to the next one (at open,
	// each member gets this long to answer); RequestTimeout bounds every
	// call whose context has no deadline of its own (retries included).
	DialTimeout    time.Duration
	RequestTimeout time.Duration
	// CompactRetain is how many revisions behind the newest stado keeps
	// when it compacts the key space (see DefaultCompactRetain); 0 leaves
	// compaction to etcd.
	CompactRetain int64
}

// String renders the config as a URL with the password hidden.
func (c Config) String() string {
	var b strings.Builder
	b.WriteString("etcd://")
	if c.Username != "" {
		b.WriteString(url.User(c.Username).String())
		if c.Password != "" {
			b.WriteString(":***")
		}
		b.WriteString("@")
	}
	b.WriteString(strings.Join(c.Endpoints, ","))
	b.WriteString("/" + c.Prefix)
	return b.String()
}

// ParseURL reads an etcd store URL:
//
//	etcd://[USER[:PASSWORD]@]HOST:PORT[,HOST:PORT...]/PREFIX[?OPTIONS]
//
// OPTIONS are cacert=FILE, cert=FILE, key=FILE, tls=true, user=NAME,
// timeout=DURATION (each call, default 30s, at most MaxRequestTimeout) and
// dial_timeout=DURATION (connecting and authenticating, default 5s, at
// most MaxDialTimeout) and compact_retain=N (revisions kept behind the
// newest when stado compacts, default 10000, at most MaxCompactRetain; 0
// leaves compaction to etcd). The password comes from the userinfo or, when absent,
// from getenv(PasswordEnv); a password= option is refused so that it cannot
// end up in shell history or process listings by way of a query string it
// would be mistaken for. Errors name the part of the URL at fault and never
// contain the password.
func ParseURL(raw string, getenv func(string) string) (Config, error) {
	rest, ok := strings.CutPrefix(raw, "etcd://")
	if !ok {
		return Config{}, fmt.Errorf("etcd store url: want etcd://HOST:PORT[,HOST:PORT...]/PREFIX")
	}
	cfg := Config{DialTimeout: DefaultDialTimeout, RequestTimeout: DefaultRequestTimeout, CompactRetain: DefaultCompactRetain}
	rest, query, _ := strings.Cut(rest, "?")
	authority, prefix, ok := strings.Cut(rest, "/")
	if strings.Contains(prefix, "@") || strings.Contains(query, "@") {
		// Most likely a password holding '/' or '?': say nothing of it.
		return Config{}, fmt.Errorf("etcd store url: '@' after the endpoints; a password holding '/', '?', '#' or '@' must be percent-encoded (%%2F, %%3F, %%23, %%40), or set %s", PasswordEnv)
	}
	if !ok || prefix == "" {
		return Config{}, fmt.Errorf("etcd store url %s: no key prefix; want etcd://HOST:PORT/PREFIX, for instance etcd://127.0.0.1:2379/stado", redactRest(rest))
	}
	prefix = strings.TrimSuffix(prefix, "/")
	if err := store.ValidateKey(prefix); err != nil {
		return Config{}, fmt.Errorf("etcd store url: prefix: %w", err)
	}
	cfg.Prefix = prefix
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		info := authority[:at]
		authority = authority[at+1:]
		user, pass, hasPass := strings.Cut(info, ":")
		var err error
		if cfg.Username, err = url.PathUnescape(user); err != nil || cfg.Username == "" {
			return Config{}, fmt.Errorf("etcd store url: user name in the userinfo is empty or badly escaped")
		}
		if hasPass {
			if cfg.Password, err = url.PathUnescape(pass); err != nil {
				return Config{}, fmt.Errorf("etcd store url: password in the userinfo is badly escaped")
			}
		}
	}
	if authority == "" {
		return Config{}, fmt.Errorf("etcd store url: no endpoint; want HOST:PORT[,HOST:PORT...]")
	}
	for _, ep := range strings.Split(authority, ",") {
		host, port, err := net.SplitHostPort(ep)
		if err != nil || host == "" {
			return Config{}, fmt.Errorf("etcd store url: endpoint %q: want HOST:PORT", ep)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return Config{}, fmt.Errorf("etcd store url: endpoint %q: port %q is not 1..65535", ep, port)
		}
		cfg.Endpoints = append(cfg.Endpoints, ep)
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return Config{}, fmt.Errorf("etcd store url: options: %v", err)
	}
	for name, vals := range q {
		if len(vals) != 1 {
			return Config{}, fmt.Errorf("etcd store url: option %s given %d times", name, len(vals))
		}
		v := vals[0]
		switch name {
		case "cacert":
			cfg.CACert, cfg.TLS = v, true
		case "cert":
			cfg.Cert, cfg.TLS = v, true
		case "key":
			cfg.Key, cfg.TLS = v, true
		case "tls":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return Config{}, fmt.Errorf("etcd store url: option tls=%q: want true or false", v)
			}
			cfg.TLS = cfg.TLS || b
		case "user":
			if cfg.Username != "" && cfg.Username != v {
				return Config{}, fmt.Errorf("etcd store url: option user=%q differs from the userinfo's user", v)
			}
			cfg.Username = v
		case "timeout":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return Config{}, fmt.Errorf("etcd store url: option timeout=%q: want a positive duration such as 10s", v)
			}
			if d > MaxRequestTimeout {
				return Config{}, fmt.Errorf("etcd store url: option timeout=%q: longer than the limit of %s", v, MaxRequestTimeout)
			}
			cfg.RequestTimeout = d
		case "dial_timeout":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return Config{}, fmt.Errorf("etcd store url: option dial_timeout=%q: want a positive duration such as 5s", v)
			}
			if d > MaxDialTimeout {
				return Config{}, fmt.Errorf("etcd store url: option dial_timeout=%q: longer than the limit of %s", v, MaxDialTimeout)
			}
			cfg.DialTimeout = d
		case "compact_retain":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return Config{}, fmt.Errorf("etcd store url: option compact_retain=%q: want a revision count, 0 to leave compaction to etcd", v)
			}
			if n > MaxCompactRetain {
				return Config{}, fmt.Errorf("etcd store url: option compact_retain=%q: more than the limit of %d", v, MaxCompactRetain)
			}
			cfg.CompactRetain = n
		case "password":
			return Config{}, fmt.Errorf("etcd store url: a password option is not accepted; set %s or put it in the userinfo", PasswordEnv)
		default:
			return Config{}, fmt.Errorf("etcd store url: unknown option %q (known: cacert, cert, key, tls, user, timeout, dial_timeout, compact_retain)", name)
		}
	}
	if (cfg.Cert == "") != (cfg.Key == "") {
		return Config{}, fmt.Errorf("etcd store url: options cert and key go together")
	}
	if cfg.Username != "" && cfg.Password == "" && getenv != nil {
		cfg.Password = getenv(PasswordEnv)
	}
	if cfg.Username != "" && cfg.Password == "" {
		return Config{}, fmt.Errorf("etcd store url: user %q has no password; set %s", cfg.Username, PasswordEnv)
	}
	return cfg, nil
}

// Redact returns a store URL fit for messages and logs: a userinfo
// password becomes ***, and so does the value of a (refused) password=
// option and any option stado does not know. The userinfo is taken to end at the
// last '@' of the URL, so a password holding an unescaped '/', '?' or '@'
// is hidden whole (a URL with '@' elsewhere loses a little more than its
// password). Other URLs come back unchanged.
func Redact(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	return scheme + "://" + redactRest(rest)
}

func redactRest(rest string) string {
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		user, _, hasPass := strings.Cut(rest[:at], ":")
		if hasPass || strings.ContainsAny(user, "/?#") {
			user, _, _ = strings.Cut(user, "/")
			user, _, _ = strings.Cut(user, "?")
			rest = user + ":***" + rest[at:]
		}
	}
	head, query, ok := strings.Cut(rest, "?")
	if !ok {
		return rest
	}
	var opts []string
	for _, kv := range strings.Split(query, "&") {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "cacert", "cert", "key", "tls", "user", "timeout", "dial_timeout", "compact_retain":
			opts = append(opts, kv)
		case "password":
			opts = append(opts, "password=***")
		default:
			opts = append(opts, "***")
		}
	}
	return head + "?" + strings.Join(opts, "&")
}

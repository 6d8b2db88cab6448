package etcdstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func env(vals map[string]string) func(string) string {
	return func(k string) string { return vals[k] }
}

func TestParseURLReadsEveryForm(t *testing.T) {
	base := Config{DialTimeout: DefaultDialTimeout, RequestTimeout: DefaultRequestTimeout, CompactRetain: DefaultCompactRetain}
	with := func(f func(*Config)) Config { c := base; f(&c); return c }
	for _, tc := range []struct {
		name string
		url  string
		env  map[string]string
		want Config
	}{
		// One member and a simple prefix.
		{"single", "etcd://127.0.0.1:2379/stado", nil, with(func(c *Config) {
			c.Endpoints, c.Prefix = []string{"127.0.0.1:2379"}, "stado"
		})},
		// Three members, a nested prefix, a trailing slash dropped.
		{"cluster", "etcd://127.0.0.1:1,127.0.0.2:2,localhost:3/fleets/prod/", nil, with(func(c *Config) {
			c.Endpoints, c.Prefix = []string{"127.0.0.1:1", "127.0.0.2:2", "localhost:3"}, "fleets/prod"
		})},
		// User in the userinfo, password from the environment.
		{"user-env-password", "etcd://ops@127.0.0.1:2379/stado", map[string]string{PasswordEnv: "pw"}, with(func(c *Config) {
			c.Endpoints, c.Prefix, c.Username, c.Password = []string{"127.0.0.1:2379"}, "stado", "ops", "pw"
		})},
		// Password in the userinfo wins over the environment; escapes decoded.
		{"userinfo-password", "etcd://ops:p%40ss@127.0.0.1:2379/stado", map[string]string{PasswordEnv: "other"}, with(func(c *Config) {
			c.Endpoints, c.Prefix, c.Username, c.Password = []string{"127.0.0.1:2379"}, "stado", "ops", "p@ss"
		})},
		// User as an option.
		{"user-option", "etcd://127.0.0.1:2379/stado?user=ops", map[string]string{PasswordEnv: "pw"}, with(func(c *Config) {
			c.Endpoints, c.Prefix, c.Username, c.Password = []string{"127.0.0.1:2379"}, "stado", "ops", "pw"
		})},
		// TLS files turn TLS on; timeout parsed.
		{"tls", "etcd://127.0.0.1:2379/stado?cacert=/etc/ca.pem&cert=/etc/c.pem&key=/etc/k.pem&timeout=5s&dial_timeout=2s", nil, with(func(c *Config) {
			c.Endpoints, c.Prefix = []string{"127.0.0.1:2379"}, "stado"
			c.TLS, c.CACert, c.Cert, c.Key, c.RequestTimeout = true, "/etc/ca.pem", "/etc/c.pem", "/etc/k.pem", 5*time.Second
			c.DialTimeout = 2 * time.Second
		})},
		// TLS with the system roots.
		{"tls-system-roots", "etcd://127.0.0.1:2379/stado?tls=true", nil, with(func(c *Config) {
			c.Endpoints, c.Prefix, c.TLS = []string{"127.0.0.1:2379"}, "stado", true
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseURL(tc.url, env(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParseURL(%q) =\n %+v\nwant\n %+v", tc.url, got, tc.want)
			}
		})
	}
}

func TestParseURLRefusesBadFormsNamingThePart(t *testing.T) {
	for _, tc := range []struct {
		url, want string
	}{
		{"file:///tmp/x", "want etcd://"},                                          // another scheme
		{"etcd://127.0.0.1:2379", "no key prefix"},                                 // no prefix at all
		{"etcd://127.0.0.1:2379/", "no key prefix"},                                // empty prefix
		{"etcd://127.0.0.1:2379/a//b", "prefix"},                                   // bad prefix segment
		{"etcd:///stado", "no endpoint"},                                           // no endpoint
		{"etcd://127.0.0.1/stado", `endpoint "127.0.0.1"`},                         // no port
		{"etcd://127.0.0.1:2379,:1/stado", `endpoint ":1"`},                        // no host
		{"etcd://127.0.0.1:99999/stado", "not 1..65535"},                           // port out of range
		{"etcd://127.0.0.1:2379/stado?bogus=1", `unknown option "bogus"`},          // unknown option
		{"etcd://127.0.0.1:2379/stado?cert=/c.pem", "cert and key go"},             // cert without key
		{"etcd://127.0.0.1:2379/stado?timeout=soon", "option timeout"},             // bad duration
		{"etcd://127.0.0.1:2379/stado?tls=maybe", "option tls"},                    // bad bool
		{"etcd://ops@127.0.0.1:2379/stado", "has no password; set " + PasswordEnv}, // user without password
		{"etcd://127.0.0.1:2379/stado?password=hunter2", "not accepted"},           // password as an option
		{"etcd://127.0.0.1:2379/stado?user=a&user=b", "given 2 times"},             // repeated option
		{"etcd://x@127.0.0.1:2379/stado?user=y", "differs"},                        // two users
	} {
		_, err := ParseURL(tc.url, env(nil))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseURL(%q) = %v, want an error containing %q", tc.url, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ParseURL(%q) error repeats the password: %v", tc.url, err)
		}
	}
}

// TestParseURLBoundsEveryNumericOption: each duration or count option is
// accepted at its limit and refused one step past it, naming the option.
func TestParseURLBoundsEveryNumericOption(t *testing.T) {
	const base = "etcd://127.0.0.1:2379/stado?"
	for _, tc := range []struct {
		option   string
		at, past string
		check    func(Config) bool
	}{
		{"dial_timeout", "1m", "1m0.000000001s", func(c Config) bool { return c.DialTimeout == MaxDialTimeout }},
		{"dial_timeout", "1m", "1000h", func(c Config) bool { return c.DialTimeout == MaxDialTimeout }},
		{"timeout", "10m", "601s", func(c Config) bool { return c.RequestTimeout == MaxRequestTimeout }},
		{"compact_retain", "1000000", "1000001", func(c Config) bool { return c.CompactRetain == MaxCompactRetain }},
	} {
		c, err := ParseURL(base+tc.option+"="+tc.at, env(nil))
		if err != nil || !tc.check(c) {
			t.Errorf("%s=%s: %+v, %v; want accepted at the limit", tc.option, tc.at, c, err)
		}
		_, err = ParseURL(base+tc.option+"="+tc.past, env(nil))
		if err == nil || !strings.Contains(err.Error(), "option "+tc.option+"=") || !strings.Contains(err.Error(), "limit") {
			t.Errorf("%s=%s: %v; want refused naming the option and its limit", tc.option, tc.past, err)
		}
	}
}

func TestRedactHidesOnlyThePassword(t *testing.T) {
	for in, want := range map[string]string{
		"etcd://ops:secret@127.0.0.1:2379/stado?user=ops": "etcd://ops:***@127.0.0.1:2379/stado?user=ops", // password hidden
		"etcd://ops@127.0.0.1:2379/stado":                 "etcd://ops@127.0.0.1:2379/stado",              // nothing to hide
		"etcd://127.0.0.1:2379/a@b":                       "etcd://127.0.0.1:***@b",                       // @ in the prefix may end a password: hidden
		"file:///tmp/store":                               "file:///tmp/store",                            // other schemes untouched
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	cfg := Config{Endpoints: []string{"h:1"}, Prefix: "p", Username: "ops", Password: "secret"}
	if s := cfg.String(); s != "etcd://ops:***@h:1/p" {
		t.Errorf("Config.String() = %q", s)
	}
}

func TestValueEncodingRoundTrips(t *testing.T) {
	for name, v := range map[string][]byte{
		"empty":           {},
		"small":           []byte("beacon"),
		"marker-prefixed": append([]byte(valueMarker), "z junk"...),
		"marker-only":     []byte(valueMarker),
		"large":           bytes.Repeat([]byte("registry "), CompressAbove),
	} {
		enc, err := encodeValue(v, false)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := decodeValue(enc)
		if err != nil || !bytes.Equal(dec, v) {
			t.Errorf("%s: round trip gives %d bytes, %v; want %d bytes", name, len(dec), err, len(v))
		}
	}
	// A compressed value sized from its gzip trailer: a trailer that lies
	// (here: 4 GiB) is refused by gzip's own check, after a buffer no larger
	// than deflate can expand the stored bytes to.
	large, _ := encodeValue(bytes.Repeat([]byte("registry "), CompressAbove), false)
	lying := append([]byte(nil), large...)
	copy(lying[len(lying)-4:], []byte{0xff, 0xff, 0xff, 0xff})
	if _, err := decodeValue(lying); err == nil {
		t.Error("a value whose gzip trailer lies about its size was read")
	}
	// Stored forms that are not ours to read back.
	for name, b := range map[string][]byte{
		"marker-no-encoding": []byte(valueMarker),
		"unknown-encoding":   []byte(valueMarker + "q"),
		"bad-gzip":           []byte(valueMarker + "znot gzip"),
	} {
		if _, err := decodeValue(b); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}

// packLZW stores value as a packed (encLZW) value, as a later stado's
// writer will.
// A value packed with LZW reads back as written, under a reader's bound
// or refused over it (errOverBound, before anything is expanded), and a
// packed value whose stated length is not what its stream holds, or
// states more than its bytes could expand to, is an error.
func TestAPackedValueReadsBackAndAStatedLengthThatLiesIsRefused(t *testing.T) {
	beacon := bytes.Repeat([]byte(`{"service":"svc00","unit":"svc00.service","state":"active","sub":"running","pid":1000},`), 40)
	packed, err := encodeValue(beacon, true)
	if err != nil || len(packed) >= len(beacon)/2 {
		t.Fatalf("packed %d bytes into %d (%v)", len(beacon), len(packed), err)
	}
	if again, _ := encodeValue(beacon, true); !bytes.Equal(again, packed) {
		t.Fatal("a kept writer packed the same value differently")
	}
	// a value packing would not shrink is kept as it is
	if short, _ := encodeValue([]byte(`{"a":1}`), true); string(short) != `{"a":1}` {
		t.Fatalf("a short value was stored as %q", short)
	}
	for range 2 { // the second time through a kept reader
		got, err := decodeValueMax(packed, 1<<20)
		if err != nil || !bytes.Equal(got, beacon) {
			t.Fatalf("read back %d bytes, %v; want the %d written", len(got), err, len(beacon))
		}
	}
	if _, err := decodeValueMax(packed, len(beacon)-1); !errors.Is(err, errOverBound) {
		t.Fatalf("over the reader's bound: %v, want errOverBound", err)
	}
	states := func(n uint64, stream []byte) []byte {
		out := binary.AppendUvarint(append([]byte(valueMarker), encLZW), n)
		return append(out, stream...)
	}
	stream := packed[len(valueMarker)+1+len(binary.AppendUvarint(nil, uint64(len(beacon)))):]
	for name, b := range map[string][]byte{
		"longer than its stream":  states(uint64(len(beacon)+1), stream),
		"shorter than its stream": states(uint64(len(beacon)-1), stream),
		"more than it can hold":   states(1<<28, stream[:8]),
		"no length":               []byte(valueMarker + "l"),
		"truncated stream":        states(uint64(len(beacon)), stream[:len(stream)/2]),
	} {
		if _, err := decodeValue(b); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}

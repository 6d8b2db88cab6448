package sshclient

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wisent/stado/registry"
)

func TestSSHConfigLookupAppliesMatchingBlocksInOrder(t *testing.T) {
	home := isolatedHome(t)
	cfg := filepath.Join(home, ".ssh", "config")
	writeFile(t, cfg, `# fleet
Include conf.d/*.conf
Host web? !web9
  HostName 127.0.1.%h
  User=ops
  IdentityFile ~/.ssh/id_web
Host web9
  HostName 127.0.1.9
Match host web1 exec "false"
  User never
Host *
  Port 2222
  User fallback
  IdentityFile "%d/.ssh/id all"
`)
	writeFile(t, filepath.Join(home, ".ssh", "conf.d", "a.conf"), "Host db1\n  HostName 127.0.2.1\n  Port 22\n")
	c, err := LoadSSHConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		alias string
		want  HostConfig
	}{
		// a pattern block, then Host *; the first value of each keyword wins,
		// IdentityFile accumulates; the Match block never applies
		{"web1", HostConfig{HostName: "127.0.1.%h", Port: 2222, User: "ops", IdentityFiles: []string{"~/.ssh/id_web", "%d/.ssh/id all"}}},
		// a negated pattern excludes the host from the block
		{"web9", HostConfig{HostName: "127.0.1.9", Port: 2222, User: "fallback", IdentityFiles: []string{"%d/.ssh/id all"}}},
		// a block from an included file, relative to ~/.ssh
		{"db1", HostConfig{HostName: "127.0.2.1", Port: 22, User: "fallback", IdentityFiles: []string{"%d/.ssh/id all"}}},
		// host patterns match case-insensitively
		{"WEB2", HostConfig{HostName: "127.0.1.%h", Port: 2222, User: "ops", IdentityFiles: []string{"~/.ssh/id_web", "%d/.ssh/id all"}}},
	}
	for _, tt := range tests {
		if got := c.Lookup(tt.alias); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Lookup(%q)\n got %+v\nwant %+v", tt.alias, got, tt.want)
		}
	}
}

func TestSSHConfigRefusesAMalformedLineNamingFileAndLine(t *testing.T) {
	tests := []struct {
		name, text, msg string
		line            int
	}{
		// a port that is no port
		{"port", "Host a\n  Port http\n", "Port", 2},
		{"port range", "Host a\n\n  Port 70000\n", "Port", 3},
		// Host without a pattern
		{"host", "Host\n", "pattern", 1},
		// a quote never closed
		{"quote", "Host a\n  IdentityFile \"~/x\n", "double quote", 2},
		// two values where one is taken
		{"hostname", "Host a\n  HostName a b\n", "one value", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "config")
			writeFile(t, p, tt.text)
			_, err := LoadSSHConfig(p)
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.File != p || ce.Line != tt.line || !strings.Contains(ce.Msg, tt.msg) {
				t.Fatalf("error %v, want %s:%d mentioning %q", err, p, tt.line, tt.msg)
			}
		})
	}
}

func TestSSHConfigThatIsMissingIsEmpty(t *testing.T) {
	c, err := LoadSSHConfig(filepath.Join(t.TempDir(), "none"))
	if err != nil || !reflect.DeepEqual(c.Lookup("x"), HostConfig{}) {
		t.Fatalf("%+v, %v", c, err)
	}
}

func TestSSHConfigIncludeThatLoopsIsRefused(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config")
	writeFile(t, p, "Include config\n")
	var ce *ConfigError
	if _, err := LoadSSHConfig(p); !errors.As(err, &ce) || !strings.Contains(ce.Msg, "nested") {
		t.Fatalf("error %v, want an Include depth refusal", err)
	}
}

func TestResolveLetsTheRegistryWinAndSSHConfigFillTheRest(t *testing.T) {
	home := isolatedHome(t)
	cfg := filepath.Join(home, ".ssh", "config")
	writeFile(t, cfg, "Host web1\n  HostName 10.9.9.9\n  Port 2200\n  User cfguser\n  IdentityFile %d/.ssh/id_%n_%r\n")
	d := &Dialer{IdentityFiles: []string{"~/extra"}}
	tests := []struct {
		name   string
		target registry.Target
		want   Endpoint
	}{
		// the registry sets address, port and user: the config only adds its identity
		{"registry wins", registry.Target{Name: "web1", SSH: registry.SSH{Address: "127.0.1.1", Port: 22, User: "root"}},
			Endpoint{Host: "web1", Address: "127.0.1.1", Port: 22, User: "root", IdentityFiles: []string{home + "/.ssh/id_web1_root", home + "/extra"}, Explicit: 1}},
		// the registry leaves them empty: the config fills them
		{"config fills", registry.Target{Name: "web1"},
			Endpoint{Host: "web1", Address: "10.9.9.9", Port: 2200, User: "cfguser", IdentityFiles: []string{home + "/.ssh/id_web1_cfguser", home + "/extra"}, Explicit: 1}},
		// neither says: the target name, port 22 and root
		{"defaults", registry.Target{Name: "db1"},
			Endpoint{Host: "db1", Address: "db1", Port: 22, User: "root", IdentityFiles: []string{home + "/extra"}, Explicit: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := d.Resolve(tt.target)
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Resolve = %+v, %v\nwant %+v", got, err, tt.want)
			}
		})
	}
	// with no identity anywhere, the default key files are tried
	got, err := (&Dialer{}).Resolve(registry.Target{Name: "db1"})
	if err != nil || len(got.IdentityFiles) != 3 || got.IdentityFiles[0] != home+"/.ssh/id_ed25519" {
		t.Fatalf("default identities %q, %v", got.IdentityFiles, err)
	}
}

package fleet_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/channel/local"
	"github.com/wisent/stado/fleet"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/register"
	"github.com/wisent/stado/registry"
)

// A host's register read through its channel: every row, oldest first,
// or one service's; a line that is not a recovery is refused naming the
// file and line; an unknown target is refused before any host is asked.
func TestRecoveriesReadTheHostsRegisterThroughItsChannel(t *testing.T) {
	home := t.TempDir()
	reg := filepath.Join(home, register.HomeFile)
	if err := os.MkdirAll(filepath.Dir(reg), 0o700); err != nil {
		t.Fatal(err)
	}
	rows := `{"kind":"stado.recovery","state":"attempted","when":"2030-01-01T00:00:00Z","service":"skarbiec","host":"host2","unit":"skarbiec.service","question":{"method":"GET","path":"/readyz","endpoint":"127.0.1.2:8200","repair":[]},"declaration":null,"since":"2029-12-31T23:59:00Z","waited_seconds":60,"bound_seconds":45,"held_requests":0,"repair_steps":[],"alerts":[],"complete":true}
{"kind":"stado.recovery","state":"attempted","when":"2030-01-01T00:01:00Z","service":"brama","host":"host2","unit":"brama.service","question":{"method":"POST","path":"/v1/chat/completions","endpoint":"127.0.1.2:8080","repair":[]},"declaration":null,"since":"2030-01-01T00:00:00Z","waited_seconds":60,"bound_seconds":45,"held_requests":1,"repair_steps":[],"alerts":[],"complete":false,"observed_by":"host1"}
`
	if err := os.WriteFile(reg, []byte(rows), 0o600); err != nil {
		t.Fatal(err)
	}
	doc := &registry.Document{Version: 1, Targets: []registry.Target{{Name: "host2", OS: registry.OSLinux}}}
	h := &local.Host{GOOS: registry.OSLinux, Home: home}
	f := &fleet.Fleet{Doc: doc, Connect: func(registry.Target) channel.Host { return h }}
	ctx := context.Background()

	all, err := f.Recoveries(ctx, "host2", "")
	if err != nil || all.File != reg || len(all.Recoveries) != 2 || all.Recoveries[0].Service != "skarbiec" || all.Recoveries[1].ObservedBy != "host1" {
		t.Fatalf("all: %+v, %v", all, err)
	}
	one, err := f.Recoveries(ctx, "host2", "brama")
	if err != nil || len(one.Recoveries) != 1 || one.Recoveries[0].Service != "brama" {
		t.Fatalf("brama: %+v, %v", one, err)
	}
	if _, err := f.Recoveries(ctx, "host9", ""); !refusal.Is(err, refusal.NotFound) {
		t.Fatalf("unknown target: %v", err)
	}
	if err := os.WriteFile(reg, []byte(rows+"{oops\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad, err := f.Recoveries(ctx, "host2", "")
	if !refusal.Is(err, refusal.RegisterUnreadable) || !strings.Contains(err.Error(), reg+":3") || bad.Error == nil {
		t.Fatalf("malformed register: %+v, %v", bad, err)
	}
}

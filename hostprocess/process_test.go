package hostprocess

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/release"
	"github.com/wisent/stado/store"
)

// A bounded host process publishes its beacon as the target it runs as,
// with this binary's version, and closes the peers' connections it opened
// once on the way out.
func TestABoundedHostProcessPublishesItsBeaconAndClosesItsPeers(t *testing.T) {
	dir := t.TempDir()
	st, err := store.OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	doc := &registry.Document{Version: 1, Targets: []registry.Target{{Name: "h1", OS: registry.OSLinux, SSH: registry.SSH{Address: "127.0.1.1"}}}}
	if _, err := registry.Push(context.Background(), st, doc, 0, "test"); err != nil {
		t.Fatal(err)
	}
	home, root := t.TempDir(), t.TempDir()
	opened, closed := 0, 0
	var logs bytes.Buffer
	p := Process{
		Machine: Machine{Home: home, Getenv: func(k string) string { return map[string]string{"HOME": home, release.RootEnv: root}[k] },
			StoreURL: "file://" + dir, OpenStore: store.Open, Version: "9.9.9-test", Now: time.Now},
		Target: "h1", Store: st, Interval: time.Millisecond, Listen: "127.0.0.1:0", Passes: 1, PeerRecoveries: 1,
		Peers: func() (channel.Connector, func()) {
			opened++
			return func(registry.Target) channel.Host { return nil }, func() { closed++ }
		},
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if opened != 1 || closed != 1 {
		t.Errorf("peers opened %d, closed %d times; want once each", opened, closed)
	}
	obj, err := st.Get(context.Background(), store.BeaconPrefix+"h1")
	if err != nil {
		t.Fatalf("no beacon published: %v\n%s", err, logs.String())
	}
	var b beacon.Beacon
	if err := json.Unmarshal(obj.Value, &b); err != nil {
		t.Fatal(err)
	}
	if b.Host != "h1" || b.Pass != 1 || b.StadoVersion != "9.9.9-test" {
		t.Errorf("beacon host %q pass %d version %q; want h1, 1, 9.9.9-test", b.Host, b.Pass, b.StadoVersion)
	}
}

package hostprocess

import (
	"context"
	"os"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel/local"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/release"
	"github.com/wisent/stado/release/hostend"
	"github.com/wisent/stado/store"
)

// Machine is the machine a stado process runs on as the command line sees
// it. Every field is needed: a zero Machine is not usable.
type Machine struct {
	// Home is the user's home directory (~/.stado lives under it).
	Home string
	// Getenv reads the process environment (USER, STADO_HOST, the release
	// root's override).
	Getenv func(string) string
	// StoreURL names the store this host reads, and OpenStore opens it.
	StoreURL  string
	OpenStore func(ctx context.Context, url string) (store.Store, error)
	// Version is the version of this stado binary.
	Version string
	Now     func() time.Time
}

// releaseRoot is this host's release directory (release.Root).
func (m Machine) releaseRoot() string { return release.Root(m.Getenv, os.Geteuid(), m.Home) }

// LocalHost is this machine as a channel.Host: its init system, its unit
// files and /proc, and the repair steps of its store's catalog (run by
// channel/local's step runner, the one every recovery reaches). It opens
// the store only when a verb needs it, and closes it after.
func (m Machine) LocalHost() *local.Host {
	h := local.New(m.Home, m.Getenv("USER"), m.Version)
	h.Now = m.Now
	h.Catalog = m.catalog
	h.Release = m.release
	return h
}

// maxReleasePeers bounds the peers a host asks for chunks its store lacks.
const maxReleasePeers = 8

// release is what the release verbs need beyond the init system: this
// host's release directory, the store it names (as catalog) for manifests
// and bytes, its own beacon there to prove a stado activation, and its
// peers' host APIs for chunks the store lacks. The func it returns closes
// the store.
func (m Machine) release(ctx context.Context) (*hostend.Host, func(), error) {
	root := m.releaseRoot()
	st, err := m.OpenStore(ctx, m.StoreURL)
	if err != nil {
		// release-state needs no store; an activation says why it has none
		return &hostend.Host{Root: root, Source: hostend.NoSource{Err: err}}, func() {}, nil
	}
	rh := &hostend.Host{Root: root, Source: hostend.StoreSource{Store: st}}
	if name, err := registry.ThisTarget(m.Getenv("STADO_HOST")); err == nil {
		rh.BeaconProof = func(ctx context.Context, since time.Time) (string, error) {
			return beacon.PublishedVersion(ctx, st, name, since)
		}
		rh.Source = hostend.PeerSource{Source: rh.Source, Peers: func(ctx context.Context) []hostend.Peer {
			var ps []hostend.Peer
			for _, p := range beacon.PeerAPIs(ctx, st, name, maxReleasePeers) {
				ps = append(ps, hostend.Peer{Host: p.Host, URL: p.URL})
			}
			return ps
		}}
	}
	return rh, func() { st.Close() }, nil
}

// catalog is the catalog of the store this host names ($STADO_STORE or
// ~/.stado/store), which may extend the shipped one. A host whose store
// cannot be read still has the shipped catalog; a site catalog that is
// invalid is an error, never silently ignored.
func (m Machine) catalog(ctx context.Context) (*catalog.Catalog, error) {
	st, err := m.OpenStore(ctx, m.StoreURL)
	if err != nil {
		return catalog.LoadOrShipped(ctx, nil)
	}
	defer st.Close()
	return catalog.LoadOrShipped(ctx, st)
}

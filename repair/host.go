package repair

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/channel/local"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/register"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/resolver"
	"github.com/wisent/stado/store"
	"github.com/wisent/stado/units"
)

// HostProcess is what a host's `stado host run` gives repair: its store,
// its target name, its init system (the system manager, and the user
// managers of user-scope units) and its home (register and waiting list),
// and the Connector that reaches its peers.
type HostProcess struct {
	Store   store.Store
	Host    string
	Manager units.Manager
	// Users opens the manager of a user; nil leaves user-scope restarts
	// without a manager (restart_unavailable).
	Users beacon.UserManagers
	Home  string
	// StoreURL is the URL Store was opened from; repair steps get it as
	// STADO_STORE (local.StepRunner.StoreURL).
	StoreURL string
	// Peers reaches another host's end of the channel when this host
	// recovers a peer's service: in `stado host run` the SSH client, over
	// a pool the caller owns and closes. nil refuses every peer recovery
	// (Peer.Connect).
	Peers channel.Connector
	// PeerConcurrency caps the peer recoveries running at once, off the
	// pass (Peer.Concurrency; 0: DefaultPeerConcurrency).
	PeerConcurrency int
	Now             func() time.Time
	Logger          *slog.Logger
}

// Contributors returns the pass contributors of a host process, and the
// func that stops them (the peer's running recoveries end first): the Answerer of this host's own services (the
// store's catalog, or the shipped one when the store cannot be read; this
// host's end of the channel, Self; the register under Home) and the Peer
// of other hosts' services this host's resolvers see standing (the waiting
// list under Home, the catalog read every pass, the SSH channel to the
// serving host, targets from each pass's registry). A site catalog that
// breaks a rule is returned as its error: a host does not run on a catalog
// it cannot trust.
func (h HostProcess) Contributors(ctx context.Context) ([]beacon.Contributor, func(), error) {
	cat, err := catalog.LoadOrShipped(ctx, h.Store)
	if err != nil {
		return nil, nil, err
	}
	answerer := &Answerer{
		Catalog:  cat,
		Host:     h.Self(cat),
		Register: register.Home(h.Home), Now: h.Now, Logger: h.Logger,
	}
	peer := &Peer{
		ListPath:    resolver.ListPath(h.Home),
		LoadCatalog: func(ctx context.Context) (*catalog.Catalog, error) { return catalog.Load(ctx, h.Store) },
		Connect:     h.Peers, Concurrency: h.PeerConcurrency,
		Register: register.Home(h.Home), Now: h.Now, Logger: h.Logger,
	}
	return []beacon.Contributor{answerer, peer}, func() { peer.Close(); answerer.Close() }, nil
}

// WaitPeers waits for the peer recoveries the contributors cs started
// (Peer.Wait): a bounded run lets those of one pass end before the next,
// so that the next pass reports their outcomes.
func WaitPeers(cs []beacon.Contributor) {
	for _, c := range cs {
		if p, ok := c.(*Peer); ok {
			p.Wait()
		}
	}
}

// Self is this host's end of the channel as its own recoveries use it: the
// repair steps of cat run by a local.StepRunner (HOME and STADO_STORE of
// this process), restarts through Manager for system units and, for
// user-scope units, the manager of the user they belong to (Users).
func (h HostProcess) Self(cat *catalog.Catalog) *local.Host {
	self := &local.Host{Home: h.Home, Now: h.Now,
		Catalog: func(context.Context) (*catalog.Catalog, error) { return cat, nil },
		RunStep: (&local.StepRunner{Home: h.Home, StoreURL: h.StoreURL}).Run,
	}
	self.Manager = func(ctx context.Context, scope string) (units.Manager, func(), error) {
		switch {
		case scope == registry.ScopeSystem && h.Manager != nil:
			return h.Manager, func() {}, nil
		case scope == registry.ScopeUser && h.Users != nil:
			m, err := h.userManager(ctx)
			return m, func() {}, err
		}
		return nil, nil, refusal.New(refusal.NoManager, "no %s service manager on %s", scope, h.Host)
	}
	return self
}

// userManager opens the manager of this host's user-scope units: those of
// units.ScopeOwner of this host's target, as the registry declares it now.
func (h HostProcess) userManager(ctx context.Context) (units.Manager, error) {
	doc, _, err := registry.Load(ctx, h.Store)
	if err != nil {
		return nil, fmt.Errorf("read the registry for the owner of user units: %w", err)
	}
	t, ok := doc.Target(h.Host)
	if !ok {
		return nil, refusal.New(refusal.NotFound, "the registry declares no target %s, so no user owns its user units", h.Host)
	}
	return h.Users.Manager(ctx, units.ScopeOwner(*t))
}

package repair

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/resolver"
	"github.com/wisent/stado/store"
	"github.com/wisent/stado/units"
)

// HostProcess is what a host's `stado host run` gives repair: its store,
// its target name, its init system (the system manager, and the user
// managers of user-scope units) and its home (register and waiting list),
// and the SSH dialer that reaches its peers.
type HostProcess struct {
	Store   store.Store
	Host    string
	Manager units.Manager
	// Users opens the manager of a user; nil leaves user-scope restarts
	// without a manager (restart_unavailable).
	Users beacon.UserManagers
	Home  string
	// StoreURL is the URL Store was opened from; repair steps get it as
	// STADO_STORE (Local.StoreURL).
	StoreURL string
	Dialer   *channel.Dialer
	Now      func() time.Time
	Logger   *slog.Logger
}

// Contributors returns the pass contributors of a host process, and the
// func that stops them: the Answerer of this host's own services (the
// store's catalog, or the shipped one when the store cannot be read; the
// Local executor over Manager; the register under Home) and the Peer of
// other hosts' services this host's resolvers see standing (the waiting
// list under Home, the catalog read every pass, the Remote executor over
// SSH, targets read from the registry when each recovery starts). A site
// catalog that breaks a rule is returned as its error: a host does not run
// on a catalog it cannot trust.
func (h HostProcess) Contributors(ctx context.Context) ([]beacon.Contributor, func(), error) {
	cat, err := catalog.LoadOrShipped(ctx, h.Store)
	if err != nil {
		return nil, nil, err
	}
	local := &Local{Catalog: cat, Host: h.Host, Managers: map[string]units.Manager{registry.ScopeSystem: h.Manager}, Home: h.Home, StoreURL: h.StoreURL}
	if h.Users != nil {
		local.UserManager = h.userManager
	}
	answerer := &Answerer{
		Catalog:  cat,
		Executor: local,
		Register: HomeRegister(h.Home), Now: h.Now, Logger: h.Logger,
	}
	pool := channel.NewPool(h.Dialer)
	peer := &Peer{
		ListPath:    resolver.ListPath(h.Home),
		LoadCatalog: func(ctx context.Context) (*catalog.Catalog, error) { return catalog.Load(ctx, h.Store) },
		Executor: &Remote{Pool: pool, Now: h.Now, Target: func(host string) (registry.Target, bool) {
			doc, _, err := registry.Load(context.Background(), h.Store)
			if err != nil {
				return registry.Target{}, false
			}
			return TargetsOf(doc)(host)
		}},
		Register: HomeRegister(h.Home), Now: h.Now, Logger: h.Logger,
	}
	return []beacon.Contributor{answerer, peer}, func() { _ = pool.Close(); answerer.Close() }, nil
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

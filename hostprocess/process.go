package hostprocess

import (
	"context"
	"log/slog"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/metrics"
	"github.com/wisent/stado/repair"
	"github.com/wisent/stado/store"
	"github.com/wisent/stado/store/etcdstore"
	"github.com/wisent/stado/units"
)

// Process is one host process (`stado host run`), its options checked by
// the caller.
type Process struct {
	Machine
	// Target is the registry target this process runs as.
	Target string
	// Store is the store Machine.StoreURL names, opened by the caller, who
	// closes it after Run.
	Store store.Store
	// Interval is the time between passes (positive); StaleAfter the age
	// after which readers distrust a beacon (0: 3 × Interval).
	Interval, StaleAfter time.Duration
	// Listen is the host API's address ("": the directory's port for stado
	// on this host).
	Listen string
	// Passes stops the process after that many passes; 0 runs until ctx
	// ends.
	Passes int
	// PeerRecoveries caps the peer recoveries running at once (at least 1).
	PeerRecoveries int
	// Peers opens the connections to the other hosts' ends of the channel
	// for peer recoveries, and returns the func that closes them.
	Peers  func() (channel.Connector, func())
	Logger *slog.Logger
}

// Run runs the host process until ctx ends (or for Passes passes): it sets
// the process's GC target (beacon.SetHostGCTarget), times every store
// operation for /metrics, opens this host's init system (one out of reach
// is each pass's units_unreadable refusal, never an error here), serves
// the host API beside the passes, and publishes this host's beacon every
// pass. A failed pass is logged, never returned. The error is that of
// building the contributors: a site catalog that breaks a rule stops the
// process before its first pass.
func (p Process) Run(ctx context.Context) error {
	beacon.SetHostGCTarget()
	// every store operation of the process timed for /metrics
	m := metrics.New(p.Now())
	st := m.Instrument(p.Store)
	// an init system out of reach is each pass's units_unreadable refusal, never an exit
	mgr, adminDirs := beacon.OpenInitSystem(ctx, units.OpenHostManager, p.Home)
	defer mgr.Close()
	// the user managers of user-scope declarations, one per user, kept
	// across passes; the observer and the restarts share them
	users := &units.UserManagers{}
	defer users.Close()
	// peer recoveries run off the pass, p.PeerRecoveries at once
	contributors, stopContrib, err := p.contributors(ctx, st, mgr, users)
	if err != nil {
		return err
	}
	defer stopContrib()

	// READY=1 and the watchdog under a Type=notify unit; nil elsewhere
	notifier, err := beacon.SystemdNotifier()
	if err != nil {
		p.Logger.Warn("host run", "err", err)
	}
	runner := &beacon.Runner{
		Host: p.Target, Store: st, Config: beacon.ConfigFor(p.StoreURL, p.Interval, p.StaleAfter), Contributors: contributors,
		Observer: &beacon.UnitsObserver{Manager: mgr, AdminDirs: adminDirs, Users: users},
		Identity: beacon.MachineIdentity(p.Now()),
		Version:  p.Version, Logger: p.Logger.With("host", p.Target), Now: p.Now, Notifier: notifier,
		PassObserver: m, MetricsHandler: m.Handler(),
		ReleaseRoot: p.releaseRoot(),
		// each declared unit's file against ensure's rendering, with the
		// product settings of the store's catalog as the host channel merges them
		Files: &beacon.UnitFiles{Catalog: func(ctx context.Context) (*catalog.Catalog, error) { return catalog.LoadOrShipped(ctx, st) }},
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopServing := runner.ServeAPI(ctx, p.Listen)
	p.Logger.Info("host run", "host", p.Target, "interval", p.Interval, "store", etcdstore.Redact(p.StoreURL))
	if p.Passes == 0 {
		_ = runner.Run(ctx)
	}
	for i := 0; i < p.Passes && ctx.Err() == nil; i++ {
		if i > 0 {
			// a bounded run lets the peer recoveries the last pass started
			// end, so that this pass reports their outcomes
			repair.WaitPeers(contributors)
			select {
			case <-ctx.Done():
			case <-time.After(p.Interval):
			}
		}
		if _, err := runner.RunPass(ctx); err != nil {
			p.Logger.Warn("beacon pass", "err", err)
		}
	}
	stopServing()
	p.Logger.Info("host run stopped", "host", p.Target)
	return nil
}

// contributors are the answering and peer contributors of this host
// (repair.HostProcess), over the peers' connections (Peers), and the
// service-protocol evidence of declarations naming an executable. The func
// it returns stops them and closes the peers' connections.
func (p Process) contributors(ctx context.Context, st store.Store, mgr units.Manager, users beacon.UserManagers) ([]beacon.Contributor, func(), error) {
	peers, closePeers := p.Peers()
	cs, stop, err := repair.HostProcess{Store: st, Host: p.Target, Manager: mgr, Users: users, Home: p.Home, StoreURL: p.StoreURL, Peers: peers, PeerConcurrency: p.PeerRecoveries, Now: p.Now, Logger: p.Logger}.Contributors(ctx)
	if err != nil {
		closePeers()
		return nil, nil, err
	}
	ev := &beacon.ProtocolEvidence{Now: p.Now}
	return append(cs, ev), func() { stop(); ev.Close(); closePeers() }, nil
}

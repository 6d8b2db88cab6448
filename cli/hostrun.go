package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/registry/etcdstore"
	"github.com/wisent/stado/units"
)

// hostRunOptions are the flags of host run.
type hostRunOptions struct {
	Host       string
	Interval   time.Duration
	StaleAfter time.Duration
	Listen     string
	Passes     int
}

func newHostRunCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "run",
		Usage: "run this host's stado process: publish a beacon every pass and serve the release API",
		UsageText: "stado host run [--host NAME] [--interval 15s] [--stale-after 45s] [--listen ADDR:PORT]\n\n" +
			"Meant to run under the host's init system as the stado product (stado service ensure stado --host NAME).\n" +
			"Each pass observes every declared unit and the undeclared loaded ones, asks the answering questions,\n" +
			"reads this host's resolver waiting list, and publishes beacons/<host> to the store.\n\n" +
			"example:\n   stado host run --host host1 --store file:///var/lib/stado/store --interval 5s",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "host", Usage: "the registry target this process runs as (default: the hostname)", EnvVars: []string{"STADO_HOST"}},
			&ucli.DurationFlag{Name: "interval", Value: 15 * time.Second, Usage: "time between passes", EnvVars: []string{"STADO_INTERVAL"}},
			&ucli.DurationFlag{Name: "stale-after", Usage: "age after which readers distrust a beacon (default 3 × interval)"},
			&ucli.StringFlag{Name: "listen", Usage: "HTTP address (default: the directory's port for stado on this host, at the target's address)"},
			&ucli.IntFlag{Name: "passes", Usage: "stop after this many passes (0: run until SIGTERM)", Hidden: true},
		},
		Action: func(c *ucli.Context) error {
			return runHostRun(c.Context, env, hostRunOptions{
				Host: c.String("host"), Interval: c.Duration("interval"), StaleAfter: c.Duration("stale-after"),
				Listen: c.String("listen"), Passes: c.Int("passes"),
			})
		},
	}, false)
}

func runHostRun(ctx context.Context, env *Env, o hostRunOptions) error {
	if o.Host == "" {
		h, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("read hostname: %w", err)
		}
		o.Host = h
	}
	if !registry.ValidTargetName(o.Host) {
		return refuse("validation", "host name %q is not a valid target name", o.Host)
	}
	if o.Interval <= 0 {
		return usagef("--interval must be positive")
	}
	st, err := openStore(ctx, env)
	if err != nil {
		return err
	}
	defer st.Close()

	mgr, adminDirs, closeMgr, err := localManager(ctx, env)
	if err != nil {
		return err
	}
	defer closeMgr()
	contributors, stopContrib, err := hostContributors(ctx, env, st, o.Host, mgr)
	if err != nil {
		return err
	}
	defer stopContrib()

	hostname, _ := os.Hostname()
	cfg := beacon.Config{Interval: o.Interval, StaleAfter: o.StaleAfter}
	if strings.HasPrefix(env.StoreURL, "etcd://") {
		// A dead host's beacon expires by itself on etcd.
		cfg.TTL = o.StaleAfter
		if cfg.TTL <= 0 {
			cfg.TTL = 3 * o.Interval
		}
	}
	runner := &beacon.Runner{
		Host:         o.Host,
		Store:        st,
		Observer:     &beacon.UnitsObserver{Manager: mgr, AdminDirs: adminDirs},
		Contributors: contributors,
		Config:       cfg,
		Identity: beacon.Identity{
			Hostname: hostname, MachineID: readTrim("/etc/machine-id"), BootID: readTrim("/proc/sys/kernel/random/boot_id"),
			PID: os.Getpid(), Started: env.Now().UTC(),
		},
		Version: Version,
		Logger:  env.Logger.With("host", o.Host),
		Now:     env.Now,
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	listen := o.Listen
	if listen == "" {
		listen = defaultListen(ctx, st, o.Host)
	}
	var srv *http.Server
	if listen != "" {
		ln, err := net.Listen("tcp", listen)
		if err != nil {
			// The beacon is the host's voice: keep publishing and say why
			// the API is not served, rather than crash-loop on a port.
			env.Logger.Error("http listener", "addr", listen, "err", err)
			runner.Persist(beacon.Refusal{Code: "listen_failed", Subject: listen, Message: err.Error()})
		} else {
			srv = &http.Server{Handler: hostHandler(st, runner), ReadHeaderTimeout: 5 * time.Second}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
					env.Logger.Error("http server", "err", err)
				}
			}()
			env.Logger.Info("serving", "addr", ln.Addr().String())
		}
	}
	env.Logger.Info("host run", "host", o.Host, "interval", o.Interval, "store", etcdstore.Redact(env.StoreURL))
	if o.Passes > 0 {
		for i := 0; i < o.Passes && ctx.Err() == nil; i++ {
			if i > 0 {
				select {
				case <-ctx.Done():
				case <-time.After(o.Interval):
				}
			}
			if _, err := runner.RunPass(ctx); err != nil {
				env.Logger.Warn("beacon pass", "err", err)
			}
		}
	} else {
		_ = runner.Run(ctx)
	}
	if srv != nil {
		shut, cancelShut := context.WithTimeout(context.Background(), 2*time.Second)
		_ = srv.Shutdown(shut)
		cancelShut()
	}
	wg.Wait()
	env.Logger.Info("host run stopped", "host", o.Host)
	return nil
}

// localManager connects to this machine's init system.
func localManager(ctx context.Context, env *Env) (units.Manager, []string, func(), error) {
	home := env.Getenv("HOME")
	if runtime.GOOS == "darwin" {
		domain := "gui/" + strconv.Itoa(os.Getuid())
		dirs := []string{home + "/Library/LaunchAgents"}
		if os.Getuid() == 0 {
			domain = "system"
			dirs = []string{"/Library/LaunchDaemons"}
		}
		return units.NewLaunchd(units.ExecRunner{}, domain, home), dirs, func() {}, nil
	}
	m, err := units.NewSystemd(ctx, registry.ScopeSystem, home, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	return m, []string{"/etc/systemd/system"}, m.Close, nil
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// defaultListen is where this host's stado serves HTTP: the directory's
// port for it on this host, else the catalog's default port for the stado
// product, at the target's address. No stado declaration: no listener.
func defaultListen(ctx context.Context, st registry.Store, host string) string {
	doc, _, err := registry.Load(ctx, st)
	if err != nil {
		return ""
	}
	t, ok := doc.Target(host)
	if !ok {
		return ""
	}
	addr := t.SSH.Address
	if addr == "" {
		addr = t.Name
	}
	var self *registry.Service
	for i := range t.Services {
		if s := &t.Services[i]; s.Product == "stado" || s.Unit == "stado.service" || s.Unit == "com.wisent.stado" {
			self = s
		}
	}
	if self == nil {
		return ""
	}
	if d, ok := doc.DirectoryEntry(self.Name); ok && d.Host == host {
		return net.JoinHostPort(addr, strconv.Itoa(d.Port))
	}
	cat, err := catalog.Load(ctx, st)
	if err != nil {
		return ""
	}
	if p, ok := cat.Lookup("stado"); ok && p.Port > 0 {
		return net.JoinHostPort(addr, strconv.Itoa(p.Port))
	}
	return ""
}

// hostHandler serves /healthz and the release object API.
func hostHandler(st registry.Store, r *beacon.Runner) http.Handler {
	mux := http.NewServeMux()
	writeJSON := func(w http.ResponseWriter, code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"kind": "stado.healthz", "ok": true, "host": r.Host, "version": Version})
	})
	mux.HandleFunc("GET /api/release/object", func(w http.ResponseWriter, req *http.Request) {
		uri := req.URL.Query().Get("uri")
		name, ok := strings.CutPrefix(uri, "stado://releases/")
		if !ok || name == "" || registry.ValidateKey(registry.ReleasePrefix+name) != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"kind": "stado.release.object", "error": "bad_uri", "uri": uri, "message": "want uri=stado://releases/NAME"})
			return
		}
		obj, err := st.Get(req.Context(), registry.ReleasePrefix+name)
		switch {
		case errors.Is(err, registry.ErrNotFound):
			writeJSON(w, http.StatusNotFound, map[string]any{"kind": "stado.release.object", "error": "not_found", "uri": uri, "message": "no such release object"})
		case err != nil:
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"kind": "stado.release.object", "error": "store_unreadable", "uri": uri, "message": err.Error()})
		default:
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("X-Stado-Revision", strconv.FormatInt(obj.Revision, 10))
			_, _ = w.Write(obj.Value)
		}
	})
	return mux
}

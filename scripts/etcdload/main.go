// Command etcdload is the fleet of scripts/bench-etcd-load.sh (make bench,
// docs/bench.md): it simulates hosts that publish beacons to a store, each
// through its own beacon.Runner — the pass of `stado host run`, with a
// static init system of 20 active declared services — so what reaches the
// store is a real beacon document written by the host process's own code
// (registry read, identity check, publication with its lease). It is a
// bench tool, not part of stado. It imports beacon (the runner), registry
// (the fleet it pushes), store (the Store it wraps) and store/etcdstore
// (the etcd backend behind etcd:// URLs).
//
//	etcdload seed -store URL -hosts 1000
//	    push a registry of N targets × 20 services (loopback addresses on
//	    port 1, where nothing answers)
//	etcdload live -store URL -hosts 1000 -interval 15s -for 90s
//	    every host passes once per interval, the hosts spread evenly over
//	    it, for the given time; prints one JSON document
//	etcdload hour -store URL -hosts 1000 -passes 720 -max 150s
//	    the same passes compressed in time: pass after pass as fast as the
//	    store takes them, registry and beacon reads answered from memory
//	    (reads do not grow the store); stops at -max, saying how far it got
//
// Each simulated host decodes a registry of its own target alone (see
// hostView); live, the store still serves it the whole registry.
//
// The simulated hosts share -clients store clients (a real host has one
// each): one process holding a thousand etcd clients would measure this
// machine, not the store.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
	_ "github.com/wisent/stado/store/etcdstore" // etcd:// URLs
)

const servicesPerHost = 20

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: etcdload seed|live|hour -store URL [flags]")
		os.Exit(2)
	}
	mode := os.Args[1]
	fs := flag.NewFlagSet(mode, flag.ExitOnError)
	url := fs.String("store", "", "store URL")
	hosts := fs.Int("hosts", 1000, "simulated hosts")
	interval := fs.Duration("interval", 15*time.Second, "pass interval (the host process's default)")
	dur := fs.Duration("for", 90*time.Second, "live: how long the passes run")
	passes := fs.Int("passes", 720, "hour: passes per host (720 × 5 s, or 240 × 15 s, is an hour)")
	maxDur := fs.Duration("max", 150*time.Second, "hour: stop after this long")
	clients := fs.Int("clients", 8, "store clients the hosts share")
	workers := fs.Int("workers", 64, "passes running at once")
	_ = fs.Parse(os.Args[2:])
	if *url == "" || *hosts < 1 || *clients < 1 || *workers < 1 {
		fmt.Fprintln(os.Stderr, "etcdload: -store, and positive -hosts, -clients, -workers")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	switch mode {
	case "seed":
		err = seed(ctx, *url, *hosts)
	case "live":
		err = run(ctx, *url, *hosts, *clients, *workers, schedule{interval: *interval, until: *dur})
	case "hour":
		err = run(ctx, *url, *hosts, *clients, *workers, schedule{compressed: true, passes: *passes, until: *maxDur, interval: *interval})
	default:
		err = fmt.Errorf("unknown mode %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdload:", err)
		os.Exit(1)
	}
}

func hostName(i int) string { return fmt.Sprintf("host%05d", i+1) }

// fleet is n targets × 20 services at loopback addresses 127.2.x.y, port 1.
func fleet(n int) *registry.Document {
	d := &registry.Document{Version: 1}
	for i := 0; i < n; i++ {
		t := registry.Target{
			Name: hostName(i),
			SSH:  registry.SSH{Address: fmt.Sprintf("127.2.%d.%d", i/250, i%250+1), Port: 1},
			OS:   registry.OSLinux,
		}
		for j := 0; j < servicesPerHost; j++ {
			name := fmt.Sprintf("svc%02d", j)
			t.Services = append(t.Services, registry.Service{
				Name: name, Unit: name + ".service", Program: "/usr/local/bin/" + name,
				Args: []string{"serve", "--listen", fmt.Sprintf("127.0.0.1:%d", 9000+j)},
			})
		}
		d.Targets = append(d.Targets, t)
	}
	return d
}

func seed(ctx context.Context, url string, n int) error {
	st, err := store.Open(ctx, url)
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := registry.Push(ctx, st, fleet(n), 0, "etcdload fleet"); err != nil {
		return err
	}
	obj, err := st.Get(ctx, store.RegistryKey)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]int{"registry_bytes": len(obj.Value)})
}

// activeInit is an init system where every unit runs from the file its
// declaration renders: each report carries the comparison a host process
// publishes (beacon.UnitFiles), the installed bytes matching, so the
// beacons are what a fleet of current host processes publishes and a
// report cycle can stand on them.
type activeInit struct{ pid int }

func (o activeInit) Observe(_ context.Context, units []string) ([]beacon.UnitReport, error) {
	out := make([]beacon.UnitReport, len(units))
	for i, u := range units {
		out[i] = beacon.UnitReport{Unit: u, State: beacon.StateActive, Sub: "running", PID: o.pid + i, Starts: 1,
			File: &beacon.FileCheck{Path: "/etc/systemd/system/" + u}}
	}
	return out, nil
}
func (activeInit) Loaded(context.Context, map[string]bool) ([]string, error) { return nil, nil }
func (activeInit) LastLine(context.Context, string) (string, error)          { return "", nil }

// hostView is the store as one simulated host sees it. Its registry reads
// answer a document of this host's target alone, at the registry's
// revision: a thousand decoded copies of the whole fleet's document would
// measure this process, not the store. Live, every read still goes to the
// store (the whole registry is read and dropped), so the store serves
// what a real host asks; compressed (hour), reads are answered from
// memory, since they do not grow the store.
type hostView struct {
	store.Store
	registry store.Object // this host's one-target registry
	live     bool
}

func (h hostView) Get(ctx context.Context, key string) (store.Object, error) {
	switch {
	case h.live && key == store.RegistryKey:
		obj, err := h.Store.Get(ctx, key)
		if err != nil {
			return obj, err
		}
		slim := h.registry
		slim.Revision = obj.Revision
		return slim, nil
	case h.live:
		return h.Store.Get(ctx, key)
	case key == store.RegistryKey:
		return h.registry, nil
	}
	return store.Object{}, fmt.Errorf("%s: %w", key, store.ErrNotFound)
}

// Revision makes hostView a store.RevisionReader, as the stores are.
func (h hostView) Revision(ctx context.Context, key string) (int64, error) {
	if h.live {
		return store.Revision(ctx, h.Store, key)
	}
	o, err := h.Get(ctx, key)
	return o.Revision, err
}

// slimRegistries are the one-target registry objects of the first n
// targets of the stored registry obj.
func slimRegistries(obj store.Object, n int) ([]store.Object, error) {
	doc, _, err := registry.DecodeObject(obj)
	if err != nil {
		return nil, err
	}
	if len(doc.Targets) < n {
		return nil, fmt.Errorf("the registry declares %d targets, fewer than -hosts %d (etcdload seed)", len(doc.Targets), n)
	}
	out := make([]store.Object, n)
	for i := range out {
		env := struct {
			Meta     store.Meta         `json:"meta"`
			Document *registry.Document `json:"document"`
		}{Document: &registry.Document{Version: doc.Version, Targets: doc.Targets[i : i+1]}}
		data, err := json.Marshal(env)
		if err != nil {
			return nil, err
		}
		out[i] = store.Object{Key: store.RegistryKey, Value: data, Revision: obj.Revision}
		if _, _, err := registry.DecodeObject(out[i]); err != nil {
			return nil, fmt.Errorf("a one-target registry: %w", err)
		}
	}
	return out, nil
}

type schedule struct {
	compressed bool
	interval   time.Duration
	until      time.Duration
	passes     int
}

// result is what live and hour print.
type result struct {
	Mode          string  `json:"mode"`
	Hosts         int     `json:"hosts"`
	Clients       int     `json:"clients"`
	Seconds       float64 `json:"seconds"`
	Passes        int64   `json:"passes"`
	PassesPerHost float64 `json:"passes_per_host"`
	Failed        int64   `json:"failed"`
	FirstError    string  `json:"first_error,omitempty"`
	Late          int64   `json:"late"` // live: passes that started over a second after they were due
	BeaconBytes   int64   `json:"beacon_bytes"`
	PassP50Ms     float64 `json:"pass_p50_ms"`
	PassP99Ms     float64 `json:"pass_p99_ms"`
	Complete      bool    `json:"complete"` // hour: every pass of every host ran within -max
}

func run(ctx context.Context, url string, n, clients, workers int, s schedule) error {
	stores := make([]store.Store, clients)
	for i := range stores {
		st, err := store.Open(ctx, url)
		if err != nil {
			return err
		}
		defer st.Close()
		stores[i] = st
	}
	obj, err := stores[0].Get(ctx, store.RegistryKey)
	if err != nil {
		return fmt.Errorf("read the registry (etcdload seed first): %w", err)
	}
	slim, err := slimRegistries(obj, n)
	if err != nil {
		return err
	}
	started := time.Now()
	// passes still queued or running an interval after the end are cut
	// short: a store that cannot keep up ends the run instead of holding it
	ctx, cancel := context.WithDeadline(ctx, started.Add(s.until+s.interval))
	defer cancel()
	runners := make([]*beacon.Runner, n)
	for i := range runners {
		host := hostName(i)
		runners[i] = &beacon.Runner{
			Host: host, Store: hostView{Store: stores[i%clients], registry: slim[i], live: !s.compressed}, Observer: activeInit{pid: 1000 + i},
			Config: beacon.ConfigFor(url, s.interval, 0), Version: "etcdload",
			Identity: beacon.Identity{Hostname: host, MachineID: fmt.Sprintf("%032x", i+1), PID: 4242, Started: started},
		}
	}
	type job struct {
		host int
		due  time.Time
	}
	jobs := make(chan job, workers)
	var passes, failed, late, beaconBytes atomic.Int64
	var firstErr sync.Once
	res := result{Mode: "live", Hosts: n, Clients: clients}
	if s.compressed {
		res.Mode = "hour"
	}
	var mu sync.Mutex
	var took []time.Duration
	// one runner passes once at a time: host i's next pass waits for its last
	busy := make([]sync.Mutex, n)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if !s.compressed && time.Since(j.due) > time.Second {
					late.Add(1)
				}
				busy[j.host].Lock()
				t0 := time.Now()
				b, err := runners[j.host].RunPass(ctx)
				d := time.Since(t0)
				busy[j.host].Unlock()
				passes.Add(1)
				if err != nil {
					failed.Add(1)
					firstErr.Do(func() { res.FirstError = err.Error() })
				} else if j.host == 0 {
					if data, err := json.Marshal(b); err == nil {
						beaconBytes.Store(int64(len(data)))
					}
				}
				mu.Lock()
				took = append(took, d)
				mu.Unlock()
			}
		}()
	}
	deadline := started.Add(s.until)
	res.Complete = true
dispatch:
	for j := 0; ; j++ {
		host, pass := j%n, j/n
		var due time.Time
		if s.compressed {
			if pass >= s.passes {
				break
			}
			due = time.Now()
		} else {
			due = started.Add(time.Duration(pass)*s.interval + time.Duration(host)*s.interval/time.Duration(n))
			if wait := time.Until(due); wait > 0 {
				select {
				case <-ctx.Done():
				case <-time.After(wait):
				}
			}
		}
		if ctx.Err() != nil || !due.Before(deadline) {
			if s.compressed {
				res.Complete = false
			}
			break dispatch
		}
		jobs <- job{host: host, due: due}
	}
	close(jobs)
	wg.Wait()
	res.Seconds = time.Since(started).Seconds()
	res.Passes, res.Failed, res.Late, res.BeaconBytes = passes.Load(), failed.Load(), late.Load(), beaconBytes.Load()
	res.PassesPerHost = float64(res.Passes) / float64(n)
	sort.Slice(took, func(a, b int) bool { return took[a] < took[b] })
	if len(took) > 0 {
		res.PassP50Ms = float64(took[len(took)/2].Microseconds()) / 1000
		res.PassP99Ms = float64(took[len(took)*99/100].Microseconds()) / 1000
	}
	if ctx.Err() != nil && !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		return errors.New("interrupted")
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

package etcdstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
	etcdtest "github.com/wisent/stado/tests/etcd"
)

// Benchmarks measure; no test asserts a duration. scripts/bench-etcd.sh
// runs them and the whole-process figures of stado service list.

// Environment of the seeding child: the test binary run with these set
// writes a synthetic fleet of SEED_HOSTS hosts × 20 services (registry and
// one beacon per host) into the store at SEED_URL and exits. The bench
// script uses it to prepare stores for stado service list.
const (
	seedURLEnv   = "STADO_ETCDSTORE_SEED_URL"
	seedHostsEnv = "STADO_ETCDSTORE_SEED_HOSTS"
)

const servicesPerHost = 20

// syntheticFleet is n Linux targets with 20 services each, declared as a
// fleet writes them: name, unit, program, three args and a product.
func syntheticFleet(n int) *registry.Document {
	d := &registry.Document{Version: 1}
	for i := 0; i < n; i++ {
		t := registry.Target{
			Name: fmt.Sprintf("host%05d", i+1),
			SSH:  registry.SSH{Address: fmt.Sprintf("10.%d.%d.%d", i/65536, i/256%256, i%256)},
			OS:   registry.OSLinux,
		}
		for j := 0; j < servicesPerHost; j++ {
			name := fmt.Sprintf("svc%02d", j)
			t.Services = append(t.Services, registry.Service{
				Name:    name,
				Unit:    name + ".service",
				Program: "/usr/local/bin/" + name,
				Args:    []string{"serve", "--listen", fmt.Sprintf("127.0.0.1:%d", 9000+j)},
				Product: name,
			})
		}
		d.Targets = append(d.Targets, t)
	}
	return d
}

// syntheticBeacon is what a healthy host with 20 declared services
// publishes (docs/beacon.md): identity, pass data, one report per service
// with pid and start count, an answering block for a quarter of them (a
// finished probe with its answer), two undeclared units.
func syntheticBeacon(host string, pass int64, at time.Time) *beacon.Beacon {
	started := at.Add(-72 * time.Hour)
	b := &beacon.Beacon{
		Kind:    beacon.Kind,
		Version: beacon.FormatVersion,
		Host:    host,
		Identity: beacon.Identity{
			Hostname:  host + ".prod.example.net",
			MachineID: "5c8f6e0b4a3d4e2f9b1c7d6a5e4f3b2a",
			BootID:    "0b6f2a9e-4c1d-4e8b-9a7f-3d2c1b0a9f8e",
			PID:       41523,
			Started:   started,
		},
		Pass:              pass,
		At:                at,
		IntervalSeconds:   15,
		StaleAfterSeconds: 45,
		StadoVersion:      "0.1.0",
	}
	for j := 0; j < servicesPerHost; j++ {
		name := fmt.Sprintf("svc%02d", j)
		r := beacon.UnitReport{Service: name, Unit: name + ".service", State: beacon.StateActive, Sub: "running", PID: 2000 + j, Starts: 1}
		if j%4 == 0 {
			r.Answering = &beacon.Answering{
				State: beacon.AnswerFinished,
				Question: &beacon.Question{Method: "GET", Path: "/healthz", Endpoint: fmt.Sprintf("http://127.0.0.1:%d", 9000+j),
					Repair: []string{"restart"}},
				Finished: &beacon.Finished{Answered: &beacon.Answered{Status: 200, Successful: true, ElapsedMS: 3, At: at.Add(-2 * time.Second)}},
			}
		}
		b.Units = append(b.Units, r)
	}
	b.Undeclared = []beacon.UnitReport{
		{Unit: "node-exporter.service", State: beacon.StateActive, Sub: "running", PID: 911, Starts: 1},
		{Unit: "backup-agent.service", State: beacon.StateInactive, Sub: "dead"},
	}
	return b
}

// seedFleet writes the registry and one beacon per host of an n-host
// fleet into st, with 16 writers for the beacons. Beacons carry a one-hour
// TTL so that a benchmark reads them all.
func seedFleet(ctx context.Context, st store.Store, n int) error {
	if _, err := registry.Push(ctx, st, syntheticFleet(n), 0, "synthetic fleet"); err != nil {
		return err
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	at := time.Now().UTC()
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				host := fmt.Sprintf("host%05d", i)
				data, err := json.Marshal(syntheticBeacon(host, 1, at))
				if err == nil {
					_, err = st.Put(ctx, store.BeaconPrefix+host, data, store.PutOptions{TTL: time.Hour})
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// runSeedChild is TestMain's seeding mode.
func runSeedChild(url, hosts string) int {
	n, err := strconv.Atoi(hosts)
	if err != nil || n < 1 {
		fmt.Fprintf(os.Stderr, "seed: %s=%q: want a positive count\n", seedHostsEnv, hosts)
		return 2
	}
	ctx := context.Background()
	st, err := store.Open(ctx, url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "seed:", err)
		return 1
	}
	defer st.Close()
	if err := seedFleet(ctx, st, n); err != nil {
		fmt.Fprintln(os.Stderr, "seed:", err)
		return 1
	}
	return 0
}

func TestSyntheticFleetAndBeaconAreValid(t *testing.T) {
	if err := registry.Validate(syntheticFleet(3)); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(syntheticBeacon("host00001", 1, time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	var back beacon.Beacon
	if err := json.Unmarshal(data, &back); err != nil || len(back.Units) != servicesPerHost || back.Kind != beacon.Kind {
		t.Fatalf("beacon round trip: %v, %d units", err, len(back.Units))
	}
}

// BenchmarkBeaconPublish measures one beacon publish as the host process
// does it on etcd: a put with the staleness bound as TTL. The cached lease
// costs one keep-alive and one put per beacon; a new lease per put costs a
// grant and a put, and the cluster later revokes every superseded lease.
// bytes/op is the realistic 20-unit beacon.
func BenchmarkBeaconPublish(b *testing.B) {
	c := etcdtest.Start(b, 1)
	data, err := json.Marshal(syntheticBeacon("host00001", 1, time.Now().UTC()))
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("beacon of %d units: %d bytes of JSON", servicesPerHost, len(data))
	for _, perPut := range []bool{false, true} {
		name := "LeasePerKey"
		if perPut {
			name = "LeasePerPut"
		}
		b.Run(name, func(b *testing.B) {
			st := openFresh(b, c)
			st.leasePerPut = perPut
			ctx := context.Background()
			before := leaseCount(b, st)
			b.SetBytes(int64(len(data)))
			hosts := 1000
			i := 0
			for b.Loop() {
				key := store.BeaconPrefix + fmt.Sprintf("host%05d", i%hosts)
				if _, err := st.Put(ctx, key, data, store.PutOptions{TTL: 45 * time.Second}); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(leaseCount(b, st)-before), "leases-held")
		})
	}
}

// BenchmarkRegistryUpdate8Writers measures registry compare-and-swap
// commits per second with 8 concurrent writers (registry.Update: read,
// change, compare-and-swap, history entry; conflicts retried with
// back-off) on a small document, on etcd and on the file store.
func BenchmarkRegistryUpdate8Writers(b *testing.B) {
	c := etcdtest.Start(b, 1)
	for _, backend := range []string{"etcd", "file"} {
		b.Run(backend, func(b *testing.B) {
			var st store.Store
			if backend == "etcd" {
				st = openFresh(b, c)
			} else {
				fs, err := store.OpenFileStore(b.TempDir())
				if err != nil {
					b.Fatal(err)
				}
				st = fs
			}
			benchUpdates(b, st, 8)
		})
	}
}

func benchUpdates(b *testing.B, st store.Store, writers int) {
	ctx := context.Background()
	var next, conflicts atomic.Int64
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				calls := 0
				if _, _, err := registry.Update(ctx, st, "bench", func(d *registry.Document) error {
					calls++
					return incrementCounter(d)
				}); err != nil {
					b.Error(err)
					return
				}
				conflicts.Add(int64(calls - 1))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "commits/s")
	b.ReportMetric(float64(conflicts.Load())/float64(b.N), "conflicts/commit")
}

// BenchmarkReadView1000Hosts is the read half's input in-process: the
// registry of 1,000 hosts × 20 services and their 1,000 beacons, read and
// joined by beacon.LoadView, on etcd and on the file store. The
// whole-process figures of stado service list are the bench script's.
func BenchmarkReadView1000Hosts(b *testing.B) {
	c := etcdtest.Start(b, 1)
	for _, backend := range []string{"etcd", "file"} {
		b.Run(backend, func(b *testing.B) {
			var st store.Store
			if backend == "etcd" {
				st = openFresh(b, c)
			} else {
				fs, err := store.OpenFileStore(b.TempDir())
				if err != nil {
					b.Fatal(err)
				}
				st = fs
			}
			ctx := context.Background()
			if err := seedFleet(ctx, st, 1000); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				v, err := beacon.LoadView(ctx, st, time.Now(), time.Hour)
				if err != nil {
					b.Fatal(err)
				}
				if len(v.Beacons) != 1000 || len(v.Rows("")) != 1000*servicesPerHost {
					b.Fatalf("view: %d beacons, %d rows", len(v.Beacons), len(v.Rows("")))
				}
			}
		})
	}
}

// TestBeaconOfAStoppedHostExpiresAndItsRowsReadUnknown: three hosts
// publish beacons with a 2 s TTL; host00001 and host00003 keep publishing,
// host00002 stops. Once its lease runs out its key is gone from etcd, and
// the read half shows its rows unknown ("no beacon") while the others stay
// active; the host is still declared.
func TestBeaconOfAStoppedHostExpiresAndItsRowsReadUnknown(t *testing.T) {
	c := etcdtest.Start(t, 1)
	st := openFresh(t, c)
	ctx := context.Background()
	if _, err := registry.Push(ctx, st, syntheticFleet(3), 0, "three hosts"); err != nil {
		t.Fatal(err)
	}
	publish := func(host string, pass int64) {
		t.Helper()
		data, err := json.Marshal(syntheticBeacon(host, pass, time.Now().UTC()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Put(ctx, store.BeaconPrefix+host, data, store.PutOptions{TTL: 2 * time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range []string{"host00001", "host00002", "host00003"} {
		publish(h, 1)
	}
	deadline := time.Now().Add(30 * time.Second)
	for pass := int64(2); ; pass++ {
		publish("host00001", pass)
		publish("host00003", pass)
		if _, err := st.Get(ctx, store.BeaconPrefix+"host00002"); errors.Is(err, store.ErrNotFound) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("beacon with a 2s lease still there after 30s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	v, err := beacon.LoadView(ctx, st, time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]map[string]int{}
	for _, r := range v.Rows("") {
		if states[r.Host] == nil {
			states[r.Host] = map[string]int{}
		}
		states[r.Host][r.State]++
		if r.Host == "host00002" && r.Beacon.Present {
			t.Fatalf("row of the stopped host says its beacon is present: %+v", r.Beacon)
		}
	}
	want := map[string]map[string]int{
		"host00001": {beacon.StateActive: servicesPerHost},
		"host00002": {beacon.StateUnknown: servicesPerHost},
		"host00003": {beacon.StateActive: servicesPerHost},
	}
	if !reflect.DeepEqual(states, want) {
		t.Fatalf("row states by host = %v, want %v", states, want)
	}
}

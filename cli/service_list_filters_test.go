package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// filterFleet declares web on h1 and h2 and db on h1 and h3: h1 reports web
// active and db failed, h2 web active, and h3's stored beacon is not a
// beacon at all.
func filterFleet(t *testing.T) (string, time.Time) {
	t.Helper()
	dir := t.TempDir()
	st, err := store.OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc := func(name string) registry.Service {
		return registry.Service{Name: name, Unit: name + ".service", Program: "/usr/bin/" + name}
	}
	doc := &registry.Document{Version: 1, Targets: []registry.Target{
		{Name: "h1", SSH: registry.SSH{Address: "127.0.1.1"}, OS: "linux", Services: []registry.Service{svc("web"), svc("db")}},
		{Name: "h2", SSH: registry.SSH{Address: "127.0.1.2"}, OS: "linux", Services: []registry.Service{svc("web")}},
		{Name: "h3", SSH: registry.SSH{Address: "127.0.1.3"}, OS: "linux", Services: []registry.Service{svc("db")}},
	}}
	ctx := context.Background()
	if _, err := registry.Push(ctx, st, doc, 0, "test"); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	put := func(host string, units ...beacon.UnitReport) {
		b := beacon.Beacon{Kind: beacon.Kind, Version: beacon.FormatVersion, Host: host, Pass: 1, At: now, IntervalSeconds: 15, StaleAfterSeconds: 45, Units: units}
		data, _ := json.Marshal(b)
		if _, err := st.Put(ctx, store.BeaconPrefix+host, data, store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	put("h1", beacon.UnitReport{Service: "web", Unit: "web.service", State: beacon.StateActive, PID: 10},
		beacon.UnitReport{Service: "db", Unit: "db.service", State: beacon.StateFailed, LastExit: new(int)})
	put("h2", beacon.UnitReport{Service: "web", Unit: "web.service", State: beacon.StateActive, PID: 11})
	if _, err := st.Put(ctx, store.BeaconPrefix+"h3", []byte("{not a beacon"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	return dir, now.Add(time.Second)
}

// service list --service and --problems keep the rows they name, in the
// order of the registry; a service nothing declares is refused.
func TestServiceListFiltersByServiceAndProblems(t *testing.T) {
	dir, now := filterFleet(t)
	for _, tc := range []struct {
		name string
		args []string
		want []string // host/service of each row
	}{
		// every declaration
		{"all", nil, []string{"h1/web", "h1/db", "h2/web", "h3/db"}},
		// one service on every host declaring it
		{"service", []string{"--service", "web"}, []string{"h1/web", "h2/web"}},
		// by its unit name too
		{"unit", []string{"--service", "db.service"}, []string{"h1/db", "h3/db"}},
		// what needs attention: failed, and unknown behind an unreadable beacon
		{"problems", []string{"--problems"}, []string{"h1/db", "h3/db"}},
		// both filters, and a host
		{"service, problems and host", []string{"--service", "db", "--problems", "--host", "h1"}, []string{"h1/db"}},
		// a healthy service has no problems: an empty list, not an error
		{"nothing wrong", []string{"--service", "web", "--problems"}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runReadCLI(t, dir, now, append([]string{"service", "list", "--json"}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var doc struct {
				Services []struct{ Host, Service string } `json:"services"`
			}
			decodeDoc(t, out, "stado.service.list", &doc)
			got := []string{}
			for _, r := range doc.Services {
				got = append(got, r.Host+"/"+r.Service)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("rows %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("rows %v, want %v", got, tc.want)
				}
			}
		})
	}
	if code, _, errOut := runReadCLI(t, dir, now, "service", "list", "--service", "nosuch"); code != ExitRefused {
		t.Errorf("a service nothing declares: exit %d %s", code, errOut)
	}
}

// The read commands remember the registry they validated in the user's
// cache directory, one 0600 file per store.
func TestReadCommandsKeepTheValidatedRegistryInTheUserCacheDir(t *testing.T) {
	dir, now := filterFleet(t)
	if code, _, errOut := runReadCLI(t, dir, now, "service", "list"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	files, _ := filepath.Glob(filepath.Join(dir, ".cache", "stado", "registry-*"))
	if len(files) != 1 {
		t.Fatalf("cache files %v", files)
	}
	if fi, err := os.Stat(files[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("cache file: %v %v", fi, err)
	}
	// a second read uses it and reads the same rows
	code, out, _ := runReadCLI(t, dir, now, "service", "list", "--json")
	var doc beacon.ListResult
	if decodeDoc(t, out, "stado.service.list", &doc); code != 0 || len(doc.Services) != 4 {
		t.Errorf("second read: exit %d, %d rows", code, len(doc.Services))
	}
}

package cli

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// sourcesFleet declares stado and files on h1; h1's fresh beacon also sees
// brama.service (a catalog product) and other.service loaded undeclared.
func sourcesFleet(t *testing.T) (string, time.Time) {
	t.Helper()
	dir := t.TempDir()
	st, err := store.OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	doc := &registry.Document{Version: 1, Targets: []registry.Target{{Name: "h1", OS: registry.OSLinux, SSH: registry.SSH{Address: "127.0.1.1"},
		Services: []registry.Service{
			{Name: "stado", Unit: "stado.service", Program: "/usr/local/bin/stado", Args: []string{"host", "run"}, Product: "stado"},
			{Name: "files", Unit: "files.service", Program: "/usr/bin/python3"},
		}}}}
	ctx := context.Background()
	if _, err := registry.Push(ctx, st, doc, 0, "test"); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	b := beacon.Beacon{Kind: beacon.Kind, Version: beacon.FormatVersion, Host: "h1", Pass: 2, At: now, IntervalSeconds: 15, StaleAfterSeconds: 45,
		Units: []beacon.UnitReport{
			{Service: "stado", Unit: "stado.service", State: beacon.StateActive, PID: 10},
			{Service: "files", Unit: "files.service", State: beacon.StateActive, PID: 11},
		},
		Undeclared: []beacon.UnitReport{
			{Unit: "brama.service", State: beacon.StateActive, PID: 12},
			{Unit: "other.service", State: beacon.StateActive, PID: 13},
		}}
	data, _ := json.Marshal(b)
	if _, err := st.Put(ctx, store.BeaconPrefix+"h1", data, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	return dir, now.Add(time.Second)
}

// service list and service status say each service's source, in text and
// --json: recovery for the host process (declared or not), registry for
// other declarations, product for an undeclared unit a product names.
func TestListAndStatusShowEachServicesSource(t *testing.T) {
	dir, now := sourcesFleet(t)
	code, out, errOut := runReadCLI(t, dir, now, "service", "list")
	if code != 0 || !strings.Contains(out, "SOURCE") {
		t.Fatalf("list: exit %d %s\n%s", code, errOut, out)
	}
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.Contains(line, "stado.service") && !strings.Contains(line, "recovery"),
			strings.Contains(line, "files.service") && !strings.Contains(line, "registry"):
			t.Errorf("list line without its source: %q", line)
		}
	}
	var list beacon.ListResult
	code, out, _ = runReadCLI(t, dir, now, "service", "list", "--json")
	decodeDoc(t, out, "stado.service.list", &list)
	got := map[string]string{}
	for _, r := range list.Services {
		got[r.Unit] = r.Source
	}
	if code != 0 || got["stado.service"] != "recovery" || got["files.service"] != "registry" {
		t.Errorf("list --json sources %v", got)
	}
	var undeclared beacon.ListResult
	code, out, _ = runReadCLI(t, dir, now, "service", "list", "--undeclared", "--json")
	decodeDoc(t, out, "stado.service.undeclared", &undeclared)
	got = map[string]string{}
	for _, r := range undeclared.Services {
		got[r.Unit] = r.Source
	}
	if code != 0 || got["brama.service"] != "product" || got["other.service"] != "" {
		t.Errorf("undeclared --json sources %v", got)
	}

	// stado's name and both unit identities read the same declaration
	for _, name := range []string{"stado", "stado.service", "com.wisent.stado"} {
		var st beacon.StatusResult
		code, out, errOut = runReadCLI(t, dir, now, "service", "status", name, "--json")
		if decodeDoc(t, out, "stado.service.status", &st); code != 0 || len(st.Hosts) != 1 || st.Hosts[0].Service != "stado" || st.Hosts[0].Source != "recovery" {
			t.Errorf("status %s: exit %d %s %+v", name, code, errOut, st.Hosts)
		}
	}
	code, out, _ = runReadCLI(t, dir, now, "service", "status", "com.wisent.stado")
	if code != 0 || !strings.Contains(out, "source: recovery") {
		t.Errorf("status text: exit %d\n%s", code, out)
	}
	// an undeclared product is addressable by its name, source product
	var st beacon.StatusResult
	code, out, _ = runReadCLI(t, dir, now, "service", "status", "brama", "--json")
	if decodeDoc(t, out, "stado.service.status", &st); code != 0 || len(st.Hosts) != 1 || st.Hosts[0].Unit != "brama.service" || st.Hosts[0].Source != "product" {
		t.Errorf("status brama: exit %d %+v", code, st.Hosts)
	}
	// an undeclared unit no product names is still not a managed service
	if code, _, _ = runReadCLI(t, dir, now, "service", "status", "other.service"); code != ExitRefused {
		t.Errorf("status other.service: exit %d, want refused", code)
	}
}

// TestUndeclaredListNamesStaleHostsInsteadOfAnEmptyTable: when every beacon is
// stale, `service list --undeclared` says that nothing could be listed and
// how many hosts are stale (text and --json), and its table never has a
// bare "-" header when beacons are fresh.
func TestUndeclaredListNamesStaleHostsInsteadOfAnEmptyTable(t *testing.T) {
	dir, now := sourcesFleet(t)
	code, out, errOut := runReadCLI(t, dir, now, "service", "list", "--undeclared")
	header := strings.Fields(strings.SplitN(out, "\n", 2)[0])
	if code != 0 || slices.Contains(header, "-") || slices.Contains(header, "SERVICE") || !strings.Contains(out, "other.service") {
		t.Fatalf("fresh: exit %d %s\n%s", code, errOut, out)
	}
	late := now.Add(time.Hour) // h1's beacon is long stale
	code, out, errOut = runReadCLI(t, dir, late, "service", "list", "--undeclared")
	if code != 0 || !strings.Contains(out, "1 host(s) have no fresh beacon (h1)") || strings.Contains(out, "HOST") {
		t.Fatalf("stale: exit %d %s\n%s", code, errOut, out)
	}
	var res beacon.ListResult
	code, out, _ = runReadCLI(t, dir, late, "service", "list", "--undeclared", "--json")
	decodeDoc(t, out, "stado.service.undeclared", &res)
	if code != 0 || len(res.Services) != 0 || !slices.Equal(res.StaleHosts, []string{"h1"}) {
		t.Fatalf("stale --json: exit %d %+v", code, res)
	}
}

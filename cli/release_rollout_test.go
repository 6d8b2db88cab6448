package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/release"
	"github.com/wisent/stado/store"
)

// release version show without --host reads the beacons only: a host's
// release images come out of its beacon's releases block, a host without a
// beacon prints nothing it could not know, and no host is dialed (the
// fixture's hosts listen nowhere).
func TestReleaseVersionShowReadsTheFleetFromBeacons(t *testing.T) {
	dir := writeStore(t, fixtureDoc)
	st, err := store.OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	b := beacon.Beacon{Kind: beacon.Kind, Version: beacon.FormatVersion, Host: "host1", At: time.Now().UTC(), IntervalSeconds: 15, StaleAfterSeconds: 45,
		Releases: &beacon.Releases{State: beacon.ReleasesRead, Products: []beacon.ProductRelease{{Product: "brama",
			Active: &beacon.ReleaseImage{Version: "1.4.3", SHA256: "aa"}, Backup: &beacon.ReleaseImage{Version: "1.4.2", SHA256: "bb"}}}}}
	data, _ := json.Marshal(b)
	if _, err := st.Put(context.Background(), store.BeaconPrefix+"host1", data, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	code, out, errOut := runRegistryCLI(t, dir, "release", "version", "show", "--json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Kind     string `json:"kind"`
		Releases []struct {
			Host, Product, Status string
			Active                *beacon.ReleaseImage
		} `json:"releases"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Kind != "stado.release.version.show" || len(doc.Releases) != 1 || doc.Releases[0].Host != "host1" || doc.Releases[0].Active.Version != "1.4.3" {
		t.Fatalf("%s", out)
	}
	code, out, _ = runRegistryCLI(t, dir, "release", "version", "show")
	if code != ExitOK || !strings.Contains(out, "1.4.3") || !strings.Contains(out, "1.4.2") {
		t.Fatalf("text: exit %d\n%s", code, out)
	}
}

// converge needs its hosts named: --host or --all, not both, not neither.
func TestReleaseVersionConvergeNeedsHostOrAll(t *testing.T) {
	dir := writeStore(t, fixtureDoc)
	for _, args := range [][]string{{}, {"--all", "--host", "host1"}} {
		code, _, errOut := runRegistryCLI(t, dir, append([]string{"release", "version", "converge"}, args...)...)
		if code != ExitUsage || !strings.Contains(errOut, "--host H or --all") {
			t.Errorf("%v: exit %d: %s", args, code, errOut)
		}
	}
}

// host bootstrap without --version takes the registry's declared stado
// version for the host; with none declared it is a usage error naming the
// flag, before any connection.
func TestHostBootstrapWithoutAVersionNeedsOneDeclared(t *testing.T) {
	dir := writeStore(t, fixtureDoc)
	pub, _, err := release.GenerateKey(t.TempDir(), "k", "")
	if err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runRegistryCLI(t, dir, "host", "bootstrap", "host1", "--key", pub)
	if code != ExitUsage || !strings.Contains(errOut, "--version") {
		t.Fatalf("exit %d, want usage naming --version: %s", code, errOut)
	}
}

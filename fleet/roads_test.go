package fleet_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const mod = "github.com/wisent/stado/"

// importers lists, for each package go list reads from patterns (with
// -deps, their dependencies too), the module's packages it imports,
// without the module prefix. Test files are not read: the rules are about
// what ships.
func importers(t *testing.T, deps bool, patterns ...string) map[string][]string {
	t.Helper()
	args := []string{"list", "-f", `{{.ImportPath}} {{join .Imports " "}}`}
	if deps {
		args = append(args, "-deps")
	}
	out, err := exec.Command("go", append(args, patterns...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	pkgs := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], mod) {
			continue
		}
		var imps []string
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, mod) {
				imps = append(imps, strings.TrimPrefix(imp, mod))
			}
		}
		pkgs[strings.TrimPrefix(f[0], mod)] = imps
	}
	return pkgs
}

// One road to a host: the autonomy cycle and the desktop page act on hosts
// by calling fleet, never channel, channel/local or repair themselves, and
// of everything they link only fleet (and channel's own packages) imports
// channel.
func TestAutonomyAndDesktopReachHostsOnlyThroughFleet(t *testing.T) {
	for _, top := range []string{"autonomy", "desktop"} {
		pkgs := importers(t, true, mod+top)
		for _, bad := range []string{"channel", "channel/local", "repair"} {
			if slices.Contains(pkgs[top], bad) {
				t.Errorf("%s imports %s", top, bad)
			}
		}
		for pkg, imps := range pkgs {
			if slices.Contains(imps, "channel") && pkg != "fleet" && !strings.HasPrefix(pkg, "channel/") {
				t.Errorf("%s links %s, which imports channel: only fleet may", top, pkg)
			}
			if pkg == "repair" {
				t.Errorf("%s links repair", top)
			}
		}
	}
}

// Alerts live in package alert: nothing imports repair to alert. repair is
// wired only by cli (`stado repair`, `stado host run`); the leaves
// register and alert import no package that talks to hosts.
func TestNothingButCLIImportsRepairAndTheLeavesStayLeaves(t *testing.T) {
	pkgs := importers(t, false, mod+"...")
	for pkg, imps := range pkgs {
		if slices.Contains(imps, "repair") && pkg != "cli" {
			t.Errorf("%s imports repair (alerts are package alert's, recoveries package register's)", pkg)
		}
	}
	leaves := importers(t, true, mod+"register", mod+"alert")
	for _, bad := range []string{"channel", "channel/local", "fleet", "repair", "beacon", "cli", "autonomy", "desktop"} {
		if _, ok := leaves[bad]; ok {
			t.Errorf("register or alert depends on %s", bad)
		}
	}
}

// Only the write half (fleet), repair (acting through channel.Host), the
// host end (channel/local, and channel's own packages) and cli's wiring of
// them import channel.
func TestOnlyFleetRepairTheHostEndAndCLIImportChannel(t *testing.T) {
	allowed := []string{"fleet", "repair", "cli", "channel/local", "channel/channeltest"}
	for pkg, imps := range importers(t, false, mod+"...") {
		if slices.Contains(imps, "channel") && !slices.Contains(allowed, pkg) {
			t.Errorf("%s imports channel", pkg)
		}
	}
}

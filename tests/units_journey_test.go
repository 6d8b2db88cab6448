package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wisent/stado/safefile"
	"github.com/wisent/stado/tests/testbed"
)

// The units journey proves package units on a real systemd: the package's
// own real-manager tests and benchmarks (gated on a system bus, which this
// machine lacks) are built into a test binary, put at /usr/local/bin of the
// testbed hosts, and run inside one host, where they talk to that host's
// systemd over D-Bus. The stado CLI is then driven over SSH against the same
// systemd.

// unitsTestInHost is where a host sees the units test binary.
const unitsTestInHost = "/usr/local/bin/units.test"

// unitsBuild caches the units test binary of this process.
var unitsBuild struct {
	once sync.Once
	data []byte
	err  error
}

// unitsRepoRoot is the module root, two levels above this file.
func unitsRepoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the journey source")
	}
	return filepath.Dir(filepath.Dir(file))
}

// unitsInstallTestBinary builds `go test -c ./units` once per process and puts it
// at unitsTestInHost in every host (through the bed's bin dir), atomically.
func unitsInstallTestBinary(t testing.TB, bed *testbed.Bed) {
	t.Helper()
	root := unitsRepoRoot(t)
	unitsBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "stado-units-test-")
		if err != nil {
			unitsBuild.err = err
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "units.test")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "test", "-c", "-buildvcs=false", "-o", out, "./units")
		cmd.Dir = root
		if msg, err := cmd.CombinedOutput(); err != nil {
			unitsBuild.err = fmt.Errorf("go test -c ./units: %v\n%s", err, msg)
			return
		}
		unitsBuild.data, unitsBuild.err = os.ReadFile(out)
	})
	if unitsBuild.err != nil {
		t.Fatal(unitsBuild.err)
	}
	if err := os.MkdirAll(bed.BinDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := safefile.Write(filepath.Join(bed.BinDir(), filepath.Base(unitsTestInHost)), unitsBuild.data, 0o755); err != nil {
		t.Fatal(err)
	}
	bed.InstallShared(t, filepath.Join(bed.BinDir(), filepath.Base(unitsTestInHost)))
}

// unitsRunTestBinary runs the units test binary inside h with both gates
// (STADO_TESTBED for tools, STADO_SYSTEMD for the manager) set to required,
// so nothing in it may skip, and returns its verbose output. A failing run
// fails t with that output.
func unitsRunTestBinary(t testing.TB, bed *testbed.Bed, h testbed.Host, timeout time.Duration, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout+30*time.Second)
	defer cancel()
	argv := append([]string{"env", testbed.GateEnv + "=required", "STADO_SYSTEMD=required", unitsTestInHost,
		"-test.v", "-test.count=1", "-test.timeout=" + timeout.String()}, args...)
	out, stderr, err := bed.Exec(ctx, h, argv...)
	if err != nil {
		t.Fatalf("units tests inside %s failed: %v\n%s%s", h.Name, err, out, stderr)
	}
	return out
}

var unitsResultLine = regexp.MustCompile(`(?m)^\s*--- (PASS|FAIL|SKIP): (\S+) `)

// unitsResults reads `--- PASS: Name` lines of verbose test output.
func unitsResults(out string) map[string]string {
	r := map[string]string{}
	for _, m := range unitsResultLine.FindAllStringSubmatch(out, -1) {
		r[m[2]] = m[1]
	}
	return r
}

// unitsRequirePassed fails t unless every named test passed in out.
func unitsRequirePassed(t *testing.T, out string, names ...string) {
	t.Helper()
	r := unitsResults(out)
	for _, n := range names {
		if r[n] != "PASS" {
			t.Errorf("%s: %q, want PASS\n%s", n, r[n], out)
		}
	}
}

// unitsHost is the host the units journey runs on: the bed's last.
func unitsHost(bed *testbed.Bed) testbed.Host { return bed.Host(len(bed.Hosts())) }

func TestUnitsOnARealSystemd(t *testing.T) {
	t.Parallel()
	bed := testbed.Shared(t, 1)
	h := unitsHost(bed)
	unitsInstallTestBinary(t, bed)

	// A crash loop is failing with its exit code and start count, a healthy
	// unit active with its pid, stop → inactive, remove → missing, logs are
	// the program's last lines; a start-limited unit is started again; the
	// kept properties of running and settled units and the loaded units
	// among some names agree with what systemd says.
	t.Run("lifecycle", func(t *testing.T) {
		names := []string{"TestSystemdLifecycleOnARealManager", "TestSystemdStartRestartsAUnitThatHitItsStartLimitOnARealManager",
			"TestShowManyReadsARestartedRunningUnitAsAllItsPropertiesSay", "TestShowManyAsksASettledUnitOnePropertyUntilItsStateMoves",
			"TestShowManyAsksARunningUnitItsRestartsOnlyWhenItsMainPIDMoves", "TestListLoadedAmongNamesWhatTheWholeListingNamesOfThoseAsked",
			"TestSystemdSaysItsConnectionStandsUntilItIsClosed"}
		out := unitsRunTestBinary(t, bed, h, 2*time.Minute, "-test.run", "^("+strings.Join(names, "|")+")$")
		unitsRequirePassed(t, out, names...)
	})

	// Installing the same bytes twice: unchanged, no daemon-reload, no restart.
	t.Run("idempotent install", func(t *testing.T) {
		out := unitsRunTestBinary(t, bed, h, time.Minute, "-test.run", "^TestSystemdInstallOfTheSameBytesTwiceChangesNothingOnARealManager$")
		unitsRequirePassed(t, out, "TestSystemdInstallOfTheSameBytesTwiceChangesNothingOnARealManager")
	})

	// Every golden declaration, rendered with a program the host has,
	// passes the host's systemd-analyze verify with no complaint.
	t.Run("verify", func(t *testing.T) {
		out := unitsRunTestBinary(t, bed, h, time.Minute, "-test.run", "^TestRenderedSystemdUnitsPassSystemdAnalyzeVerify$")
		goldens, err := filepath.Glob(filepath.Join(unitsRepoRoot(t), "units", "testdata", "golden", "*.service"))
		if err != nil || len(goldens) < 12 {
			t.Fatalf("golden units: %d %v", len(goldens), err)
		}
		names := []string{"TestRenderedSystemdUnitsPassSystemdAnalyzeVerify"}
		for _, g := range goldens {
			names = append(names, "TestRenderedSystemdUnitsPassSystemdAnalyzeVerify/"+strings.TrimSuffix(filepath.Base(g), ".service"))
		}
		unitsRequirePassed(t, out, names...)
		t.Logf("systemd-analyze verify inside %s: %d rendered units, no complaint", h.Name, len(names)-1)
	})

	// The golden files themselves, as committed: verify's only complaint
	// is that their programs are not on the host.
	t.Run("verify goldens as committed", func(t *testing.T) {
		unitsVerifyGoldensAsCommitted(t, bed, h)
	})

	// The Show benchmarks run inside the host, neither skipping nor
	// failing; the figures are logged, not asserted (BenchmarkUnitsShow50
	// reports them).
	t.Run("show benchmarks run", func(t *testing.T) {
		f := unitsRunShowBenchmarks(t, bed, h, "3x")
		t.Logf("inside %s, 3 iterations: D-Bus ShowMany of 50 units %.2f ms, 50 forks of systemctl show %.2f ms, ratio %.1f×",
			h.Name, f.dbus/1e6, f.forks/1e6, f.forks/f.dbus)
	})

	// The CLI on the same systemd: show and logs of a crash loop, and a
	// unit systemd does not hold.
	t.Run("cli show and logs", func(t *testing.T) {
		unitsHostCLI(t, bed, h)
	})
}

// unitsVerifyGoldensAsCommitted copies every golden unit into h and runs the
// host's systemd-analyze verify on it: each line it prints must be about the
// unit's program not being there (the goldens name programs like
// /usr/local/bin/brama), nothing else.
func unitsVerifyGoldensAsCommitted(t *testing.T, bed *testbed.Bed, h testbed.Host) {
	goldens, err := filepath.Glob(filepath.Join(unitsRepoRoot(t), "units", "testdata", "golden", "*.service"))
	if err != nil || len(goldens) < 12 {
		t.Fatalf("golden units: %d %v", len(goldens), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := "/tmp/stado-units-verify"
	if _, _, err := bed.Exec(ctx, h, "mkdir", "-p", dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _, _ = bed.Exec(context.Background(), h, "rm", "-rf", dir) })
	notThere := regexp.MustCompile(`: Command .+ is not executable: No such file or directory$|^Unit \S+ has a bad unit file setting\.$`)
	missing := 0
	for _, g := range goldens {
		data, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		// The golden's file name (plain.service) is a valid unit name.
		unit := filepath.Base(g)
		p := dir + "/" + unit
		if err := bed.WriteFile(h, p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		argv := []string{"systemd-analyze", "verify", "--man=no", p}
		if strings.Contains(string(data), "WantedBy=default.target") {
			argv = []string{"env", "XDG_RUNTIME_DIR=" + dir, "systemd-analyze", "--user", "verify", "--man=no", p}
		}
		out, stderr, _ := bed.Exec(ctx, h, argv...)
		var complaints []string
		for _, l := range strings.Split(strings.TrimSpace(out+stderr), "\n") {
			switch {
			case l == "":
			case notThere.MatchString(strings.TrimSpace(l)):
				missing++
			default:
				complaints = append(complaints, l)
			}
		}
		if len(complaints) > 0 {
			t.Errorf("systemd-analyze verify %s inside %s: %s", unit, h.Name, strings.Join(complaints, "\n"))
		}
	}
	t.Logf("systemd-analyze verify inside %s: %d golden files, %d lines about programs the host lacks, nothing else", h.Name, len(goldens), missing)
}

// unitsShowFigures are the two Show benchmarks' ns/op inside a host.
type unitsShowFigures struct{ dbus, forks float64 }

var unitsBenchLine = regexp.MustCompile(`(?m)^(Benchmark\w+?)(?:-\d+)?\s+(\d+)\s+([\d.]+) ns/op`)

// unitsRunShowBenchmarks runs the units package's two Show benchmarks inside h
// with the given -test.benchtime and returns their ns/op.
func unitsRunShowBenchmarks(t testing.TB, bed *testbed.Bed, h testbed.Host, benchtime string) unitsShowFigures {
	t.Helper()
	out := unitsRunTestBinary(t, bed, h, 5*time.Minute, "-test.run", "^$",
		"-test.bench", "^(BenchmarkSystemdShowMany50|BenchmarkSystemctlShow50Forks)$", "-test.benchtime", benchtime)
	got := map[string]float64{}
	for _, m := range unitsBenchLine.FindAllStringSubmatch(out, -1) {
		v, err := strconv.ParseFloat(m[3], 64)
		if err == nil {
			got[m[1]] = v
		}
	}
	f := unitsShowFigures{dbus: got["BenchmarkSystemdShowMany50"], forks: got["BenchmarkSystemctlShow50Forks"]}
	if f.dbus <= 0 || f.forks <= 0 {
		t.Fatalf("benchmarks inside %s gave no figures:\n%s", h.Name, out)
	}
	return f
}

// unitsBenchOnce runs the in-host benchmarks once per process, however often
// the benchmark framework calls BenchmarkUnitsShow50.
var unitsBenchOnce struct {
	once sync.Once
	f    unitsShowFigures
}

// BenchmarkUnitsShow50 reports, from inside a testbed host, the time of one
// D-Bus ShowMany of 50 units and of 50 forks of `systemctl show`, and their
// ratio: go test -run '^$' -bench Units ./tests/
func BenchmarkUnitsShow50(b *testing.B) {
	bed := testbed.Shared(b, 1)
	h := unitsHost(bed)
	unitsInstallTestBinary(b, bed)
	unitsBenchOnce.once.Do(func() { unitsBenchOnce.f = unitsRunShowBenchmarks(b, bed, h, "2s") })
	f := unitsBenchOnce.f
	for i := 0; i < b.N; i++ {
		// The work ran inside the host; this loop only satisfies the framework.
	}
	// ns/op would be the whole in-host run; report the D-Bus figure there.
	b.ReportMetric(f.dbus, "ns/op")
	b.ReportMetric(f.dbus, "dbus-ns/show50")
	b.ReportMetric(f.forks, "forks-ns/show50")
	b.ReportMetric(f.forks/f.dbus, "ratio")
}

// unitsHostCLI installs stado in the hosts and reads a crash-looping unit
// with `stado host unit show` and `logs` over SSH.
func unitsHostCLI(t *testing.T, bed *testbed.Bed, h testbed.Host) {
	bed.InstallStado(t, testbed.BuildStado(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const unit = "stado-journey-crashy.service"
	path := "/etc/systemd/system/" + unit
	file := "[Unit]\nDescription=stado units journey crash loop\nStartLimitIntervalSec=0\n\n" +
		"[Service]\nExecStart=/bin/sh -c \"echo journey crashing; exit 3\"\nRestart=always\nRestartSec=1\n"
	if err := bed.WriteFile(h, path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c := context.Background()
		_, _, _ = bed.Exec(c, h, "systemctl", "stop", unit)
		_, _, _ = bed.Exec(c, h, "rm", "-f", path)
		_, _, _ = bed.Exec(c, h, "systemctl", "daemon-reload")
		_, _, _ = bed.Exec(c, h, "systemctl", "reset-failed", unit)
	})
	if _, _, err := bed.Exec(ctx, h, "systemctl", "daemon-reload"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := bed.Exec(ctx, h, "systemctl", "start", unit); err != nil {
		t.Fatal(err)
	}
	type verdict struct {
		Kind     string `json:"kind"`
		Unit     string `json:"unit"`
		State    string `json:"state"`
		LastExit int    `json:"last_exit"`
		Starts   int    `json:"starts"`
		Sentence string `json:"sentence"`
	}
	var v verdict
	deadline := time.Now().Add(15 * time.Second)
	for {
		out, _, err := bed.SSH(ctx, h, "stado", "host", "unit", "show", unit, "--json")
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("show --json: %v: %q", err, out)
		}
		if (v.State == "failing" && v.Starts >= 2) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	want := fmt.Sprintf("%s runs no process: its last run exited 3 and its supervisor has started it %d time(s)", unit, v.Starts)
	if v.Kind != "stado.host.unit" || v.State != "failing" || v.LastExit != 3 || v.Starts < 2 || v.Sentence != want {
		t.Errorf("stado host unit show %s: %+v, want failing with exit 3 and at least 2 starts", unit, v)
	}

	out, _, err := bed.SSH(ctx, h, "stado", "host", "unit", "logs", unit, "--lines", "50", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var logs struct {
		Kind  string   `json:"kind"`
		Lines []string `json:"lines"`
	}
	if err := json.Unmarshal([]byte(out), &logs); err != nil {
		t.Fatalf("logs --json: %v: %q", err, out)
	}
	printed := 0
	for _, l := range logs.Lines {
		if strings.HasSuffix(l, ": journey crashing") {
			printed++
		}
	}
	if logs.Kind != "stado.host.unit.logs" || printed < 2 {
		t.Errorf("stado host unit logs %s: %d lines of the program in %q", unit, printed, logs.Lines)
	}

	// A unit systemd does not hold is refused with not_found (exit 3).
	_, stderr, err := bed.SSH(ctx, h, "stado", "host", "unit", "show", "stado-journey-none.service", "--json")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 || !strings.Contains(stderr, `"not_found"`) {
		t.Errorf("show of a unit systemd does not hold: %v %s, want exit 3 with not_found", err, stderr)
	}
}

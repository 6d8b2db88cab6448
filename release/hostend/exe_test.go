package hostend_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/release"
	"github.com/wisent/stado/release/hostend"
	"github.com/wisent/stado/units"
)

// recorded is a published `launchctl print` output kept by package units.
func recorded(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "units", "testdata", "launchctl", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLaunchctlExeNamesTheProgramOfTheJobRunningThePID(t *testing.T) {
	cases := []struct {
		name string
		file string
		pid  int
		want string // the program, or a phrase of the error
		ok   bool
	}{
		// a system daemon running pid 1486 (macOS Mojave)
		{"running daemon", "running-system-wazuh.txt", 1486, "/Library/StartupItems/WAZUH/Wazuh-launcher", true},
		// the same print read for another pid: not the job's process
		{"another pid", "running-system-wazuh.txt", 77, "runs pid 1486, not 77", false},
		// a job in a crash loop between runs has no pid at all
		{"no process", "spawn-scheduled-exit5-toss.txt", 5, "runs pid 0, not 5", false},
		// a label launchd does not hold
		{"missing", "missing-system-openclaw.txt", 1, "does not hold", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := recorded(t, tc.file)
			exe := hostend.LaunchctlExe(func(ctx context.Context, scope, unit string) ([]byte, error) { return out, nil })
			got, err := exe(context.Background(), "system", "com.example.job", tc.pid)
			if tc.ok && (err != nil || got != tc.want) {
				t.Fatalf("exe %q %v, want %s", got, err, tc.want)
			}
			if !tc.ok && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("exe %q %v, want an error naming %q", got, err, tc.want)
			}
		})
	}
}

// launchdJob is a launchd job whose `launchctl print` is written after the
// format of the recorded running-system-wazuh.txt: its program is the
// product's current link, and a restart gives it a new pid.
type launchdJob struct {
	mu       sync.Mutex
	link     string
	pid      int
	runs     int
	restarts int
}

func (j *launchdJob) print(ctx context.Context, scope, unit string) ([]byte, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return []byte(fmt.Sprintf(`system/%s = {
	active count = 1
	path = /Library/LaunchDaemons/%s.plist
	state = running

	program = %s
	arguments = {
		%s
	}

	domain = com.apple.xpc.launchd.domain.system
	runs = %d
	pid = %d
	last exit code = 0
}
`, unit, unit, j.link, j.link, j.runs, j.pid)), nil
}

func (j *launchdJob) Restart(ctx context.Context, scope, unit string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.pid += 100
	j.runs++
	j.restarts++
	return nil
}

func (j *launchdJob) Show(ctx context.Context, scope, unit string) (units.Verdict, error) {
	out, _ := j.print(ctx, scope, unit)
	st, err := units.ParseLaunchctlPrint(out)
	if err != nil {
		return units.Verdict{}, err
	}
	return units.VerdictFromLaunchd(unit, st), nil
}

func (j *launchdJob) Logs(ctx context.Context, scope, unit string, lines int) ([]string, error) {
	return nil, nil
}

func TestOnDarwinTheProofReadsThePIDAndProgramFromLaunchctlPrint(t *testing.T) {
	f := newFixture(t)
	b := f.publish("1.0.0", "serve")
	job := &launchdJob{link: release.CurrentLink(f.root, product), pid: 400, runs: 1}
	f.host.Init = job
	f.host.Exe = hostend.LaunchctlExe(job.print)
	req := f.request("1.0.0")
	req.Unit = "com.example.brama"
	res, err := f.host.Activate(context.Background(), req)
	if err != nil || res.Outcome != release.OutcomeActivated {
		t.Fatalf("activate: %q %v", res.Outcome, err)
	}
	a := res.Activation
	if a.PIDBefore != 400 || a.PIDAfter != 500 || a.Exe != release.ImagePath(f.root, digest(b), product) {
		t.Fatalf("evidence %+v, want pid 400 → 500 on the image", a)
	}
	// A job whose program is not the current link runs no image.
	job.link = "/usr/local/bin/brama"
	f.publish("1.1.0", "serve")
	req = f.request("1.1.0")
	req.Unit, req.Wait = "com.example.brama", 300*time.Millisecond
	_, err = f.host.Activate(context.Background(), req)
	if c, _ := refusal.CodeOf(err); c != refusal.ReleaseRestoreFailed || !strings.Contains(err.Error(), "runs /usr/local/bin/brama, not the image") {
		t.Fatalf("%v: a job outside the release links is not proven", err)
	}
}

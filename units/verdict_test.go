package units

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestVerdictFromSystemdProperties(t *testing.T) {
	cases := []struct {
		name string
		p    SystemdProperties
		want Verdict
	}{
		// testbed sample, crashy.service run 1: caught mid-restart, a process runs.
		{"crashy caught running", SystemdProperties{LoadState: "loaded", ActiveState: "active", SubState: "running", Result: "success", MainPID: 133, NRestarts: 2, ExecMainStatus: 0},
			Verdict{Unit: "crashy.service", State: StateActive, PID: 133, Starts: 3, Detail: "active (running)"}},
		// testbed sample, crashy.service run 2: between restarts after exit 3.
		{"crashy in auto-restart", SystemdProperties{LoadState: "loaded", ActiveState: "activating", SubState: "auto-restart", Result: "exit-code", NRestarts: 2, ExecMainCode: 1, ExecMainStatus: 3},
			Verdict{Unit: "crashy.service", State: StateFailing, LastExit: 3, Starts: 3, Detail: "activating (auto-restart)",
				Sentence: "crashy.service runs no process: its last run exited 3 and its supervisor has started it 3 time(s)"}},
		// oarbank-agent (KillMode=process, a workload left in its cgroup)
		// crash-looping: between runs systemd still shows a MainPID.
		{"crash loop leaving processes behind", SystemdProperties{LoadState: "loaded", ActiveState: "activating", SubState: "auto-restart", Result: "exit-code", MainPID: 341, NRestarts: 27, ExecMainCode: 1, ExecMainStatus: 3},
			Verdict{Unit: "crashy.service", State: StateFailing, LastExit: 3, Starts: 28, Detail: "activating (auto-restart)",
				Sentence: "crashy.service runs no process: its last run exited 3 and its supervisor has started it 28 time(s)"}},
		// testbed sample, crashy.service after its start limit: failed with restarts behind it.
		{"crashy stopped by its start limit", SystemdProperties{LoadState: "loaded", ActiveState: "failed", SubState: "failed", Result: "exit-code", NRestarts: 5, ExecMainCode: 1, ExecMainStatus: 3},
			Verdict{Unit: "crashy.service", State: StateFailing, LastExit: 3, Starts: 6, Detail: "failed (failed)",
				Sentence: "crashy.service runs no process: its last run exited 3 and its supervisor has started it 6 time(s)"}},
		// testbed sample, crashy-slow.service: the loop caught between runs, code not reported.
		{"slow loop between runs without exec code", SystemdProperties{LoadState: "loaded", ActiveState: "activating", SubState: "auto-restart", Result: "exit-code", NRestarts: 5, ExecMainStatus: 3},
			Verdict{Unit: "crashy.service", State: StateFailing, LastExit: 3, Starts: 6, Detail: "activating (auto-restart)",
				Sentence: "crashy.service runs no process: its last run exited 3 and its supervisor has started it 6 time(s)"}},
		// A unit without a restart policy that failed once is failed, not failing.
		{"failed once, never restarted", SystemdProperties{LoadState: "loaded", ActiveState: "failed", SubState: "failed", Result: "exit-code", ExecMainCode: 1, ExecMainStatus: 1},
			Verdict{Unit: "crashy.service", State: StateFailed, LastExit: 1, Starts: 1, Detail: "failed (failed)"}},
		// Result start-limit-hit marks the start limit even without NRestarts.
		{"start-limit-hit", SystemdProperties{LoadState: "loaded", ActiveState: "failed", SubState: "failed", Result: "start-limit-hit", ExecMainCode: 1, ExecMainStatus: 2},
			Verdict{Unit: "crashy.service", State: StateFailing, LastExit: 2, Starts: 1, Detail: "failed (failed)",
				Sentence: "crashy.service runs no process: its last run exited 2 and its supervisor has started it 1 time(s)"}},
		// Killed by a signal in a restart loop.
		{"killed by signal in auto-restart", SystemdProperties{LoadState: "loaded", ActiveState: "activating", SubState: "auto-restart", Result: "signal", NRestarts: 1, ExecMainCode: 2, ExecMainStatus: 9},
			Verdict{Unit: "crashy.service", State: StateFailing, LastExit: 9, Signaled: true, Starts: 2, Detail: "activating (auto-restart)",
				Sentence: "crashy.service runs no process: its last run exited on signal 9 and its supervisor has started it 2 time(s)"}},
		// Stopped cleanly.
		{"stopped", SystemdProperties{LoadState: "loaded", ActiveState: "inactive", SubState: "dead", Result: "success", ExecMainCode: 2, ExecMainStatus: 15},
			Verdict{Unit: "crashy.service", State: StateInactive, LastExit: 15, Signaled: true, Starts: 1, Detail: "inactive (dead)"}},
		// Never started.
		{"loaded, never started", SystemdProperties{LoadState: "loaded", ActiveState: "inactive", SubState: "dead"},
			Verdict{Unit: "crashy.service", State: StateInactive, Detail: "inactive (dead)"}},
		// Unknown to systemd.
		{"not found", SystemdProperties{LoadState: "not-found", ActiveState: "inactive", SubState: "dead"},
			Verdict{Unit: "crashy.service", State: StateMissing, Detail: "not-found"}},
		// A unit file systemd could not load.
		{"bad setting", SystemdProperties{LoadState: "bad-setting", ActiveState: "inactive", SubState: "dead"},
			Verdict{Unit: "crashy.service", State: StateFailed, Detail: "bad-setting"}},
		// A restart loop of a program exiting 0 is not a failing verdict.
		{"auto-restart after clean exit", SystemdProperties{LoadState: "loaded", ActiveState: "activating", SubState: "auto-restart", Result: "success", NRestarts: 4, ExecMainCode: 1},
			Verdict{Unit: "crashy.service", State: StateInactive, Starts: 5, Detail: "activating (auto-restart)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := VerdictFromSystemd("crashy.service", c.p); !reflect.DeepEqual(got, c.want) {
				t.Errorf("\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestLaunchctlPrintParsesRealOutputs(t *testing.T) {
	cases := []struct {
		file  string
		want  LaunchdState
		state string // the verdict's state
	}{
		// A system daemon running with a pid (Mojave).
		{"running-system-wazuh.txt", LaunchdState{Found: true, Label: "com.wazuh.agent", State: "running", PID: 1486, Exited: true, Runs: 3,
			Program: "/Library/StartupItems/WAZUH/Wazuh-launcher", Arguments: []string{"/Library/StartupItems/WAZUH/Wazuh-launcher"},
			Path: "/Library/LaunchDaemons/com.wazuh.agent.plist", Domain: "system"}, StateActive},
		// Running again after its previous run exited 1; the pid wins.
		{"running-system-mysql-yosemite.txt", LaunchdState{Found: true, Label: "dev.mysql", State: "running", PID: 24784, LastExit: 1, Exited: true, Runs: 2,
			Program: "/opt/boxen/homebrew/bin/mysqld_safe", Arguments: []string{"/opt/boxen/homebrew/bin/mysqld_safe", "--defaults-file=/opt/boxen/config/mysql/my.cnf"},
			Path: "/Library/LaunchDaemons/dev.mysql.plist", Domain: "system", StdoutPath: "/opt/boxen/log/mysql/console.log", StderrPath: "/opt/boxen/log/mysql/console.log"}, StateActive},
		// Loaded, not running, last exit 0: inactive; nested endpoint fields ignored.
		{"not-running-user-icloudhelper.txt", LaunchdState{Found: true, Label: "com.apple.iCloudHelper", State: "not running", Exited: true, Runs: 882,
			Program: "/System/Library/PrivateFrameworks/AOSKit.framework/Versions/A/XPCServices/com.apple.iCloudHelper.xpc/Contents/MacOS/com.apple.iCloudHelper",
			Path:    "/System/Library/PrivateFrameworks/AOSKit.framework/Versions/A/XPCServices/com.apple.iCloudHelper.xpc", Domain: "user/501"}, StateInactive},
		// Between respawns after a clean exit: inactive, not failing.
		{"spawn-scheduled-exit0-agenix.txt", LaunchdState{Found: true, Label: "org.nix-community.home.activate-agenix", State: "spawn scheduled", Exited: true, Runs: 640,
			Path: "/Users/pluto/Library/LaunchAgents/org.nix-community.home.activate-agenix.plist"}, StateInactive},
		// A crash-looping job caught while a process runs.
		{"running-crashloop-iphone-use.txt", LaunchdState{Found: true, State: "running", PID: 60560, LastExit: 1, Exited: true, Runs: 38771}, StateActive},
		// A crash loop between respawns: no pid, exit 5.
		{"spawn-scheduled-exit5-toss.txt", LaunchdState{Found: true, State: "spawn scheduled", LastExit: 5, Exited: true, Runs: 5}, StateFailing},
		// Exited nonzero with a named code, no pid.
		{"not-running-exit78-paperboat.txt", LaunchdState{Found: true, State: "not running", LastExit: 78, Exited: true}, StateFailing},
		// The label is not loaded.
		{"missing-system-openclaw.txt", LaunchdState{Found: false}, StateMissing},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "launchctl", c.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseLaunchctlPrint(data)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("\n got %+v\nwant %+v", got, c.want)
			}
			if v := VerdictFromLaunchd("job", got); v.State != c.state {
				t.Errorf("verdict %s, want %s (%+v)", v.State, c.state, v)
			}
		})
	}
}

func TestLaunchdFailingVerdictCarriesExitAndRuns(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "launchctl", "spawn-scheduled-exit5-toss.txt"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := ParseLaunchctlPrint(data)
	if err != nil {
		t.Fatal(err)
	}
	v := VerdictFromLaunchd("com.wisent.brama", st)
	want := "com.wisent.brama runs no process: its last run exited 5 and its supervisor has started it 5 time(s)"
	if v.State != StateFailing || v.LastExit != 5 || v.Starts != 5 || v.Sentence != want {
		t.Errorf("got %+v", v)
	}
}

func TestLaunchctlPrintRefusesOutputItCannotRead(t *testing.T) {
	for _, in := range []string{"", "launchctl: unexpected failure\n", "some future format\n"} {
		if _, err := ParseLaunchctlPrint([]byte(in)); err == nil {
			t.Errorf("%q parsed without error", in)
		}
	}
}

func TestLaunchctlPrintReadsSignalEndings(t *testing.T) {
	out := "gui/501/com.example.hooks = {\n\tstate = not running\n\truns = 20\n\tlast terminating signal = Terminated: 15\n}\n"
	st, err := ParseLaunchctlPrint([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	v := VerdictFromLaunchd("com.example.hooks", st)
	if v.State != StateFailing || !v.Signaled || v.LastExit != 15 || v.Starts != 20 {
		t.Errorf("got %+v", v)
	}
}

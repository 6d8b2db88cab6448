package repair

import (
	"reflect"
	"testing"
)

func TestRecoveryLinesSayEveryStepTheRestartAndEachAlert(t *testing.T) {
	zero, one := 0, 1
	r := Recovery{State: RecoveryAttempted,
		Steps:   []StepReport{{Step: "crypto", OK: true, ExitCode: &zero}, {Step: "audit-lock", Code: CodeStepFailed, ExitCode: &one, Refusal: "locked"}},
		Restart: &RestartReport{Unit: "skarbiec.service", OK: true, Answer: "done", PID: 813},
		Alerts:  []AlertOutcome{{Channel: "ops", Type: "webhook", OK: true, Answer: "HTTP 200"}, {Channel: "pager", Type: "command", Answer: "exit 2", Cause: "no route"}},
	}
	want := []string{
		"repair crypto: ok (exit 0)",
		"repair audit-lock: refused (repair_step_failed) (exit 1): locked",
		"restart skarbiec.service: done, pid 813",
		"alert ops (webhook): HTTP 200",
		"alert pager (command): failed: exit 2 no route",
	}
	if got := r.Lines(); !reflect.DeepEqual(got, want) {
		t.Errorf("lines\n%q\nwant\n%q", got, want)
	}
	if r.Verdict() != "incomplete" {
		t.Errorf("verdict %s", r.Verdict())
	}
	r.Restart = &RestartReport{Unit: "skarbiec.service", Code: CodeRestartFailed, Refusal: "job failed"}
	if got := r.Lines()[2]; got != "restart skarbiec.service: refused (restart_failed): job failed" {
		t.Errorf("refused restart: %q", got)
	}
	if (Recovery{State: RecoveryRunning}).Verdict() != "running" || (Recovery{Complete: true}).Verdict() != "complete" {
		t.Error("verdicts")
	}
}

func TestAStepPlanSaysWhatRunsAndItsResult(t *testing.T) {
	p := &StepPlan{Service: "skarbiec", Target: "h1", Step: "crypto", OS: "linux", Argv: []string{"/bin/sh", "-c", "echo a"},
		Env: map[string]string{"B": "2", "A": "1"}, Timeout: 5}
	want := []string{"would run repair step crypto for skarbiec on h1 (linux):", `  argv:    /bin/sh -c "echo a"`,
		"  env:     A=1", "  env:     B=2", "  timeout: 5s", "nothing ran; add --apply to run it"}
	if got := p.Lines(); !reflect.DeepEqual(got, want) {
		t.Errorf("plan\n%q\nwant\n%q", got, want)
	}
	// applied: each line of the output under the first
	p.Applied, p.Env, p.Report = true, nil, &StepReport{OK: true, ElapsedMS: 7, Output: "one\ntwo"}
	want = []string{"ran repair step crypto for skarbiec on h1 (linux):", `  argv:    /bin/sh -c "echo a"`, "  timeout: 5s",
		"  result:  ok in 7 ms", "  output:  one", "           two"}
	if got := p.Lines(); !reflect.DeepEqual(got, want) {
		t.Errorf("applied\n%q\nwant\n%q", got, want)
	}
}

func TestARecoveryInABeaconSaysItsVerdictOrWhyItCannot(t *testing.T) {
	cases := []struct {
		name string
		raw  string
		want []string
	}{
		// none carried, none said
		{"empty", "", nil},
		{"unreadable", "[1]", []string{"recovery: unreadable: json: cannot unmarshal array into Go value of type repair.Recovery"}},
		{"complete", `{"when":"2030-01-02T03:04:05Z","complete":true,"restart":{"unit":"u.service","ok":true,"answer":"done","pid":9}}`,
			[]string{"recovery complete, started 2030-01-02T03:04:05Z:", "  restart u.service: done, pid 9"}},
	}
	for _, c := range cases {
		if got := BeaconLines([]byte(c.raw)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

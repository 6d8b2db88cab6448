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

package register

import (
	"reflect"
	"testing"
)

func TestRecoveryLinesSayEveryStepTheRestartAndEachAlert(t *testing.T) {
	zero, one := 0, 1
	r := Recovery{State: Attempted,
		Steps:   []StepResult{{Step: "crypto", OK: true, ExitCode: &zero}, {Step: "audit-lock", Code: "repair_step_failed", ExitCode: &one, Refusal: "locked"}},
		Restart: &Restart{Unit: "skarbiec.service", OK: true, Answer: "done", PID: 813},
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
	r.Restart = &Restart{Unit: "skarbiec.service", Code: "restart_failed", Refusal: "job failed"}
	if got := r.Lines()[2]; got != "restart skarbiec.service: refused (restart_failed): job failed" {
		t.Errorf("refused restart: %q", got)
	}
	if (Recovery{State: Running}).Verdict() != "running" || (Recovery{Complete: true}).Verdict() != "complete" {
		t.Error("verdicts")
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
		{"unreadable", "[1]", []string{"recovery: unreadable: json: cannot unmarshal array into Go value of type register.Recovery"}},
		{"complete", `{"when":"2030-01-02T03:04:05Z","complete":true,"restart":{"unit":"u.service","ok":true,"answer":"done","pid":9}}`,
			[]string{"recovery complete, started 2030-01-02T03:04:05Z:", "  restart u.service: done, pid 9"}},
	}
	for _, c := range cases {
		if got := BeaconLines([]byte(c.raw)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestAnEmptySelectionNamesTheServiceFilter: `service recoveries --service
// nosuch` that finds nothing says which service it looked for.
func TestAnEmptySelectionNamesTheServiceFilter(t *testing.T) {
	rows := []Recovery{{State: Attempted, Service: "skarbiec"}}
	if got := Select("/r.jsonl", "nosuch", rows).Lines(); !reflect.DeepEqual(got, []string{`no recoveries of service "nosuch" in /r.jsonl`}) {
		t.Errorf("filtered: %q", got)
	}
	if got := Select("/r.jsonl", "", nil).Lines(); !reflect.DeepEqual(got, []string{"no recoveries in /r.jsonl"}) {
		t.Errorf("unfiltered: %q", got)
	}
}

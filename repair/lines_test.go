package repair

import (
	"github.com/wisent/stado/register"
	"reflect"
	"testing"
)

func TestAStepPlanSaysWhatRunsAndItsResult(t *testing.T) {
	p := &StepPlan{Service: "skarbiec", Target: "h1", Step: "crypto", OS: "linux", Argv: []string{"/bin/sh", "-c", "echo a"},
		Env: map[string]string{"B": "2", "A": "1"}, Timeout: 5}
	want := []string{"would run repair step crypto for skarbiec on h1 (linux):", `  argv:    /bin/sh -c "echo a"`,
		"  env:     A=1", "  env:     B=2", "  timeout: 5s", "nothing ran; add --apply to run it"}
	if got := p.Lines(); !reflect.DeepEqual(got, want) {
		t.Errorf("plan\n%q\nwant\n%q", got, want)
	}
	// applied: each line of the output under the first
	p.Applied, p.Env, p.Report = true, nil, &register.StepResult{OK: true, ElapsedMS: 7, Output: "one\ntwo"}
	want = []string{"ran repair step crypto for skarbiec on h1 (linux):", `  argv:    /bin/sh -c "echo a"`, "  timeout: 5s",
		"  result:  ok in 7 ms", "  output:  one", "           two"}
	if got := p.Lines(); !reflect.DeepEqual(got, want) {
		t.Errorf("applied\n%q\nwant\n%q", got, want)
	}
}

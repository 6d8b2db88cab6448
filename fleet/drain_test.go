package fleet_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/fleet"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
)

// drainBed declares the Oarbank agent by hand on host1 (product named, no
// catalog defaults written out) and records every drain step host1 runs,
// with how many unit removals had happened by then.
type drainRun struct {
	step           string
	env            map[string]string
	removalsBefore int
}

func drainBed(t *testing.T, ok bool) (*bed, *[]drainRun) {
	t.Helper()
	b := newBed(t)
	_, _, err := registry.Update(context.Background(), b.store, "the agent", func(d *registry.Document) error {
		tg, _ := d.Target("host1")
		tg.Services = append(tg.Services, registry.Service{Name: "oarbank-agent", Unit: "oarbank-agent.service", Scope: "user",
			Product: "oarbank-agent", Program: "/usr/local/bin/oarbank-agent", Args: []string{"run"},
			Env: map[string]string{"OARBANK_COORDINATOR": "http://127.0.0.1:9/"}})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := fleet.Open(context.Background(), b.store, func(registry.Target) channel.Host { return b.host })
	if err != nil {
		t.Fatal(err)
	}
	b.fleet = f
	runs := &[]drainRun{}
	b.host.RunStep = func(_ context.Context, _ *catalog.Catalog, step string, env map[string]string) channel.StepResult {
		*runs = append(*runs, drainRun{step, env, b.mem.Calls["Remove"]})
		res := channel.StepResult{Step: step, OK: ok, Output: "drained: workload fixture-worker stopped"}
		if !ok {
			code := 1
			res.ExitCode, res.Code, res.Output = &code, string(refusal.StepFailed), "oarbank-agent drain: workload still runs"
		}
		return res
	}
	return b, runs
}

func TestRetireOfTheAgentRunsItsDrainStepBeforeStoppingTheUnit(t *testing.T) {
	b, runs := drainBed(t, true)
	res, err := b.fleet.Retire(context.Background(), fleet.WithdrawOptions{Name: "oarbank-agent", Host: "host1"})
	if err != nil {
		t.Fatalf("retire: %v", err)
	}
	if len(*runs) != 1 || (*runs)[0].step != "oarbank-drain" || (*runs)[0].removalsBefore != 0 {
		t.Fatalf("drain runs %+v, want oarbank-drain once before any unit removal", *runs)
	}
	// the step's input comes from the product's default when the
	// declaration leaves it out
	if got := (*runs)[0].env["OARBANK_HOME"]; got != "/var/lib/oarbank" {
		t.Errorf("drain env OARBANK_HOME %q, want the product default", got)
	}
	if b.mem.Calls["Remove"] != 1 {
		t.Errorf("unit removals %d, want 1 after the drain", b.mem.Calls["Remove"])
	}
	if res.Drain == nil || res.Drain.State != fleet.DrainDrained || res.Drain.Result == nil || !res.Drain.Result.OK {
		t.Fatalf("result drain %+v, want drained with the step's result", res.Drain)
	}
	lines := strings.Join(res.Lines(true), "\n")
	if !strings.Contains(lines, "drained by step oarbank-drain") || !strings.Contains(lines, "fixture-worker stopped") {
		t.Errorf("lines %q do not say the drain", lines)
	}
	data, _ := json.Marshal(res)
	if !strings.Contains(string(data), `"drain":{"product":"oarbank-agent","step":"oarbank-drain","state":"drained"`) {
		t.Errorf("json %s lacks the drain", data)
	}
	if strings.Contains(string(data), "/var/lib/oarbank") {
		t.Errorf("json %s carries the step's env values", data)
	}
	doc, _, _ := registry.Load(context.Background(), b.store)
	if tg, _ := doc.Target("host1"); func() bool { s, _ := tg.Service("oarbank-agent"); return s != nil }() {
		t.Error("the declaration was not withdrawn")
	}
}

func TestAFailedDrainRefusesRetireAndRemoveAndStopsNothing(t *testing.T) {
	b, runs := drainBed(t, false)
	ctx := context.Background()
	for _, op := range []struct {
		name string
		run  func(context.Context, fleet.WithdrawOptions) (fleet.WithdrawResult, error)
	}{{"retire", b.fleet.Retire}, {"remove", b.fleet.Remove}} {
		res, err := op.run(ctx, fleet.WithdrawOptions{Name: "oarbank-agent", Host: "host1"})
		if !refusal.Is(err, refusal.DrainFailed) {
			t.Fatalf("%s: %v, want drain_failed", op.name, err)
		}
		if !strings.Contains(err.Error(), "oarbank-drain") || !strings.Contains(err.Error(), "workload still runs") || !strings.Contains(err.Error(), "exit 1") {
			t.Errorf("%s refusal %q does not name the step, its exit and its output", op.name, err)
		}
		if res.Drain == nil || res.Drain.State != fleet.DrainFailed || res.Drain.Result == nil {
			t.Errorf("%s result drain %+v, want failed with the step's result", op.name, res.Drain)
		}
	}
	if len(*runs) != 2 || b.mem.Calls["Remove"] != 0 || b.mem.Calls["Stop"] != 0 {
		t.Fatalf("drain runs %d, host calls %v: want two drains and nothing stopped", len(*runs), b.mem.Calls)
	}
	doc, _, _ := registry.Load(ctx, b.store)
	tg, _ := doc.Target("host1")
	if s, _ := tg.Service("oarbank-agent"); s == nil {
		t.Fatal("the declaration was withdrawn after a failed drain")
	}
}

func TestNoDrainRetiresWithoutTheStepAndSaysSo(t *testing.T) {
	b, runs := drainBed(t, false)
	res, err := b.fleet.Retire(context.Background(), fleet.WithdrawOptions{Name: "oarbank-agent", Host: "host1", NoDrain: true})
	if err != nil {
		t.Fatalf("retire --no-drain: %v", err)
	}
	if len(*runs) != 0 || b.mem.Calls["Remove"] != 1 {
		t.Fatalf("drain runs %d, removals %d: want no drain and the unit removed", len(*runs), b.mem.Calls["Remove"])
	}
	if res.Drain == nil || res.Drain.State != fleet.DrainSkipped {
		t.Fatalf("drain %+v, want skipped", res.Drain)
	}
	if lines := strings.Join(res.Lines(true), "\n"); !strings.Contains(lines, "drain skipped: --no-drain") {
		t.Errorf("lines %q do not name the skipped drain", lines)
	}
	meta, _ := registry.History(context.Background(), b.store)
	if len(meta) == 0 || !strings.Contains(meta[len(meta)-1].Reason, "drain skipped: --no-drain") {
		t.Errorf("the revision's reason %+v does not record the skipped drain", meta)
	}
}

func TestDryRunRetireSaysTheDrainWouldRunFirstAndRunsNothing(t *testing.T) {
	b, runs := drainBed(t, true)
	for _, retire := range []bool{true, false} {
		o := fleet.WithdrawOptions{Name: "oarbank-agent", Host: "host1", DryRun: true}
		var res fleet.WithdrawResult
		var err error
		if retire {
			res, err = b.fleet.Retire(context.Background(), o)
		} else {
			res, err = b.fleet.Remove(context.Background(), o)
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Plan) < 2 || !strings.HasPrefix(res.Plan[0], "drain step oarbank-drain") || res.Drain == nil || res.Drain.State != fleet.DrainWouldRun {
			t.Errorf("retire %v dry-run: plan %q drain %+v, want the drain first", retire, res.Plan, res.Drain)
		}
		if l := strings.Join(res.Lines(retire), ""); !strings.Contains(l, "would drain step oarbank-drain") {
			t.Errorf("dry-run lines %q", l)
		}
	}
	if len(*runs) != 0 || b.mem.Calls["Remove"] != 0 {
		t.Fatalf("dry run touched the host: drains %d, calls %v", len(*runs), b.mem.Calls)
	}
}

// A declaration of a product without a drain step is retired as before,
// and remove of it still makes no channel call.
func TestRetireOfAProductWithoutADrainStepHasNoDrain(t *testing.T) {
	b := newBed(t)
	res, err := b.fleet.Remove(context.Background(), fleet.WithdrawOptions{Name: "api", Host: "host1"})
	if err != nil || res.Drain != nil {
		t.Fatalf("remove api: %+v, %v", res.Drain, err)
	}
}

package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/tests/testbed"
)

// TestEnsureOfAnAdoptedUnitSetsAsideTheOverrideItsDeclarationHolds adopts
// a unit that runs with an operator's override (as `systemctl edit` leaves
// it), through the stado binary over SSH, and ensures the declaration on
// the same host. The declaration holds the override's settings, so ensure
// sets the override aside (renamed, its text kept): systemd, which applies
// a drop-in over any unit file, would otherwise run the override's
// ExecStartPre= twice. The unit then runs each command once, with the
// override's limit, and a second ensure changes nothing.
func TestEnsureOfAnAdoptedUnitSetsAsideTheOverrideItsDeclarationHolds(t *testing.T) {
	t.Parallel()
	w := newWriteBed(t, 1)
	h := w.bed.Host(1)
	const unit, port = "stado-wj-dropin.service", 18198
	dir := "/etc/systemd/system/" + unit + ".d"
	w.push(t, []testbed.Host{h})
	body := fmt.Sprintf("[Unit]\nDescription=sample with an override\n\n[Service]\nExecStartPre=/bin/true\nExecStart=%s --addr %s:%d\nRestart=always\n\n[Install]\nWantedBy=multi-user.target\n", sampleProgram, h.Addr, port)
	const override = "[Service]\nExecStartPre=/bin/echo override\nLimitNOFILE=4096\n"
	startHandWrittenUnit(t, w, h, unit, []handWritten{{"/etc/systemd/system/" + unit, body}, {dir + "/override.conf", override}})

	complete, adopted, out := adoptThroughTheBinary(t, w, h, unit)
	if !complete || strings.Join(adopted.ExecStartPre, "|") != "/bin/true|/bin/echo override" || adopted.Limits["nofile"].Soft != "4096" {
		t.Fatalf("adopt did not merge the override: %s", out)
	}
	if code, out, _ := w.run(t, "service", "verify", adopted.Name, "--host", h.Name, "--json"); code == 0 ||
		!strings.Contains(out, `"repeating_dropins": [`) || !strings.Contains(out, dir+"/override.conf") {
		t.Errorf("verify before the ensure (exit %d) does not name the repeating override:\n%s", code, out)
	}
	aside := ensureSettingAside(t, w, h, adopted.Name)
	if len(aside) != 1 || aside[0].How != channel.SetAsideRenamed || aside[0].Path != dir+"/override.conf" || aside[0].To != dir+"/override.conf.stado-merged" {
		t.Fatalf("ensure set aside %+v, want the override renamed", aside)
	}
	if kept, err := w.bed.ReadFile(h, dir+"/override.conf.stado-merged"); err != nil || string(kept) != override {
		t.Errorf("the set-aside override lost its text (%v): %q", err, kept)
	}
	got := unitReading(t, w, h, unit)
	if got["ExecStartPre"] != "2" || got["DropInPaths"] != "" || got["LimitNOFILE"] != "4096" || got["ActiveState"] != "active" {
		t.Errorf("after ensure systemd reads (want 2 ExecStartPre= commands, each once, no drop-in, LimitNOFILE 4096, active): %v", got)
	}
	if again := ensureSettingAside(t, w, h, adopted.Name); len(again) != 0 {
		t.Errorf("a second ensure set aside %+v", again)
	}
	if code, out, errOut := w.run(t, "service", "verify", adopted.Name, "--host", h.Name); code != 0 {
		t.Errorf("verify after the ensure: exit %d\n%s\n%s", code, out, errOut)
	}

	// A drop-in that repeats a declared command and also sets what the
	// declaration lacks is refused, naming it, and stays as it is.
	const extra = "[Service]\nExecStartPre=/bin/true\nNice=5\n"
	if err := w.bed.WriteFile(h, dir+"/extra.conf", []byte(extra), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := w.bed.Exec(journeyCtx(t), h, "systemctl", "daemon-reload"); err != nil {
		t.Fatalf("daemon-reload: %v %s", err, stderr)
	}
	code, out, errOut := w.run(t, "service", "ensure", adopted.Name, "--host", h.Name, "--json")
	if code != 3 || !strings.Contains(out+errOut, `"dropin_conflict"`) || !strings.Contains(out+errOut, dir+"/extra.conf") ||
		!strings.Contains(out+errOut, "adopt the unit again") {
		t.Errorf("ensure over a drop-in that repeats a command and sets Nice=: exit %d, want 3, dropin_conflict naming it and the fix\n%s\n%s", code, out, errOut)
	}
	if kept, err := w.bed.ReadFile(h, dir+"/extra.conf"); err != nil || string(kept) != extra {
		t.Errorf("the refused drop-in changed (%v): %q", err, kept)
	}
}

// TestEnsureOfAnAdoptedInstanceMasksItsTemplatesDropInForItAlone adopts
// one instance of a template whose drop-in (shared by every instance) adds
// an ExecStartPre=. ensure of the instance masks the template's drop-in for
// that instance only, with a same-named link to /dev/null in the
// instance's own drop-in directory: the instance runs the command once,
// and the template's other instance still reads the drop-in.
func TestEnsureOfAnAdoptedInstanceMasksItsTemplatesDropInForItAlone(t *testing.T) {
	t.Parallel()
	w := newWriteBed(t, 1)
	h := w.bed.Host(1)
	const template, instance, other = "stado-wj-dropt@.service", "stado-wj-dropt@18199.service", "stado-wj-dropt@18200.service"
	tdir := "/etc/systemd/system/" + template + ".d"
	w.push(t, []testbed.Host{h})
	cleanupUnits(t, w.bed, []testbed.Host{h}, other)
	body := fmt.Sprintf("[Service]\nExecStart=%s --addr %s:%%i\nRestart=always\n\n[Install]\nWantedBy=multi-user.target\n", sampleProgram, h.Addr)
	startHandWrittenUnit(t, w, h, instance, []handWritten{{"/etc/systemd/system/" + template, body},
		{tdir + "/pre.conf", "[Service]\nExecStartPre=/bin/echo pre %i\n"}})
	if _, stderr, err := w.bed.Exec(journeyCtx(t), h, "systemctl", "start", other); err != nil {
		t.Fatalf("start %s: %v %s", other, err, stderr)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _, _ = w.bed.Exec(ctx, h, "rm", "-rf", "/etc/systemd/system/"+instance+".d")
	})

	complete, adopted, out := adoptThroughTheBinary(t, w, h, instance)
	if !complete || strings.Join(adopted.ExecStartPre, "|") != "/bin/echo pre 18199" {
		t.Fatalf("adopt did not merge the template's drop-in: %s", out)
	}
	aside := ensureSettingAside(t, w, h, adopted.Name)
	mask := "/etc/systemd/system/" + instance + ".d/pre.conf"
	if len(aside) != 1 || aside[0].How != channel.SetAsideMasked || aside[0].Path != tdir+"/pre.conf" || aside[0].To != mask {
		t.Fatalf("ensure set aside %+v, want the template's drop-in masked at %s", aside, mask)
	}
	if got := unitReading(t, w, h, instance); got["ExecStartPre"] != "1" || got["DropInPaths"] != mask || got["ActiveState"] != "active" ||
		got["FragmentPath"] != "/etc/systemd/system/"+instance {
		t.Errorf("the ensured instance (want 1 ExecStartPre=, only the mask as drop-in, from its own file, active): %v", got)
	}
	if got := unitReading(t, w, h, other); got["ExecStartPre"] != "1" || got["DropInPaths"] != tdir+"/pre.conf" {
		t.Errorf("the template's other instance lost the template's drop-in: %v", got)
	}
	if again := ensureSettingAside(t, w, h, adopted.Name); len(again) != 0 {
		t.Errorf("a second ensure set aside %+v", again)
	}
}

// ensureSettingAside runs service ensure NAME --host H --json, which must
// succeed, and returns the drop-ins it set aside.
func ensureSettingAside(t *testing.T, w *writeBed, h testbed.Host, name string) []channel.SetAsideDropIn {
	t.Helper()
	code, out, errOut := w.run(t, "service", "ensure", name, "--host", h.Name, "--json")
	if code != 0 {
		t.Fatalf("ensure: exit %d\n%s\n%s", code, out, errOut)
	}
	var doc struct {
		Results []struct {
			OK       bool                     `json:"ok"`
			SetAside []channel.SetAsideDropIn `json:"set_aside"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Results) != 1 || !doc.Results[0].OK {
		t.Fatalf("ensure: %v\n%s", err, out)
	}
	return doc.Results[0].SetAside
}

// unitReading is systemd's reading of unit: a few properties, and under
// ExecStartPre how many commands it holds (systemctl show prints a line
// for each).
func unitReading(t *testing.T, w *writeBed, h testbed.Host, unit string) map[string]string {
	t.Helper()
	ctx := journeyCtx(t)
	got, err := showProperties(ctx, w.bed, h, unit, "DropInPaths,LimitNOFILE,FragmentPath,ActiveState")
	if err != nil {
		t.Fatal(err)
	}
	pre, stderr, err := w.bed.Exec(ctx, h, "systemctl", "show", unit, "-p", "ExecStartPre")
	if err != nil {
		t.Fatalf("systemctl show: %v %s", err, stderr)
	}
	got["ExecStartPre"] = fmt.Sprint(strings.Count(pre, "ExecStartPre="))
	return got
}

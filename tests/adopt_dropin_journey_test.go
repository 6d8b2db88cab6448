package tests

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

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
	ctx := journeyCtx(t)
	w.push(t, []testbed.Host{h})
	body := fmt.Sprintf("[Unit]\nDescription=sample with an override\n\n[Service]\nExecStartPre=/bin/true\nExecStart=%s --addr %s:%d\nRestart=always\n\n[Install]\nWantedBy=multi-user.target\n", sampleProgram, h.Addr, port)
	const override = "[Service]\nExecStartPre=/bin/echo override\nLimitNOFILE=4096\n"
	startHandWrittenUnit(t, w, h, unit, []handWritten{{"/etc/systemd/system/" + unit, body}, {dir + "/override.conf", override}})

	complete, adopted, out := adoptThroughTheBinary(t, w, h, unit)
	if !complete || strings.Join(adopted.ExecStartPre, "|") != "/bin/true|/bin/echo override" || adopted.Limits["nofile"].Soft != "4096" {
		t.Fatalf("adopt did not merge the override: %s", out)
	}

	ensure := func() []channel.SetAsideDropIn {
		t.Helper()
		code, out, errOut := w.run(t, "service", "ensure", adopted.Name, "--host", h.Name, "--json")
		if code != 0 {
			t.Fatalf("ensure: exit %d\n%s\n%s", code, out, errOut)
		}
		var doc struct {
			Results []struct {
				OK       bool                     `json:"ok"`
				Install  string                   `json:"install"`
				SetAside []channel.SetAsideDropIn `json:"set_aside"`
			} `json:"results"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Results) != 1 || !doc.Results[0].OK {
			t.Fatalf("ensure: %v\n%s", err, out)
		}
		return doc.Results[0].SetAside
	}
	aside := ensure()
	if len(aside) != 1 || aside[0].Path != dir+"/override.conf" || aside[0].To != dir+"/override.conf.stado-merged" {
		t.Fatalf("ensure set aside %+v, want the override", aside)
	}
	if kept, err := w.bed.ReadFile(h, dir+"/override.conf.stado-merged"); err != nil || string(kept) != override {
		t.Errorf("the set-aside override lost its text (%v): %q", err, kept)
	}
	got, err := showProperties(ctx, w.bed, h, unit, "DropInPaths,LimitNOFILE,FragmentPath,ActiveState")
	if err != nil {
		t.Fatal(err)
	}
	// systemctl show prints one ExecStartPre= line per command.
	pre, stderr, err := w.bed.Exec(ctx, h, "systemctl", "show", unit, "-p", "ExecStartPre")
	if err != nil {
		t.Fatalf("systemctl show: %v %s", err, stderr)
	}
	got["ExecStartPre"] = pre
	if n := strings.Count(pre, "ExecStartPre="); n != 2 || got["DropInPaths"] != "" || got["LimitNOFILE"] != "4096" || got["ActiveState"] != "active" {
		t.Errorf("after ensure systemd reads %d ExecStartPre= commands (want 2, each once), drop-ins %q (want none), LimitNOFILE %s (want 4096), %s:\n%v",
			n, got["DropInPaths"], got["LimitNOFILE"], got["ActiveState"], got)
	}
	if again := ensure(); len(again) != 0 {
		t.Errorf("a second ensure set aside %+v", again)
	}
}

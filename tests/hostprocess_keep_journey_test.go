package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/tests/testbed"
)

// TestEnsureOfTheHostProcessKeepsTheLimitsAnOperatorInstalled reinstalls
// the stado host process (the stado product) over a unit file an operator
// tuned on the host, through the stado binary over SSH: systemd then reads
// the operator's LimitNOFILE and MemoryMax from the rewritten file, while
// ExecStart is the declaration's; a second ensure leaves the file as it is.
func TestEnsureOfTheHostProcessKeepsTheLimitsAnOperatorInstalled(t *testing.T) {
	t.Parallel()
	w := newWriteBed(t, 2)
	h := w.bed.Host(1)
	const unit, port = "kj-stado.service", 19571
	ctx := journeyCtx(t)
	cleanupUnits(t, w.bed, []testbed.Host{h}, unit)

	doc := &registry.Document{Version: 1, Targets: []registry.Target{{
		Name: h.Name, OS: registry.OSLinux, SSH: registry.SSH{Address: h.Addr, User: "root"},
		Services: []registry.Service{{
			Name: "stado", Unit: unit, Product: "stado", Program: "/usr/local/bin/stado",
			Args: []string{"host", "run", "--listen", fmt.Sprintf("%s:%d", h.Addr, port)},
			Env:  map[string]string{"STADO_STORE": "file://" + w.store, "STADO_INTERVAL": "1s", "STADO_HOST": h.Name},
		}},
	}}}
	st := w.openStore(t)
	if _, err := registry.Push(context.Background(), st, doc, 0, "keep journey"); err != nil {
		t.Fatal(err)
	}
	st.Close()

	tuned := "[Unit]\nDescription=stado, tuned\n\n[Service]\nExecStart=/usr/local/bin/stado host run --old-flag\nLimitNOFILE=65536\nMemoryMax=2G\n"
	if err := w.bed.WriteFile(h, "/etc/systemd/system/"+unit, []byte(tuned), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := w.bed.Exec(ctx, h, "systemctl", "daemon-reload"); err != nil {
		t.Fatalf("daemon-reload: %v %s", err, stderr)
	}
	if code, out, errOut := w.run(t, "service", "ensure", "stado", "--host", h.Name, "--reason", "reinstall the host process"); code != 0 {
		t.Fatalf("ensure: exit %d\n%s\n%s", code, out, errOut)
	}
	got, err := showProperties(ctx, w.bed, h, unit, "LimitNOFILE,MemoryMax,ExecStart,ActiveState")
	if err != nil {
		t.Fatal(err)
	}
	if got["LimitNOFILE"] != "65536" || got["MemoryMax"] != "2147483648" || strings.Contains(got["ExecStart"], "--old-flag") ||
		!strings.Contains(got["ExecStart"], "--listen") || got["ActiveState"] != "active" {
		t.Errorf("after ensure systemd reads %v: want the operator's limits and the declaration's command, active", got)
	}
	before, err := w.bed.ReadFile(h, "/etc/systemd/system/"+unit)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := w.run(t, "service", "ensure", "stado", "--host", h.Name, "--reason", "again", "--json")
	if code != 0 || !strings.Contains(out, `"unchanged"`) {
		t.Errorf("second ensure: exit %d, want the file unchanged\n%s\n%s", code, out, errOut)
	}
	after, err := w.bed.ReadFile(h, "/etc/systemd/system/"+unit)
	if err != nil || string(after) != string(before) {
		t.Errorf("the second ensure rewrote the file (%v):\n%s\n---\n%s", err, before, after)
	}
}

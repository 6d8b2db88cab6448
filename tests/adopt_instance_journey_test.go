package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/tests/testbed"
)

// TestAdoptOfATemplateInstanceRecordsTheInstanceAndEnsureRunsItFromItsOwnFile
// adopts an instance a host runs from a template (the instance is the port
// the sample listens on), through the stado binary over SSH: the declaration
// is complete and names the instance with its specifiers written out;
// ensure then installs the instance's own unit file, which systemd loads in
// place of the template, and the sample answers on the instance's port.
func TestAdoptOfATemplateInstanceRecordsTheInstanceAndEnsureRunsItFromItsOwnFile(t *testing.T) {
	t.Parallel()
	w := newWriteBed(t, 2)
	h := w.bed.Host(2)
	const template, instance, port = "stado-wj-tmpl@.service", "stado-wj-tmpl@18197.service", 18197
	ctx := journeyCtx(t)
	w.push(t, []testbed.Host{h})
	body := fmt.Sprintf("[Unit]\nDescription=sample on port %%i (%%n)\n\n[Service]\nExecStart=%s --addr %s:%%i\nRestart=always\n\n[Install]\nWantedBy=multi-user.target\n", sampleProgram, h.Addr)
	startHandWrittenUnit(t, w, h, instance, []handWritten{{"/etc/systemd/system/" + template, body}})

	complete, s, out := adoptThroughTheBinary(t, w, h, instance)
	addr := fmt.Sprintf("%s:%d", h.Addr, port)
	if !complete || s.Unit != instance || s.Name != "stado-wj-tmpl@18197" || s.Program != sampleProgram ||
		strings.Join(s.Args, " ") != "--addr "+addr || s.Description != "sample on port 18197 ("+instance+")" || s.UnitPath != "" {
		t.Fatalf("adopt of the instance: %s", out)
	}

	code, out, errOut := w.run(t, "service", "ensure", "stado-wj-tmpl@18197", "--host", h.Name, "--json")
	if code != 0 {
		t.Fatalf("ensure of the adopted instance: exit %d\n%s\n%s", code, out, errOut)
	}
	file, err := w.bed.ReadFile(h, "/etc/systemd/system/"+instance)
	if err != nil || strings.Contains(string(file), "%i") || !strings.Contains(string(file), addr) {
		t.Errorf("the instance's own file (%v):\n%s", err, file)
	}
	got, err := showProperties(ctx, w.bed, h, instance, "FragmentPath,ActiveState")
	if err != nil {
		t.Fatal(err)
	}
	if got["FragmentPath"] != "/etc/systemd/system/"+instance || got["ActiveState"] != "active" {
		t.Errorf("after ensure: %v, want active from the instance's own file", got)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		a, err := answer(addr)
		if err == nil && strings.HasPrefix(a, h.Name+" ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sample does not answer on %s: %v %q", addr, err, a)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// handWritten is a file an operator wrote on a host: path and content.
type handWritten struct{ path, content string }

// startHandWrittenUnit writes files on h as an operator would (a missing
// directory is made), reloads systemd and starts unit. Cleanup stops the
// unit and removes the files and the directories it made.
func startHandWrittenUnit(t *testing.T, w *writeBed, h testbed.Host, unit string, files []handWritten) {
	t.Helper()
	ctx := journeyCtx(t)
	cleanupUnits(t, w.bed, []testbed.Host{h}, unit)
	var made []string
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, f := range files {
			_, _, _ = w.bed.Exec(ctx, h, "rm", "-f", f.path)
		}
		for _, d := range made {
			_, _, _ = w.bed.Exec(ctx, h, "rm", "-rf", d)
		}
		_, _, _ = w.bed.Exec(ctx, h, "systemctl", "daemon-reload")
	})
	for _, f := range files {
		dir := path.Dir(f.path)
		if _, _, err := w.bed.Exec(ctx, h, "test", "-d", dir); err != nil {
			if _, stderr, err := w.bed.Exec(ctx, h, "mkdir", "-p", dir); err != nil {
				t.Fatalf("mkdir %s: %v %s", dir, err, stderr)
			}
			made = append(made, dir)
		}
		if err := w.bed.WriteFile(h, f.path, []byte(f.content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, argv := range [][]string{{"systemctl", "daemon-reload"}, {"systemctl", "start", unit}} {
		if _, stderr, err := w.bed.Exec(ctx, h, argv...); err != nil {
			t.Fatalf("%v: %v %s", argv, err, stderr)
		}
	}
}

// adoptThroughTheBinary runs service adopt UNIT --host H --json and reads
// its verdict and declaration; out is what it printed.
func adoptThroughTheBinary(t *testing.T, w *writeBed, h testbed.Host, unit string) (complete bool, s registry.Service, out string) {
	t.Helper()
	code, out, errOut := w.run(t, "service", "adopt", unit, "--host", h.Name, "--json")
	if code != 0 {
		t.Fatalf("adopt: exit %d\n%s\n%s", code, out, errOut)
	}
	var res struct {
		Complete bool             `json:"complete"`
		Service  registry.Service `json:"service"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	return res.Complete, res.Service, out
}

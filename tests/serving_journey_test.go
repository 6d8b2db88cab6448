package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
	"github.com/wisent/stado/tests/testbed"
)

// dirService is one declaration of a verify or serving journey with the
// directory port it is declared to answer on (0: no directory entry).
type dirService struct {
	name, unit string
	program    string
	args       []string
	port       int
}

// pushWithDirectory writes a registry naming hosts as targets, each
// declaring svcs, with a directory entry per (service, host) for every
// service with a port, at the host's own address.
func (w *writeBed) pushWithDirectory(t testing.TB, hosts []testbed.Host, svcs ...dirService) {
	t.Helper()
	doc := &registry.Document{Version: 1}
	for _, h := range hosts {
		tg := registry.Target{Name: h.Name, OS: registry.OSLinux, SSH: registry.SSH{Address: h.Addr, User: "root"}}
		for _, s := range svcs {
			args := make([]string, len(s.args))
			for i, a := range s.args {
				args[i] = strings.ReplaceAll(a, "ADDR", h.Addr)
			}
			tg.Services = append(tg.Services, registry.Service{Name: s.name, Unit: s.unit, Program: s.program, Args: args})
			if s.port > 0 {
				doc.Directory = append(doc.Directory, registry.DirectoryEntry{Service: s.name, Host: h.Name, Port: s.port})
			}
		}
		doc.Targets = append(doc.Targets, tg)
	}
	st := w.openStore(t)
	defer st.Close()
	_, meta, err := registry.Load(context.Background(), st)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	if _, err := registry.Push(context.Background(), st, doc, meta.Revision, "journey fixture"); err != nil {
		t.Fatal(err)
	}
}

// servingDoc is the --json result of service serving.
type servingDoc struct {
	Kind       string `json:"kind"`
	Serving    bool   `json:"serving"`
	Port       int    `json:"port"`
	Address    string `json:"address"`
	Listen     string `json:"listen"`
	PID        int    `json:"pid"`
	ExitCode   *int   `json:"exit_code"`
	StderrLine string `json:"stderr_line"`
	OtherPorts []struct {
		Address string `json:"address"`
		Port    int    `json:"port"`
	} `json:"other_ports"`
	Refusal *struct{ Code, Message string } `json:"refusal"`
}

func decodeServing(t *testing.T, out string) servingDoc {
	t.Helper()
	var d servingDoc
	if err := json.Unmarshal([]byte(out), &d); err != nil || d.Kind != "stado.service.serving" {
		t.Fatalf("not one serving document (%v):\n%s", err, out)
	}
	return d
}

func TestServingWaitProvesTheDeclaredPortOrRefusesWithTheEvidence(t *testing.T) {
	t.Parallel()
	w := newWriteBed(t, 1)
	h := w.bed.Host(1)
	const (
		listens   = "stado-sj-listens.service"
		exits     = "stado-sj-exits.service"
		elsewhere = "stado-sj-elsewhere.service"
		silent    = "stado-sj-silent.service"
	)
	cleanupUnits(t, w.bed, []testbed.Host{h}, listens, exits, elsewhere, silent)
	svcs := []dirService{
		{name: "sj-listens", unit: listens, program: sampleProgram, args: []string{"--addr", "ADDR:18301"}, port: 18301},
		{name: "sj-exits", unit: exits, program: "/bin/sh", args: []string{"-c", "echo 'sj-exits: cannot read /etc/sj.conf' >&2; exit 3"}, port: 18302},
		{name: "sj-elsewhere", unit: elsewhere, program: sampleProgram, args: []string{"--addr", "ADDR:18399"}, port: 18303},
		{name: "sj-silent", unit: silent, program: "/bin/sleep", args: []string{"infinity"}, port: 18304},
	}
	// Start the four without directory entries (ensure would make the
	// serving read itself), then declare their ports.
	noPorts := make([]dirService, len(svcs))
	for i, s := range svcs {
		s.port = 0
		noPorts[i] = s
	}
	w.pushWithDirectory(t, []testbed.Host{h}, noPorts...)
	for _, s := range svcs {
		if code, out, errOut := w.run(t, "service", "ensure", s.name, "--host", h.Name, "--settle", "200ms"); code != 0 && s.name != "sj-exits" {
			t.Fatalf("ensure %s: exit %d\n%s\n%s", s.name, code, out, errOut)
		}
	}
	w.pushWithDirectory(t, []testbed.Host{h}, svcs...)

	t.Run("listens", func(t *testing.T) {
		code, out, errOut := w.run(t, "service", "serving", "sj-listens", "--host", h.Name, "--wait", "--timeout", "20s", "--json")
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		d := decodeServing(t, out)
		if !d.Serving || d.Listen != h.Addr+":18301" || d.PID == 0 {
			t.Fatalf("serving %+v", d)
		}
		if got := mainPID(t, w.bed, h, listens); got != d.PID {
			t.Errorf("systemd says MainPID %d, serving reported pid %d", got, d.PID)
		}
		code, out, _ = w.run(t, "service", "serving", "sj-listens", "--host", h.Name, "--wait")
		if code != 0 || !strings.Contains(out, "serves "+h.Addr+":18301: pid ") {
			t.Errorf("text: exit %d\n%s", code, out)
		}
		// ensure of a unit that serves: the serving read came with the
		// ensure call, and none followed it
		code, out, errOut = w.run(t, "service", "ensure", "sj-listens", "--host", h.Name, "--json")
		var doc struct {
			Results []struct {
				OK      bool `json:"ok"`
				Serving *struct {
					Serving bool   `json:"serving"`
					Listen  string `json:"listen"`
					Reads   int    `json:"reads"`
				} `json:"serving"`
			} `json:"results"`
		}
		if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil || len(doc.Results) != 1 {
			t.Fatalf("ensure: exit %d %v\n%s\n%s", code, err, out, errOut)
		}
		if r := doc.Results[0]; !r.OK || r.Serving == nil || !r.Serving.Serving || r.Serving.Reads != 1 || r.Serving.Listen != h.Addr+":18301" {
			t.Errorf("ensure's serving read: %+v, want served on the reading the ensure call took\n%s", r.Serving, out)
		}
	})
	t.Run("exits 3", func(t *testing.T) {
		code, out, errOut := w.run(t, "service", "serving", "sj-exits", "--host", h.Name, "--wait", "--timeout", "20s", "--json")
		d := decodeServing(t, out)
		if code != 3 || d.Serving || d.Refusal == nil || d.Refusal.Code != "not_serving" {
			t.Fatalf("exit %d %+v\n%s", code, d, errOut)
		}
		if d.ExitCode == nil || *d.ExitCode != 3 || d.StderrLine != "sj-exits: cannot read /etc/sj.conf" {
			t.Errorf("evidence: exit code %v, stderr line %q", d.ExitCode, d.StderrLine)
		}
		if !strings.Contains(errOut, "exited 3") || !strings.Contains(errOut, "cannot read /etc/sj.conf") {
			t.Errorf("the refusal does not carry the evidence:\n%s", errOut)
		}
	})
	t.Run("listens elsewhere", func(t *testing.T) {
		code, out, errOut := w.run(t, "service", "serving", "sj-elsewhere", "--host", h.Name, "--wait", "--timeout", "20s", "--json")
		d := decodeServing(t, out)
		if code != 3 || d.Refusal == nil || d.Refusal.Code != "serving_elsewhere" || len(d.OtherPorts) != 1 || d.OtherPorts[0].Port != 18399 {
			t.Fatalf("exit %d %+v\n%s", code, d, errOut)
		}
		if !strings.Contains(d.Refusal.Message, h.Addr+":18399") {
			t.Errorf("the refusal does not name the port: %s", d.Refusal.Message)
		}
		// ensure makes the same read before it reports success
		code, out, errOut = w.run(t, "service", "ensure", "sj-elsewhere", "--host", h.Name, "--json")
		r := fanOutResults(t, out)[h.Name]
		if code != 1 || r.OK || r.Error == nil || r.Error.Stage != "serving" || !strings.Contains(r.Error.Message, "18399") {
			t.Errorf("ensure of a unit serving elsewhere: exit %d %+v\n%s", code, r, errOut)
		}
	})
	t.Run("never listens", func(t *testing.T) {
		code, out, errOut := w.run(t, "service", "serving", "sj-silent", "--host", h.Name, "--wait", "--timeout", "3s", "--json")
		d := decodeServing(t, out)
		if code != 3 || d.Refusal == nil || d.Refusal.Code != "serving_timeout" {
			t.Fatalf("exit %d %+v\n%s", code, d, errOut)
		}
		if !strings.Contains(d.Refusal.Message, fmt.Sprintf("%s:%d", h.Addr, 18304)) || !strings.Contains(d.Refusal.Message, "listens on no port") {
			t.Errorf("timeout refusal: %s", d.Refusal.Message)
		}
	})
	t.Run("port with wait is usage", func(t *testing.T) {
		code, _, errOut := w.run(t, "service", "serving", "sj-listens", "--host", h.Name, "--wait", "--port", "18301")
		if code != 2 || !strings.Contains(errOut, "no --port with --wait") {
			t.Errorf("exit %d\n%s", code, errOut)
		}
	})
}

package repair

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
)

// A register row written here reads back through the channel's recoveries
// verb (channel.ReadRegister) as the same JSON, field for field: the row
// the workstation reads over SSH is the row the host reads locally.
func TestRegisterRowsCrossTheChannelUnchanged(t *testing.T) {
	exit := 3
	at := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
	full := Recovery{
		State: RecoveryAttempted, When: at, Service: "skarbiec", Host: "host2", Unit: "skarbiec.service", Scope: "system",
		Question:    beacon.Question{Method: "GET", Path: "/readyz", Body: json.RawMessage(`{"q":1}`), Endpoint: "127.0.1.2:8200", Repair: []string{"crypto"}},
		Declaration: &catalog.Answering{Method: "GET", Path: "/readyz", Body: json.RawMessage(`{"q":1}`), Repair: []string{"crypto"}},
		Since:       at.Add(-time.Minute), WaitedSeconds: 60, BoundSeconds: 45, HeldRequests: 2,
		Steps:    []StepReport{{Step: "crypto", Host: "host2", Argv: []string{"/bin/x"}, OK: false, ExitCode: &exit, Output: "locked", Code: CodeStepFailed, Refusal: "exit 3", At: at, ElapsedMS: 12}},
		Restart:  &RestartReport{Host: "host2", Unit: "skarbiec.service", Scope: "system", OK: true, Answer: "done", PID: 42, At: at, ElapsedMS: 30},
		Alerts:   []AlertOutcome{{Channel: "hook", Type: "webhook", OK: false, Answer: "HTTP 500", Cause: "server error"}},
		Complete: false, ObservedBy: "host1",
	}
	bare := Recovery{State: RecoveryAttempted, When: at, Service: "brama", Host: "host1", Unit: "brama.service", Steps: []StepReport{}, Alerts: []AlertOutcome{}}
	reg := HomeRegister(t.TempDir())
	for _, r := range []Recovery{full, bare} {
		if err := reg.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	if want := filepath.Join(filepath.Dir(filepath.Dir(reg.Path)), channel.RegisterFile); reg.Path != want {
		t.Fatalf("register at %s, the channel reads %s", reg.Path, want)
	}
	local, err := reg.Read()
	if err != nil {
		t.Fatal(err)
	}
	remote, err := channel.ReadRegister(reg.Path)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(local)
	b, _ := json.Marshal(remote)
	if !bytes.Equal(a, b) {
		t.Fatalf("the channel's rows differ from the register's:\nrepair  %s\nchannel %s", a, b)
	}
}

package registry_test

import (
	"testing"

	"github.com/wisent/stado/registry"
)

// Changing a cloned document's services, alerts and directory leaves the
// source as it was (each service is cloned whole, by Service.Clone).
func TestClonedDocumentChangesLeaveItsSourceAlone(t *testing.T) {
	src := &registry.Document{Version: 1,
		Directory: []registry.DirectoryEntry{{Service: "web", Host: "h", Port: 80, Callers: []string{"a"}}},
		Targets: []registry.Target{{Name: "h", OS: registry.OSLinux,
			Alerts: []registry.AlertChannel{{Name: "ops", Command: &registry.CommandAlert{Argv: []string{"/bin/alert"}}}},
			Services: []registry.Service{{Name: "web", Unit: "web.service", Program: "/bin/web", Args: []string{"x"}, Env: map[string]string{"A": "1"},
				UnitSettings: registry.UnitSettings{ExecStartPre: []string{"/bin/pre"}}}}}}}
	c := src.Clone()
	c.Directory[0].Callers[0] = "b"
	c.Targets[0].Alerts[0].Command.Argv[0] = "/bin/other"
	s := &c.Targets[0].Services[0]
	s.Args[0], s.Env["A"], s.ExecStartPre[0] = "y", "2", "/bin/other"
	o := src.Targets[0]
	if src.Directory[0].Callers[0] != "a" || o.Alerts[0].Command.Argv[0] != "/bin/alert" ||
		o.Services[0].Args[0] != "x" || o.Services[0].Env["A"] != "1" || o.Services[0].ExecStartPre[0] != "/bin/pre" {
		t.Fatalf("changing the clone changed the source: %+v", src)
	}
}

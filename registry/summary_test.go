package registry_test

import (
	"errors"
	"testing"

	"github.com/wisent/stado/registry"
)

func TestSummarizeAppliesSSHDefaultsAndFlagsIncompleteDeclarations(t *testing.T) {
	d := &registry.Document{Version: 1, Targets: []registry.Target{
		{Name: "h1", OS: registry.OSLinux, Alerts: []registry.AlertChannel{{Name: "ops"}}, Services: []registry.Service{
			{Name: "brama", Unit: "brama.service", Program: "/usr/bin/brama"},
			{Name: "legacy", Unit: "legacy.service", UnitPath: "/etc/systemd/system/legacy.service", IncompleteReason: "two ExecStart lines"},
		}},
		{Name: "h2", OS: registry.OSLinux, SSH: registry.SSH{Address: "10.0.0.2", Port: 2222, User: "ops"}},
	}}
	s := registry.Summarize(d)
	h1, h2 := s.Targets[0], s.Targets[1]
	// defaults for h1, the declared values for h2
	if h1.Address != "h1" || h1.Port != 22 || h1.User != "root" || h2.Address != "10.0.0.2" || h2.Port != 2222 || h2.User != "ops" {
		t.Errorf("targets %+v %+v", h1, h2)
	}
	if h1.Services[0].Status != registry.StatusDeclared || h1.Services[1].Status != registry.StatusIncomplete ||
		h1.Services[1].IncompleteReason != "two ExecStart lines" || s.Incomplete != 1 || len(h1.Alerts) != 1 {
		t.Errorf("services %+v, incomplete %d", h1.Services, s.Incomplete)
	}
	// empty lists, never null
	if s.Directory == nil || h2.Services == nil {
		t.Error("a nil list in the summary")
	}
}

func TestReadDocumentNamesTheSourceOfEveryViolation(t *testing.T) {
	if d, err := registry.ReadDocument([]byte("version: 1\n"), "ok.yaml"); err != nil || d.Version != 1 {
		t.Fatalf("valid: %v", err)
	}
	_, err := registry.ReadDocument([]byte("version: 7\n"), "seven.yaml")
	var ve *registry.ValidationError
	if !errors.As(err, &ve) || ve.Source != "seven.yaml" || !errors.Is(err, registry.ErrInvalid) {
		t.Fatalf("invalid: %v", err)
	}
	if _, err := registry.ReadDocument([]byte("version: [\n"), "broken.yaml"); !errors.Is(err, registry.ErrInvalid) {
		t.Fatalf("unparsable: %v", err)
	}
}

package local_test

import (
	"context"
	"testing"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
)

func TestVerifyOnAnotherOSIsRefusedBeforeTheInitSystem(t *testing.T) {
	h := refusedHost(t, t.TempDir())
	req := channel.VerifyRequest{OS: "darwin", Services: []channel.VerifyService{{Service: registry.Service{Name: "api", Unit: "api.service", Program: "/bin/api"}}}}
	if _, err := h.Verify(context.Background(), req); code(err) != refusal.OSMismatch {
		t.Errorf("verify for darwin on linux: %v", err)
	}
}

package registry_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/tests/testbed"
)

// TestLargestFleetFitsTheParseBudget: 10,000 targets of 20 services, the
// biggest legitimate document (the fleet scripts/bench-etcd.sh seeds),
// parses and validates in its stored JSON form.
func TestLargestFleetFitsTheParseBudget(t *testing.T) {
	if testing.Short() {
		testbed.Unavailable(t, "-short is set: this test builds and parses a 28 MB document")
	}
	d := &registry.Document{Version: 1}
	for i := 0; i < registry.MaxTargets; i++ {
		tg := registry.Target{
			Name: fmt.Sprintf("host%05d", i+1),
			SSH:  registry.SSH{Address: fmt.Sprintf("10.%d.%d.%d", i/65536, i/256%256, i%256)},
			OS:   registry.OSLinux,
		}
		for j := 0; j < 20; j++ {
			name := fmt.Sprintf("svc%02d", j)
			tg.Services = append(tg.Services, registry.Service{
				Name: name, Unit: name + ".service", Program: "/usr/local/bin/" + name,
				Args: []string{"serve", "--listen", fmt.Sprintf("127.0.0.1:%d", 9000+j)}, Product: name,
			})
		}
		d.Targets = append(d.Targets, tg)
	}
	data, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	back, err := registry.Parse(data, "fleet")
	if err != nil {
		t.Fatalf("%d-byte fleet: %v", len(data), err)
	}
	if err := registry.Validate(back); err != nil {
		t.Fatal(err)
	}
}

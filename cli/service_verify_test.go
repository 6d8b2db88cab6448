package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wisent/stado/channel/channeltest"
	"github.com/wisent/stado/fleet"
)

func TestServiceVerifyPrintsTheResultAndNamesTheStageOfAHostItCannotRead(t *testing.T) {
	dir := writeStore(t, fixtureDoc)
	home := t.TempDir()
	code, out, errOut := runRegistryCLI(t, dir, "service", "verify", "api", "--json", "--known-hosts", filepath.Join(home, "known_hosts"),
		"--ssh-config", os.DevNull, "--identity", channeltest.WriteKey(t), "--no-keeper")
	if code != ExitFailure {
		t.Fatalf("exit %d, want %d: %s", code, ExitFailure, errOut)
	}
	var doc struct {
		Kind string `json:"kind"`
		fleet.VerifyResult
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if doc.Kind != "stado.service.verify" || len(doc.Hosts) != 1 {
		t.Fatalf("document %s", out)
	}
	if h := doc.Hosts[0]; h.Host != "host1" || h.Reachable || h.Stage != fleet.StageConnect || h.Services == nil {
		t.Errorf("host %+v", h)
	}
}

func TestServiceServingRefusesItsUsageBeforeConnecting(t *testing.T) {
	dir := writeStore(t, fixtureDoc)
	for _, tc := range []struct {
		name string
		args []string
		exit int
		msg  string
	}{
		// a caller-supplied port has no declared readiness to prove
		{"port with wait", []string{"service", "serving", "api", "--host", "host1", "--wait", "--port", "8080"}, ExitUsage, "no --port with --wait"},
		// the read is a wait
		{"no wait", []string{"service", "serving", "api", "--host", "host1"}, ExitUsage, "needs --wait"},
		// no directory entry: nothing declares the port
		{"no directory entry", []string{"service", "serving", "api", "--host", "host1", "--wait"}, ExitRefused, "no directory entry on host1"},
		// a service the host does not declare
		{"undeclared", []string{"service", "serving", "api", "--host", "host2", "--wait"}, ExitRefused, "not a registry-managed service on host2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runRegistryCLI(t, dir, append(tc.args, "--json")...)
			if code != tc.exit || !strings.Contains(errOut, tc.msg) {
				t.Errorf("exit %d, want %d with %q: %s", code, tc.exit, tc.msg, errOut)
			}
		})
	}
}

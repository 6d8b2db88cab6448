package units

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A hand-written declaration of the Oarbank agent (product: oarbank-agent,
// no settings of its own) renders with the catalog's Delegate=yes and
// KillMode=process, as `stado host unit render` shows it; one that sets
// kill_mode keeps its own value and still gets Delegate=yes.
func TestAHandWrittenAgentDeclarationRendersWithItsProductsSettings(t *testing.T) {
	for _, tc := range []struct {
		name, extra string
		want        []string
		absent      string
	}{
		{"bare", "", []string{"Delegate=yes", "KillMode=process"}, ""},
		{"overridden", "        kill_mode: control-group\n", []string{"Delegate=yes", "KillMode=control-group"}, "KillMode=process"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "version: 1\ntargets:\n  - name: node1\n    os: linux\n    ssh: {address: 10.0.0.1}\n    services:\n" +
				"      - name: agent\n        unit: oarbank-agent.service\n        program: /usr/local/bin/oarbank-agent\n" +
				"        args: [run]\n        env: {OARBANK_COORDINATOR: https://coord.example/}\n        product: oarbank-agent\n" + tc.extra
			file := filepath.Join(t.TempDir(), "fleet.yaml")
			if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := RenderFromFile(file, "node1", "agent", "", t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), "\n"+w+"\n") {
					t.Errorf("rendered unit lacks %s:\n%s", w, out)
				}
			}
			if tc.absent != "" && strings.Contains(string(out), tc.absent) {
				t.Errorf("rendered unit carries %s:\n%s", tc.absent, out)
			}
		})
	}
}

// A declaration of the stado host process (product: stado) renders as a
// notify service with the catalog's watchdog; a declaration's own
// watchdog_sec wins, and the type stays the product's.
func TestTheHostProcessRendersAsANotifyServiceWithAWatchdog(t *testing.T) {
	for _, tc := range []struct {
		name, extra string
		want        []string
		absent      string
	}{
		{"bare", "", []string{"Type=notify", "WatchdogSec=2min"}, ""},
		{"overridden", "        watchdog_sec: 4s\n", []string{"Type=notify", "WatchdogSec=4s"}, "WatchdogSec=2min"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "version: 1\ntargets:\n  - name: node1\n    os: linux\n    ssh: {address: 10.0.0.1}\n    services:\n" +
				"      - name: stado\n        unit: stado.service\n        program: /usr/local/bin/stado\n" +
				"        args: [host, run]\n        env: {STADO_STORE: \"file:///var/lib/stado/store\"}\n        product: stado\n" + tc.extra
			file := filepath.Join(t.TempDir(), "fleet.yaml")
			if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := RenderFromFile(file, "node1", "stado", "", t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), "\n"+w+"\n") {
					t.Errorf("rendered unit lacks %s:\n%s", w, out)
				}
			}
			if tc.absent != "" && strings.Contains(string(out), tc.absent) {
				t.Errorf("rendered unit carries %s:\n%s", tc.absent, out)
			}
		})
	}
}

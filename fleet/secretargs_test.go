package fleet_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/fleet"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
)

// TestShowMasksSecretArgsAndTheRenderKeepsThem: service show (text and
// JSON) prints a secret argument as the mask unless --show-values, and the
// rendered unit carries it as declared either way.
func TestShowMasksSecretArgsAndTheRenderKeepsThem(t *testing.T) {
	svc := registry.Service{Name: "web", Unit: "web.service", Program: "/usr/bin/web",
		Args: []string{"--token", "s3cret-token", "--port", "80"}, SecretArgs: []int{1}}
	doc := &registry.Document{Version: 1, Targets: []registry.Target{{Name: "h1", OS: registry.OSLinux, Services: []registry.Service{svc}}}}
	if err := registry.Validate(doc); err != nil {
		t.Fatal(err)
	}
	f := &fleet.Fleet{Doc: doc, Catalog: &catalog.Catalog{}}
	res, err := f.Show("web", false)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(res)
	text := strings.Join(res.Lines(), "\n")
	for _, out := range []string{string(js), text} {
		if strings.Contains(out, "s3cret-token") {
			t.Errorf("service show carries the secret argument:\n%s", out)
		}
		if !strings.Contains(out, fleet.Mask) || !strings.Contains(out, "--port") {
			t.Errorf("service show lacks the mask or the other arguments:\n%s", out)
		}
	}
	shown, _ := f.Show("web", true)
	if got := shown.Declarations[0].Service.Args[1]; got != "s3cret-token" {
		t.Errorf("--show-values shows %q", got)
	}
	if doc.Targets[0].Services[0].Args[1] != "s3cret-token" {
		t.Fatal("show changed the document")
	}
	plain := svc
	plain.SecretArgs = nil
	a, err1 := units.Render(svc, registry.OSLinux, "")
	b, err2 := units.Render(plain, registry.OSLinux, "")
	if err1 != nil || err2 != nil || !bytes.Equal(a, b) || !bytes.Contains(a, []byte("s3cret-token")) {
		t.Fatalf("render with secret_args differs or lacks the argument (%v, %v):\n%s\n---\n%s", err1, err2, a, b)
	}
}

package catalog

import (
	"reflect"
	"strings"
	"testing"

	"github.com/wisent/stado/registry"
)

func yes() *bool { b := true; return &b }

// A hand-written declaration naming the agent gets the product's settings
// for its OS under its own: what it leaves out is filled in, what it sets
// stays, and a declaration naming no product is left alone.
func TestAProductsSettingsMergeUnderADeclarationNamingIt(t *testing.T) {
	c := Shipped()
	for _, tc := range []struct {
		name string
		os   string
		in   registry.UnitSettings
		want registry.UnitSettings
	}{
		// nothing of its own: the product's settings, exactly
		{"bare linux", registry.OSLinux, registry.UnitSettings{}, registry.UnitSettings{Delegate: yes(), KillMode: "process"}},
		// its own settings kept beside the product's
		{"own user kept", registry.OSLinux, registry.UnitSettings{User: "oarbank"},
			registry.UnitSettings{User: "oarbank", Delegate: yes(), KillMode: "process"}},
		// an explicit override wins
		{"override wins", registry.OSLinux, registry.UnitSettings{KillMode: "mixed"},
			registry.UnitSettings{Delegate: yes(), KillMode: "mixed"}},
		// launchd gets the launchd settings only
		{"bare darwin", registry.OSDarwin, registry.UnitSettings{}, registry.UnitSettings{AbandonProcessGroup: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := registry.Service{Name: "agent", Unit: "oarbank-agent.service", Program: "/usr/local/bin/oarbank-agent",
				Product: "oarbank-agent", UnitSettings: tc.in}
			got := c.WithProductSettings(s, tc.os)
			if !reflect.DeepEqual(got.UnitSettings, tc.want) {
				t.Fatalf("settings = %+v, want %+v", got.UnitSettings, tc.want)
			}
			if !reflect.DeepEqual(s.UnitSettings, tc.in) {
				t.Fatalf("the declaration passed in was changed: %+v", s.UnitSettings)
			}
		})
	}
	plain := registry.Service{Name: "agent", Unit: "oarbank-agent.service", Program: "/usr/local/bin/oarbank-agent"}
	if got := c.WithProductSettings(plain, registry.OSLinux); !reflect.DeepEqual(got, plain) {
		t.Fatalf("a declaration naming no product changed: %+v", got.UnitSettings)
	}
}

// The agent's catalog entry marks kill_mode as safety-relevant: setting it
// to another value is reported, setting it to the product's value or
// leaving it out is not, and delegate (not marked) is never reported.
func TestOverridingASafetyRelevantSettingIsReported(t *testing.T) {
	c := Shipped()
	no := false
	for _, tc := range []struct {
		name string
		us   registry.UnitSettings
		want []Override
	}{
		{"left out", registry.UnitSettings{}, nil},
		{"same value", registry.UnitSettings{KillMode: "process"}, nil},
		{"not marked", registry.UnitSettings{Delegate: &no}, nil},
		{"overridden", registry.UnitSettings{KillMode: "control-group"},
			[]Override{{Product: "oarbank-agent", Setting: "kill_mode", Want: "process", Got: "control-group"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := registry.Service{Name: "agent", Product: "oarbank-agent", UnitSettings: tc.us}
			if got := c.Overrides(s, registry.OSLinux); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Overrides = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// registry validate's warnings: each override of a safety-relevant
// setting at its field path, naming the product; none for a declaration
// that keeps the product's value.
func TestValidatedWarnsAtTheFieldPathOfAnOverriddenSafetySetting(t *testing.T) {
	d := &registry.Document{Version: 1, Targets: []registry.Target{{Name: "node1", OS: registry.OSLinux, Services: []registry.Service{
		{Name: "api", Unit: "api.service", Program: "/usr/bin/api"},
		{Name: "agent", Unit: "oarbank-agent.service", Product: "oarbank-agent", Program: "/usr/local/bin/oarbank-agent",
			UnitSettings: registry.UnitSettings{KillMode: "mixed"}},
	}}}}
	v := Shipped().Validated("fleet.yaml", d)
	if !v.Valid || len(v.Warnings) != 1 {
		t.Fatalf("validated %+v, want valid with one warning", v)
	}
	w := v.Warnings[0]
	if w.Code != "product_setting_overridden" || w.Path != "targets[0].services[1].kill_mode" || w.Host != "node1" || w.Service != "agent" ||
		!strings.Contains(w.Message, "oarbank-agent") || !strings.Contains(w.Message, "mixed") {
		t.Fatalf("warning %+v", w)
	}
	d.Targets[0].Services[1].KillMode = ""
	if v := Shipped().Validated("fleet.yaml", d); v.Warnings == nil || len(v.Warnings) != 0 {
		t.Fatalf("warnings %#v, want empty and not nil", v.Warnings)
	}
}

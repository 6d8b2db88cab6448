package declaration

import (
	"reflect"
	"testing"
)

// Under fills every field the declaration leaves unset from the base,
// keeps every field it sets, merges maps key by key with the declaration
// winning, and shares nothing with either side.
func TestUnitSettingsUnderKeepsWhatTheDeclarationSetsAndFillsTheRest(t *testing.T) {
	yes, no := true, false
	decl := UnitSettings{KillMode: "mixed", Delegate: &no,
		Limits: map[string]Limit{"nofile": {Soft: "1", Hard: "2"}}}
	base := UnitSettings{KillMode: "process", Delegate: &yes, User: "agent", After: []string{"network.target"},
		AbandonProcessGroup: true, Limits: map[string]Limit{"nofile": {Soft: "9", Hard: "9"}, "core": {Soft: "0", Hard: "0"}}}
	got := decl.Under(base)
	want := UnitSettings{KillMode: "mixed", Delegate: &no, User: "agent", After: []string{"network.target"},
		AbandonProcessGroup: true, Limits: map[string]Limit{"nofile": {Soft: "1", Hard: "2"}, "core": {Soft: "0", Hard: "0"}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Under = %+v, want %+v", got, want)
	}
	got.After[0] = "changed"
	got.Limits["core"] = Limit{}
	if base.After[0] != "network.target" || base.Limits["core"].Soft != "0" || len(decl.Limits) != 1 {
		t.Fatal("the result shares a slice or map with its inputs")
	}
}

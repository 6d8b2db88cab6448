package declaration_test

import (
	"strings"
	"testing"

	"github.com/wisent/stado/declaration"
	"github.com/wisent/stado/registry"
)

// A launchd label may hold '@' after a part's first character (Homebrew's
// versioned formulae), while every character that could reach a shell, a
// path or an option stays refused, and a systemd instance name is not taken
// for a label.
func TestLaunchdLabelsMayHoldAtSignsButNothingHostile(t *testing.T) {
	for _, ok := range []string{"homebrew.mxcl.postgresql@14", "homebrew.mxcl.mysql@8.0", "homebrew.mxcl.python@3.11", "com.example.my job"} {
		if err := declaration.CheckServiceUnit(registry.OSDarwin, ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []struct{ label, why string }{
		{"web@1.service", "systemd instance"},
		{"@x.example", "not a reverse-DNS"},
		{"com.example.@x", "not a reverse-DNS"},
		{"com.example.a@$(id)", "not a reverse-DNS"},
		{"com.example.a@b;c", "not a reverse-DNS"},
		{"com.example.a@b\tc", "not a reverse-DNS"},
		{"com.example.a@b ", "ending in a space"},
		// a space in what reads as a systemd unit name
		{"a b.service", "reads as a systemd unit name"},
		{"com.example.a@../b", "not a reverse-DNS"},
		{"com.example.a@b/c", "not a reverse-DNS"},
		{"-com.example.a@b", "not a reverse-DNS"},
		{"com.example.a@`b`", "not a reverse-DNS"},
	} {
		err := declaration.CheckUnitName(registry.OSDarwin, bad.label)
		if err == nil || !strings.Contains(err.Error(), bad.why) {
			t.Errorf("%q: %v, want a refusal saying %q", bad.label, err, bad.why)
		}
	}
}

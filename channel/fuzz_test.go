package channel

import (
	"errors"
	"reflect"
	"testing"
)

// FuzzParseCommand holds the grammar to two properties on any input: it
// never panics and refuses only with a *Refusal carrying a code, and
// whatever it accepts re-quotes to a line that parses to the same Command.
func FuzzParseCommand(f *testing.F) {
	for _, tt := range refusedCommands {
		if len(tt.original) <= 4096 { // the bound cases are covered by the table
			f.Add(tt.original)
		}
	}
	f.Fuzz(func(t *testing.T, original string) {
		cmd, err := ParseCommand(original)
		if err != nil {
			var r *Refusal
			if !errors.As(err, &r) || r.Code == "" || r.Message == "" {
				t.Fatalf("ParseCommand(%q) failed without a coded refusal: %v", original, err)
			}
			return
		}
		q, err := Quote(cmd.Argv())
		if err != nil {
			t.Fatalf("accepted %q but cannot quote its words %q: %v", original, cmd.Argv(), err)
		}
		again, err := ParseCommand(q)
		if err != nil {
			t.Fatalf("accepted %q, re-quoted as %q, which is refused: %v", original, q, err)
		}
		if !reflect.DeepEqual(again, cmd) {
			t.Fatalf("accepted %q as %#v, re-quoted %q parses as %#v", original, cmd, q, again)
		}
		if direct, err := ParseArgv(cmd.Argv()); err != nil || !reflect.DeepEqual(direct, cmd) {
			t.Fatalf("ParseArgv(%q) = %#v, %v; want %#v", cmd.Argv(), direct, err, cmd)
		}
	})
}

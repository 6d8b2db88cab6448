package beacon

import (
	"strings"
	"testing"
)

// The read half defines the verdicts: a beacon's state it does not know
// (or an empty one) reads unknown with the reason, and a beacon that is
// not one, or names another host, is unreadable.
func TestUnknownUnitStatesReadUnknownWithTheReason(t *testing.T) {
	for _, tc := range []struct {
		name, doc, state, reason, refused string
	}{
		// a known verdict passes through
		{"active", `{"kind":"stado.beacon","version":1,"host":"h","units":[{"unit":"a.service","state":"active"}]}`, "active", "", ""},
		// a masked unit (systemd) is a verdict of its own, not unknown
		{"masked", `{"kind":"stado.beacon","version":1,"host":"h","units":[{"unit":"a.service","state":"masked"}]}`, "masked", "", ""},
		// an empty state
		{"empty", `{"kind":"stado.beacon","version":1,"host":"h","units":[{"unit":"a.service","state":""}]}`, "unknown", `state ""`, ""},
		// a state nobody defined
		{"invented", `{"kind":"stado.beacon","version":1,"host":"h","units":[{"unit":"a.service","state":"running-ish"}]}`, "unknown", `state "running-ish"`, ""},
		// a state carrying an escape sequence is quoted in the reason
		{"escape", `{"kind":"stado.beacon","version":1,"host":"h","units":[{"unit":"a.service","state":"\u001b[2J"}]}`, "unknown", `state "\x1b[2J"`, ""},
		// the read side's own unknown is not a publishable verdict either
		{"unknown itself", `{"kind":"stado.beacon","version":1,"host":"h","undeclared":[{"unit":"a.service","state":"unknown"}]}`, "unknown", `state "unknown"`, ""},
		// a beacon naming another host
		{"other host", `{"kind":"stado.beacon","version":1,"host":"h2"}`, "", "", `names host "h2"`},
		// another kind of document
		{"not a beacon", `{"kind":"stado.alert","version":1,"host":"h"}`, "", "", "is not stado.beacon"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := DecodeBeacon("h", []byte(tc.doc))
			if tc.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("err %v, want one saying %q", err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			rep := append(b.Units, b.Undeclared...)[0]
			if rep.State != tc.state || !strings.Contains(rep.Sentence, tc.reason) {
				t.Errorf("state %q sentence %q, want %q with %q", rep.State, rep.Sentence, tc.state, tc.reason)
			}
		})
	}
}

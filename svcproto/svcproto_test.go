package svcproto

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestStrictDecodingRefusesWhatIsNotOneStatusDocument(t *testing.T) {
	cases := []struct{ name, out, cause string }{
		{"empty", "", "printed nothing"},
		{"two documents", `{"running":true,"ready":true}{"running":true,"ready":true}`, "more than one"},
		{"no ready", `{"running":true}`, "no boolean ready"},
		{"string running", `{"running":"yes","ready":true}`, "not one JSON document"},
		{"array", `[true,true]`, "not one JSON document"},
		{"no running", `{"ready":false}`, "no boolean running"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := func(context.Context, []string, string, []string) ([]byte, error) { return []byte(tc.out), nil }
			_, err := ReadStatus(context.Background(), run, []string{"/x"}, OpReady, nil)
			var pe *Error
			if !errors.As(err, &pe) || pe.Op != OpReady || !strings.Contains(pe.Cause, tc.cause) {
				t.Fatalf("%v, want op ready cause ~%q", err, tc.cause)
			}
		})
	}
}

func TestAnOperationPastItsTimeoutIsUnreadable(t *testing.T) {
	testTimeout = 200 * time.Millisecond
	defer func() { testTimeout = 0 }()
	// sh -c 'sleep 5' status: the op lands in $0
	_, err := Run(context.Background(), []string{"/bin/sh", "-c", "sleep 5"}, OpStatus, nil)
	var pe *Error
	if !errors.As(err, &pe) || !strings.Contains(pe.Cause, "no answer within") {
		t.Fatalf("%v, want a timeout", err)
	}
}

package svcproto

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
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

// A protocol executable that leaves a process running in the background
// does not leave it behind stado: the operation's process group ends with
// the operation.
func TestProcessesAnOperationLeavesBehindAreEnded(t *testing.T) {
	pidFile := t.TempDir() + "/bg.pid"
	script := `sleep 300 </dev/null >/dev/null 2>&1 & echo $! > "` + pidFile + `"; echo '{"running":true,"ready":true}'`
	st, err := ReadStatus(context.Background(), func(ctx context.Context, argv []string, op string, env []string) ([]byte, error) {
		return Run(ctx, argv, op, env)
	}, []string{"/bin/sh", "-c", script}, OpStatus, nil)
	if err != nil || !st.Running {
		t.Fatalf("ReadStatus = %+v, %v", st, err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := time.Now().Add(10 * time.Second)
	for {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(stat), ") Z ") {
			return // gone, or a zombie waiting for its reaper
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the background process %d outlived its operation", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An answer larger than the bound is said to be too large, not mistaken for
// no answer or a broken one.
func TestAnAnswerPastTheBoundIsSaidToBeTooLarge(t *testing.T) {
	_, err := Run(context.Background(), []string{"/bin/sh", "-c", `head -c 3000000 /dev/zero | tr '\0' ' '; echo '{"running":true,"ready":true}'`}, OpStatus, nil)
	var pe *Error
	if !errors.As(err, &pe) || !strings.Contains(pe.Cause, "printed more than") {
		t.Fatalf("%v, want printed more than the bound", err)
	}
}

package repair

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func sampleRecovery(service string) Recovery {
	return Recovery{When: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC), Service: service, Host: "h1", Unit: service + ".service",
		Steps: []StepReport{}, Alerts: []AlertOutcome{}}
}

func TestMissingRegisterHoldsNoRecovery(t *testing.T) {
	recs, err := HomeRegister(t.TempDir()).Read()
	if err != nil || len(recs) != 0 {
		t.Fatalf("missing register: %v, %v; want empty and no error", recs, err)
	}
}

func TestRegisterLineThatIsNotARecoveryIsRefusedWithFileAndLine(t *testing.T) {
	cases := []struct {
		name string
		line string
		want string
	}{
		// not JSON at all
		{"garbage", "this is not json", "invalid character"},
		// JSON, but another document
		{"other kind", `{"kind":"stado.beacon","service":"a","host":"h1","when":"2030-01-02T03:04:05Z"}`, "kind is"},
		// a recovery without its service
		{"no service", `{"kind":"stado.recovery","host":"h1","when":"2030-01-02T03:04:05Z"}`, "no service"},
		// a field no recovery has
		{"unknown field", `{"kind":"stado.recovery","service":"a","host":"h1","when":"2030-01-02T03:04:05Z","bogus":1}`, "bogus"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reg := HomeRegister(t.TempDir())
			if err := reg.Append(sampleRecovery("first")); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(reg.Path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(c.line + "\n")
			f.Close()
			_, err = reg.Read()
			var le *LineError
			if !errors.As(err, &le) || le.File != reg.Path || le.Line != 2 || !strings.Contains(le.Error(), c.want) {
				t.Fatalf("got %v, want a *LineError at %s:2 naming %q", err, reg.Path, c.want)
			}
			if le.RefusalCode() != "register_unreadable" {
				t.Errorf("code %q", le.RefusalCode())
			}
		})
	}
}

func TestRegisterAppendsOldestFirstFromManyWriters(t *testing.T) {
	reg := HomeRegister(t.TempDir())
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				if err := reg.Append(sampleRecovery("svc")); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if err := reg.Append(sampleRecovery("last")); err != nil {
		t.Fatal(err)
	}
	recs, err := reg.Read()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 41 || recs[40].Service != "last" || recs[0].Kind != RecoveryKind || recs[0].State != RecoveryAttempted {
		t.Fatalf("read %d rows (last %q), want 41 ending with last", len(recs), recs[len(recs)-1].Service)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(reg.Path), ".*tmp-*"))
	if len(left) != 0 {
		t.Errorf("temp files left behind: %v", left)
	}
}

func TestRegisterAppendToReadOnlyDirectoryNamesTheOperationAndChangesNothing(t *testing.T) {
	home := t.TempDir()
	reg := HomeRegister(home)
	if err := reg.Append(sampleRecovery("kept")); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(reg.Path)
	readOnlyDir(t, filepath.Dir(reg.Path))
	err := reg.Append(sampleRecovery("lost"))
	var fe *FileError
	if !errors.As(err, &fe) || fe.Op == "" || !strings.HasPrefix(fe.File, filepath.Dir(reg.Path)) {
		t.Fatalf("got %v, want a *FileError naming op and file", err)
	}
	if r := fe.Refusal(); r.Cause == "" || strings.Contains(r.Cause, home) {
		t.Errorf("refusal cause %q: want the bare cause", r.Cause)
	}
	after, _ := os.ReadFile(reg.Path)
	if string(after) != string(before) {
		t.Errorf("the register changed after a failed append")
	}
}

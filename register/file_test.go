package register

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
		Steps: []StepResult{}, Alerts: []AlertOutcome{}}
}

func TestMissingRegisterHoldsNoRecovery(t *testing.T) {
	recs, err := Home(t.TempDir()).Read()
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
			reg := Home(t.TempDir())
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
	reg := Home(t.TempDir())
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
	if len(recs) != 41 || recs[40].Service != "last" || recs[0].Kind != Kind || recs[0].State != Attempted {
		t.Fatalf("read %d rows (last %q), want 41 ending with last", len(recs), recs[len(recs)-1].Service)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(reg.Path), ".*tmp-*"))
	if len(left) != 0 {
		t.Errorf("temp files left behind: %v", left)
	}
}

func TestRegisterThatCannotBeReadNamesTheOperationAndFile(t *testing.T) {
	home := t.TempDir()
	reg := Home(home)
	if err := os.MkdirAll(reg.Path, 0o700); err != nil { // a directory where the file should be
		t.Fatal(err)
	}
	_, err := reg.Read()
	var fe *FileError
	if !errors.As(err, &fe) || fe.Op != "read" || fe.File != reg.Path {
		t.Fatalf("read: %v, want a *FileError naming read and %s", err, reg.Path)
	}
	if c := fe.Cause(); c == "" || strings.Contains(c, home) {
		t.Errorf("cause %q: want the bare cause, without the path", c)
	}
	if err := reg.Append(sampleRecovery("lost")); !errors.As(err, &fe) || fe.Op != "read" {
		t.Fatalf("append: %v, want a *FileError naming read", err)
	}
}

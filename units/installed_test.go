package units

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/wisent/stado/declaration"
)

func TestCompareInstalledTellsMatchingDriftedAndAbsentFilesApart(t *testing.T) {
	dir := t.TempDir()
	s := declaration.Service{Name: "web", Unit: "web.service", Program: "/bin/sleep", Args: []string{"infinity"},
		UnitPath: filepath.Join(dir, "web.service")}
	rendered, err := Render(s, declaration.OSLinux, "")
	if err != nil {
		t.Fatal(err)
	}

	// no file yet: absent, and so drifted
	in, err := CompareInstalled(s, declaration.OSLinux, "")
	if err != nil || !in.Absent || !in.Drift || in.Path != s.UnitPath {
		t.Fatalf("absent: %+v, %v", in, err)
	}
	// the rendering's bytes: no drift
	if err := os.WriteFile(s.UnitPath, rendered, 0o644); err != nil {
		t.Fatal(err)
	}
	if in, err = CompareInstalled(s, declaration.OSLinux, ""); err != nil || in.Absent || in.Drift || string(in.Rendered) != string(rendered) {
		t.Fatalf("matching: %+v, %v", in, err)
	}
	// one line edited by hand: drifted
	if err := os.WriteFile(s.UnitPath, append(rendered, "# edited\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if in, err = CompareInstalled(s, declaration.OSLinux, ""); err != nil || in.Absent || !in.Drift {
		t.Fatalf("edited: %+v, %v", in, err)
	}
}

func TestCompareInstalledRefusesAnIncompleteDeclarationButStillSaysWhetherItsFileExists(t *testing.T) {
	s := declaration.Service{Name: "old", Unit: "old.service", UnitPath: filepath.Join(t.TempDir(), "old.service")}
	in, err := CompareInstalled(s, declaration.OSLinux, "")
	var inc *IncompleteError
	if !errors.As(err, &inc) || !in.Absent || !in.Drift {
		t.Fatalf("%+v, %v", in, err)
	}
}

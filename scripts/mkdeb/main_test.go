package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wisent/stado/tests/testbed"
)

func TestTheUnitIsTheCatalogsStadoProductForTheProgramGiven(t *testing.T) {
	u, err := renderUnit("/opt/stado/bin/stado", "etcd://127.0.0.1:2379/stado")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Type=notify", "WatchdogSec=2min", "ExecStart=/opt/stado/bin/stado host run", `Environment="STADO_STORE=etcd://127.0.0.1:2379/stado"`, "WantedBy=multi-user.target"} {
		if !strings.Contains(string(u), want) {
			t.Errorf("unit lacks %q:\n%s", want, u)
		}
	}
	again, _ := renderUnit("/opt/stado/bin/stado", "etcd://127.0.0.1:2379/stado")
	if !bytes.Equal(u, again) {
		t.Error("rendering twice gave different bytes")
	}
}

// stage writes a stand-in binary, two man pages and the three completion
// scripts, as the Makefile's stage target does with the real binary.
func stage(t *testing.T) debOptions {
	t.Helper()
	dir := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("bin/stado", "#!/bin/sh\necho stado\n")
	write("man/stado.1", ".TH STADO 1\n")
	write("man/stado-service.1", ".TH STADO-SERVICE 1\n")
	write("completions/stado", "complete -F _stado stado\n")
	write("completions/_stado", "#compdef stado\n")
	write("completions/stado.fish", "complete -c stado\n")
	return debOptions{Bin: filepath.Join(dir, "bin/stado"), ManDir: filepath.Join(dir, "man"), CompletionDir: filepath.Join(dir, "completions"),
		Version: "1.2.3", Commit: "abc1234", Arch: "amd64", OutDir: filepath.Join(dir, "dist")}
}

func TestThePackageHoldsTheBinaryUnitCompletionsAndManPages(t *testing.T) {
	o := stage(t)
	path, err := buildDeb(o)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(path) != "stado_1.2.3+gitabc1234_amd64.deb" {
		t.Errorf("package file %s", path)
	}
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		testbed.Unavailable(t, "dpkg-deb is not installed (make deps installs it): the package's contents are not read")
	}
	list, err := exec.Command("dpkg-deb", "-c", path).CombinedOutput()
	if err != nil {
		t.Fatalf("dpkg-deb -c: %v: %s", err, list)
	}
	for _, want := range []string{"-rwxr-xr-x root/root", "./usr/bin/stado", "./usr/lib/systemd/system/stado.service",
		"./usr/share/bash-completion/completions/stado", "./usr/share/zsh/vendor-completions/_stado",
		"./usr/share/fish/vendor_completions.d/stado.fish", "./usr/share/man/man1/stado.1.gz", "./usr/share/man/man1/stado-service.1.gz"} {
		if !strings.Contains(string(list), want) {
			t.Errorf("package lacks %s:\n%s", want, list)
		}
	}
	if strings.Contains(string(list), "/usr/local") {
		t.Errorf("a Debian package must not install under /usr/local:\n%s", list)
	}
	if v, err := exec.Command("dpkg-deb", "-f", path, "Version").Output(); err != nil || strings.TrimSpace(string(v)) != "1.2.3+gitabc1234" {
		t.Errorf("Version field %q (%v)", v, err)
	}
	x := t.TempDir()
	if b, err := exec.Command("dpkg-deb", "-x", path, x).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -x: %v: %s", err, b)
	}
	unit, _ := os.ReadFile(filepath.Join(x, "usr/lib/systemd/system/stado.service"))
	if want, _ := renderUnit(debBin, DefaultStore); !bytes.Equal(unit, want) {
		t.Errorf("packaged unit is not the rendered one:\n%s", unit)
	}
}

func TestAPackageWithoutManPagesIsRefused(t *testing.T) {
	o := stage(t)
	o.ManDir = t.TempDir()
	if _, err := buildDeb(o); err == nil || !strings.Contains(err.Error(), "no man pages") {
		t.Errorf("err %v", err)
	}
	o = stage(t)
	o.Commit = ""
	if _, err := buildDeb(o); err == nil || !strings.Contains(err.Error(), "--commit") {
		t.Errorf("err %v", err)
	}
}

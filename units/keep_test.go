package units

import (
	"strings"
	"testing"

	"howett.net/plist"

	"github.com/wisent/stado/declaration"
)

// stadoProduct is the stado host process as the catalog declares it.
func stadoProduct(goos string) declaration.Service {
	unit := "stado.service"
	if goos == declaration.OSDarwin {
		unit = "com.wisent.stado"
	}
	return declaration.Service{Name: "stado", Unit: unit, Product: "stado", Program: "/usr/local/bin/stado", Args: []string{"host", "run"},
		Env: map[string]string{"STADO_STORE": "file:///var/lib/stado/store"}}
}

// The writer of the host process's unit keeps what an operator added on
// the host (LimitNOFILE=, MemoryMax=, a drop-in-less [Install] alias) while
// every field the rendering declares is the rendering's: an old ExecStart
// and Environment are replaced, not doubled.
func TestRewritingAProductUnitKeepsTheInstalledLimitsAndTakesTheDeclaredFields(t *testing.T) {
	s := stadoProduct(declaration.OSLinux)
	rendered, err := RenderSystemd(s)
	if err != nil {
		t.Fatal(err)
	}
	installed := "[Unit]\nDescription=stado, tuned by hand\nX-Stado-Service=old-name\n\n" +
		"[Service]\nExecStart=/opt/old/stado host run --verbose\nEnvironment=STADO_STORE=file:///old\n" +
		"LimitNOFILE=65536\nMemoryMax=2G\nTasksMax=\\\n  4096\n\n" +
		"[Install]\nWantedBy=multi-user.target\nAlias=stado-host.service\n"
	out := KeepInstalled(s, declaration.OSLinux, rendered, []byte(installed))
	p, err := ParseSystemdFiles(out, "stado.service", nil)
	if err != nil || !p.Complete {
		t.Fatalf("the kept unit does not parse complete: %v %s\n%s", err, p.Reason, out)
	}
	if p.Service.Program != "/usr/local/bin/stado" || strings.Join(p.Service.Args, " ") != "host run" || p.Service.Env["STADO_STORE"] != "file:///var/lib/stado/store" {
		t.Errorf("the declared command and environment are not the rendering's:\n%s", out)
	}
	if l := p.Service.Limits["nofile"]; l.Soft != "65536" || l.Hard != "65536" {
		t.Errorf("LimitNOFILE was not kept: %+v\n%s", p.Service.Limits, out)
	}
	for _, want := range []string{"MemoryMax=2G\n", "TasksMax=4096\n", "Alias=stado-host.service\n", "Description=stado service stado\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("want %q in\n%s", want, out)
		}
	}
	for _, gone := range []string{"/opt/old", "file:///old", "tuned by hand", "old-name"} {
		if strings.Contains(string(out), gone) {
			t.Errorf("%q (declared by the rendering, or stado's bookkeeping) was kept:\n%s", gone, out)
		}
	}
	if again := KeepInstalled(s, declaration.OSLinux, rendered, out); string(again) != string(out) {
		t.Errorf("keeping over its own output changed it:\n%s\n---\n%s", out, again)
	}
	// Nothing to keep, a broken file, or an operator's own declaration:
	// the rendering as it is.
	if got := KeepInstalled(s, declaration.OSLinux, rendered, rendered); string(got) != string(rendered) {
		t.Errorf("an installed rendering changed the rendering:\n%s", got)
	}
	if got := KeepInstalled(s, declaration.OSLinux, rendered, []byte("[Service\nLimitNOFILE=1\n")); string(got) != string(rendered) {
		t.Errorf("a broken installed file was merged:\n%s", got)
	}
	own := s
	own.Product = ""
	if got := KeepInstalled(own, declaration.OSLinux, rendered, []byte(installed)); string(got) != string(rendered) {
		t.Errorf("a declaration of the document kept installed fields:\n%s", got)
	}
}

// The same on launchd: a SoftResourceLimits the operator set survives,
// ProgramArguments is the rendering's.
func TestRewritingAProductPlistKeepsTheInstalledLimits(t *testing.T) {
	s := stadoProduct(declaration.OSDarwin)
	rendered, err := RenderLaunchd(s, "/Users/op")
	if err != nil {
		t.Fatal(err)
	}
	installed := `<?xml version="1.0" encoding="UTF-8"?>
<plist version="1.0"><dict>
<key>Label</key><string>com.wisent.stado</string>
<key>ProgramArguments</key><array><string>/opt/old/stado</string></array>
<key>SoftResourceLimits</key><dict><key>NumberOfFiles</key><integer>65536</integer></dict>
<key>HardResourceLimits</key><dict><key>NumberOfFiles</key><integer>65536</integer></dict>
<key>StadoService</key><string>old-name</string>
</dict></plist>`
	out := KeepInstalled(s, declaration.OSDarwin, rendered, []byte(installed))
	var job map[string]any
	if _, err := plist.Unmarshal(out, &job); err != nil {
		t.Fatal(err)
	}
	args, _ := job["ProgramArguments"].([]any)
	soft, _ := job["SoftResourceLimits"].(map[string]any)
	if len(args) != 3 || args[0] != "/usr/local/bin/stado" || soft["NumberOfFiles"] != uint64(65536) || job["HardResourceLimits"] == nil {
		t.Errorf("kept plist:\n%s", out)
	}
	if _, kept := job["StadoService"]; kept {
		t.Errorf("stado's bookkeeping key was kept:\n%s", out)
	}
	if again := KeepInstalled(s, declaration.OSDarwin, rendered, out); string(again) != string(out) {
		t.Errorf("keeping over its own output changed it")
	}
}

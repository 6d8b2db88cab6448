package svcproto

import (
	"os"
	"os/user"
	"runtime"
	"slices"
	"strconv"
	"testing"

	"github.com/wisent/stado/declaration"
	"github.com/wisent/stado/tests/testbed"
)

// Without module, bundle or data directory declared, the module is the
// directory after modules/ in the executable's path and the bundle root is
// that directory; an executable outside any modules/ directory names the
// service as its module and runs in the directory above its bin/.
func TestAnInvocationsDefaultsComeFromTheExecutablesPlace(t *testing.T) {
	for _, tc := range []struct {
		exec, module, dir string
	}{
		{"/opt/oarbank/modules/colima/bin/colima-service", "colima", "/opt/oarbank/modules/colima"},
		{"/opt/tools/bin/svc", "worker", "/opt/tools"},
		{"/opt/tools/svc", "worker", "/opt/tools"},
	} {
		s := declaration.Service{Name: "worker", Protocol: &declaration.ServiceProtocol{Exec: []string{tc.exec}}}
		env, opts, err := Invocation(s, Node{ID: "n1", OS: declaration.OSLinux, Path: "/bin"})
		if err != nil {
			t.Fatal(err)
		}
		if opts.Dir != tc.dir || opts.Credential != nil {
			t.Errorf("%s: dir %q credential %v, want %q and none", tc.exec, opts.Dir, opts.Credential, tc.dir)
		}
		data := declaration.DefaultModuleDataRoot + "/" + tc.module
		for _, want := range []string{"OARBANK_MODULE=" + tc.module, "OARBANK_MODULE_DATA=" + data,
			"OARBANK_SETTINGS_FILE=" + data + "/settings.json", "OARBANK_PLATFORM=linux-" + runtime.GOARCH, "OARBANK_NODE_ID=n1"} {
			if !slices.Contains(env, want) {
				t.Errorf("%s: environment lacks %s: %v", tc.exec, want, env)
			}
		}
	}
}

// The protocol's variables come after the declaration's env, so a
// declared OARBANK_SERVICE cannot stand in for the protocol's.
func TestTheProtocolsVariablesWinOverADeclaredOne(t *testing.T) {
	env := Environment{Service: "real"}.Environ("/bin", map[string]string{"OARBANK_SERVICE": "fake", "A": "1"})
	if i, j := slices.Index(env, "OARBANK_SERVICE=fake"), slices.Index(env, "OARBANK_SERVICE=real"); i < 0 || j < i {
		t.Fatalf("environment %v: the protocol's OARBANK_SERVICE must come last", env)
	}
}

// The account this process runs as needs no switch; an unknown one is an
// error naming it.
func TestCredentialOfNamesAnUnknownAccountAndSkipsOurOwn(t *testing.T) {
	me, err := user.LookupId(strconv.Itoa(os.Geteuid()))
	if err != nil {
		testbed.Unavailable(t, "this process's account has no name: %v", err)
	}
	if c, err := CredentialOf(me.Username); err != nil || c != nil {
		t.Fatalf("CredentialOf(%s) = %v, %v; want nil, nil", me.Username, c, err)
	}
	if _, err := CredentialOf("no-such-account-stado"); err == nil {
		t.Fatal("an unknown account was accepted")
	}
}

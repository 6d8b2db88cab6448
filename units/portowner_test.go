package units

import "testing"

func TestDecodeProcAddr(t *testing.T) {
	for _, tc := range []struct {
		in   string
		addr string
		port int
	}{
		{"0100007F:1F90", "127.0.0.1", 8080},                                      // IPv4 loopback
		{"0201017F:0016", "127.1.1.2", 22},                                        // a testbed host's address
		{"00000000000000000000000001000000:0050", "[0:0:0:0:0:0:0:1]", 80},        // IPv6 loopback
		{"0000000000000000FFFF00000100007F:01BB", "[0:0:0:0:0:ffff:7f00:1]", 443}, // v4-mapped
	} {
		addr, port, ok := decodeProcAddr(tc.in)
		if !ok || addr != tc.addr || port != tc.port {
			t.Errorf("decodeProcAddr(%q) = %q %d %v, want %q %d", tc.in, addr, port, ok, tc.addr, tc.port)
		}
	}
}

func TestUnitOfCgroup(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"0::/system.slice/brama.service\n", "brama.service"},                          // unified
		{"12:cpu:/x\n1:name=systemd:/system.slice/ssh.service\n0::/\n", "ssh.service"}, // hybrid
		{"0::/user.slice/user-0.slice/session-4.scope\n", "session-4.scope"},           // a login
		{"0::/system.slice/brama.service/worker\n", "brama.service"},                   // a sub-cgroup
		{"0::/\n", ""}, // no unit
		{"9:name=systemd:/\n1:cpu:/\n0::/system.slice/ssh.service\n", "ssh.service"}, // a unified systemd in a hybrid host's namespaces (the testbed)
	} {
		if got := unitOfCgroup([]byte(tc.in)); got != tc.want {
			t.Errorf("unitOfCgroup(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestUnitDiff(t *testing.T) {
	old := "[Unit]\nDescription=a\n[Service]\nExecStart=/bin/a\n"
	new := "[Unit]\nDescription=a\n[Service]\nExecStart=/bin/b\nRestart=always\n"
	want := "--- /p\n+++ /p\n [Unit]\n Description=a\n [Service]\n-ExecStart=/bin/a\n+ExecStart=/bin/b\n+Restart=always\n"
	if got := Diff("/p", old, new); got != want {
		t.Errorf("diff:\n%s\nwant:\n%s", got, want)
	}
	if got := Diff("/p", new, new); got != "" {
		t.Errorf("diff of equal files %q", got)
	}
	if got := Diff("/p", "", "x\n"); got != "--- /dev/null\n+++ /p\n+x\n" {
		t.Errorf("diff from nothing %q", got)
	}
}

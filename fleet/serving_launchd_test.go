package fleet_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/channel/local"
	"github.com/wisent/stado/fleet"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
)

// macRunner is a Mac as its outputs show it: each argv (joined by spaces)
// answered with a file of units/testdata (recorded or written after the
// documented format: the READMEs there say which).
type macRunner struct {
	t     *testing.T
	files map[string]string
	mu    chan struct{}
	ran   []string
}

func (r *macRunner) Run(_ context.Context, argv []string) ([]byte, error) {
	r.mu <- struct{}{}
	defer func() { <-r.mu }()
	key := strings.Join(argv, " ")
	r.ran = append(r.ran, key)
	f, ok := r.files[key]
	if !ok {
		return nil, &units.ExitError{Argv: argv, Code: 113, Stderr: "Could not find service \"x\" in domain for port"}
	}
	data, err := os.ReadFile(filepath.Join("..", "units", "testdata", f))
	if err != nil {
		r.t.Fatal(err)
	}
	return data, nil
}

const launchdServingDoc = `version: 1
directory:
  - {service: web, host: mac1, port: 4211}
  - {service: jobs, host: mac1, port: 4301}
  - {service: wrapped, host: mac1, port: 8080, address: 127.0.0.1}
  - {service: agent, host: mac2, port: 9090, address: 127.0.0.1}
  - {service: agent, host: mac3, port: 9090, address: 127.0.0.1}
targets:
  - name: mac1
    os: darwin
    ssh: {address: 127.0.0.1}
    services:
      - {name: web, unit: com.example.web, program: /usr/local/bin/node}
      - {name: jobs, unit: com.example.jobs, program: /usr/local/bin/node}
      - {name: wrapped, unit: com.example.wrapped, program: /bin/sh}
  - name: mac2
    os: darwin
    launchd_domain: gui/501
    ssh: {address: 127.0.0.1, user: me}
    services:
      - {name: agent, unit: com.example.agent, program: /Users/me/bin/agent, scope: user}
  - name: mac3
    os: darwin
    ssh: {address: 127.0.0.1, user: me}
    services:
      - {name: agent, unit: com.example.agent, program: /Users/me/bin/agent, scope: user}
`

// The acceptance cases of port ownership on macOS: the serving wait over
// a darwin host whose launchctl, lsof and ps answer with the outputs of
// units/testdata. A job owns its directory port when the socket's process
// is the job's main pid (launchctl print, in the target's declared
// domain) or below it (ps).
func TestServingOnLaunchdReadsOwnershipThroughTheJobsProcessTree(t *testing.T) {
	lsof := strings.Join(append([]string{units.LsofPath}, units.LsofArgs...), " ")
	ps := strings.Join(append([]string{units.PsPath}, units.PsArgs...), " ")
	for _, tc := range []struct {
		name, host, service string
		files               map[string]string
		serving             bool
		code                refusal.Code // the refusal when not serving
		pid                 int
		listen              string
	}{
		// a listening job: node, the job's main process, holds *:4211
		// (recorded lsof, with ESTABLISHED lines of the same process)
		{"listening job", "mac1", "web", map[string]string{
			"/bin/launchctl print system/com.example.web": "launchctl/running-system-node-4211.txt",
			lsof: "lsof/node-listen-and-established-portracker.txt", ps: "ps/axo-portracker-nodes.txt"},
			true, "", 56079, "[::]:4211"},
		// a job listening elsewhere: its node holds *:4302, and *:4301 is
		// another process's (the same recording)
		{"job listening elsewhere", "mac1", "jobs", map[string]string{
			"/bin/launchctl print system/com.example.jobs": "launchctl/running-system-node-4302.txt",
			lsof: "lsof/node-listen-and-established-portracker.txt", ps: "ps/axo-portracker-nodes.txt"},
			false, fleet.CodeServingElsewhere, 0, ""},
		// a job with children: its main process is a shell, its child
		// node holds 127.0.0.1:8080
		{"job whose child listens", "mac1", "wrapped", map[string]string{
			"/bin/launchctl print system/com.example.wrapped": "launchctl/running-system-wrapper-sh.txt",
			lsof: "lsof/field-wrapper-child-listens.txt", ps: "ps/axo-wrapper-child.txt"},
			true, "", 713, "127.0.0.1:8080"},
		// a user agent in gui/501, the target's declared launchd_domain
		{"user agent in gui/501", "mac2", "agent", map[string]string{
			"/bin/launchctl print gui/501/com.example.agent": "launchctl/running-gui501-agent.txt",
			lsof: "lsof/field-gui501-agent.txt", ps: "ps/axo-gui501-agent.txt"},
			true, "", 1812, "127.0.0.1:9090"},
		// the same agent on a target that declares no domain is read in
		// gui/<uid> of the login user (502 here), where launchd does not
		// hold it: not serving, whatever listens
		{"user agent without the declared domain", "mac3", "agent", map[string]string{
			"/bin/launchctl print gui/501/com.example.agent": "launchctl/running-gui501-agent.txt",
			lsof: "lsof/field-gui501-agent.txt", ps: "ps/axo-gui501-agent.txt"},
			false, fleet.CodeNotServing, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &macRunner{t: t, files: tc.files, mu: make(chan struct{}, 1)}
			home := t.TempDir()
			acct := units.Account{Name: "me", UID: 501, Home: home}
			h := &local.Host{GOOS: registry.OSDarwin, Home: home, Ports: units.LsofPorts{Runner: r},
				Manager: func(_ context.Context, scope string) (units.Manager, func(), error) {
					return units.LaunchdFor(r, scope, "", units.Account{Name: "me", UID: 502, Home: home}), func() {}, nil
				},
				DomainManager: func(_ context.Context, scope, domain string) (units.Manager, func(), error) {
					return units.LaunchdFor(r, scope, domain, acct), func() {}, nil
				}}
			doc, err := registry.Parse([]byte(launchdServingDoc), "fleet.yaml")
			if err != nil {
				t.Fatal(err)
			}
			f := &fleet.Fleet{Doc: doc, Connect: func(registry.Target) channel.Host { return h }}
			clock := &fakeClock{now: time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC)}
			res, err := f.WaitServing(context.Background(), fleet.ServingOptions{Name: tc.service, Host: tc.host, Timeout: 5 * time.Second, Now: clock.Now, After: clock.After})
			if tc.serving {
				if err != nil || !res.Serving || res.PID != tc.pid || res.Listen != tc.listen {
					t.Fatalf("want serving by pid %d on %s: %+v %v", tc.pid, tc.listen, res, err)
				}
				return
			}
			var re *refusal.Error
			if !errors.As(err, &re) || re.Code != tc.code || res == nil || res.Serving {
				t.Fatalf("want %s: %+v %v", tc.code, res, err)
			}
			if tc.code == fleet.CodeServingElsewhere && (len(res.OtherPorts) != 1 || res.OtherPorts[0].Port != 4302 || res.OtherPorts[0].PID != 66450) {
				t.Errorf("other ports %+v, want the job's *:4302", res.OtherPorts)
			}
		})
	}
}

// service restart of a user agent acts in its target's declared launchd
// domain (gui/501 on mac2), and in the login user's own gui domain where
// the target declares none (mac3).
func TestRestartActsInTheTargetsDeclaredLaunchdDomain(t *testing.T) {
	home := t.TempDir()
	var opened []string
	r := &macRunner{t: t, files: map[string]string{
		"/bin/launchctl print gui/501/com.example.agent":        "launchctl/running-gui501-agent.txt",
		"/bin/launchctl print gui/502/com.example.agent":        "launchctl/running-gui501-agent.txt",
		"/bin/launchctl kickstart -k gui/501/com.example.agent": "launchctl/running-gui501-agent.txt",
		"/bin/launchctl kickstart -k gui/502/com.example.agent": "launchctl/running-gui501-agent.txt",
	}, mu: make(chan struct{}, 1)}
	h := &local.Host{GOOS: registry.OSDarwin, Home: home,
		Manager: func(_ context.Context, scope string) (units.Manager, func(), error) {
			opened = append(opened, "own "+scope)
			return units.LaunchdFor(r, scope, "", units.Account{Name: "me", UID: 502, Home: home}), func() {}, nil
		},
		DomainManager: func(_ context.Context, scope, domain string) (units.Manager, func(), error) {
			opened = append(opened, "domain "+domain)
			return units.LaunchdFor(r, scope, domain, units.Account{Name: "me", UID: 501, Home: home}), func() {}, nil
		}}
	doc, err := registry.Parse([]byte(launchdServingDoc), "fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f := &fleet.Fleet{Doc: doc, Connect: func(registry.Target) channel.Host { return h }}
	for host, want := range map[string]string{"mac2": "gui/501", "mac3": "gui/502"} {
		opened, r.ran = nil, nil
		outs, err := f.Restart(context.Background(), fleet.RestartOptions{Name: "agent", Hosts: []string{host}}, nil)
		if err != nil || len(outs) != 1 || !outs[0].OK {
			t.Fatalf("%s: %+v %v", host, outs, err)
		}
		kick := "/bin/launchctl kickstart -k " + want + "/com.example.agent"
		if !slices.Contains(r.ran, kick) {
			t.Errorf("%s ran %v, want %s (opened %v)", host, r.ran, kick, opened)
		}
	}
}

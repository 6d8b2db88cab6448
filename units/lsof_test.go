package units

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func readTestdata(t *testing.T, dir, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// lsof outputs recorded from Macs (testdata/lsof/README.md) and written
// after the field form: each yields exactly its sockets in LISTEN.
func TestParseLsofReadsListeningSocketsOfRecordedMacOutputs(t *testing.T) {
	l := func(addr string, port, pid int, program string) PortListener {
		return PortListener{Listener: Listener{Address: addr, PID: pid, Program: program}, Port: port}
	}
	for _, tc := range []struct {
		file string
		want []PortListener
	}{
		// launchd itself holds a socket-activated job's port, on both families
		{"launchd-holds-5900-inspec.txt", []PortListener{
			l("[::]", 5900, 1, "launchd"), l("[::]", 5900, 1, "launchd"),
			l("0.0.0.0", 5900, 1, "launchd"), l("0.0.0.0", 5900, 1, "launchd")}},
		// ESTABLISHED lines of the same processes are not listeners
		{"node-listen-and-established-portracker.txt", []PortListener{
			l("[::]", 4211, 56079, "node"), l("[::]", 4302, 66450, "node"), l("[::]", 4301, 67460, "node")}},
		// without -P lsof prints service names: no port to read, nothing counted
		{"controlcenter-port-names-nextstrain.txt", nil},
		// OS X of 2009: the same columns
		{"ruby-ipv6-vim-ruby-debugger.txt", []PortListener{l("[::]", 39767, 5173, "ruby")}},
		// the field form LsofPorts runs, a process with two files
		{"field-wrapper-child-listens.txt", []PortListener{
			l("127.0.0.1", 8080, 713, "node"), l("[::1]", 5432, 901, "postgres"), l("127.0.0.1", 5432, 901, "postgres")}},
		{"field-gui501-agent.txt", []PortListener{l("127.0.0.1", 9090, 1812, "agent"), l("[::]", 9091, 1812, "agent")}},
	} {
		got, err := ParseLsof(readTestdata(t, "lsof", tc.file))
		if err != nil {
			t.Errorf("%s: %v", tc.file, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.file, got, tc.want)
		}
	}
}

// A command name with spaces (lsof +c0) stays whole; a field-form file
// in another state, or a peer, is not a listener; nothing is no error.
func TestParseLsofKeepsCommandsWithSpacesAndSkipsOtherStates(t *testing.T) {
	got, err := ParseLsof([]byte("COMMAND PID USER FD TYPE DEVICE SIZE/OFF NODE NAME\nGoogle Chrome He 812 me 30u IPv4 0xabc 0t0 TCP 127.0.0.1:9222 (LISTEN)\n"))
	if err != nil || len(got) != 1 || got[0].Program != "Google Chrome He" || got[0].PID != 812 || got[0].Port != 9222 {
		t.Errorf("table with spaces: %+v %v", got, err)
	}
	got, err = ParseLsof([]byte("p42\ncapi\nf3\ntIPv4\nn127.0.0.1:8080->127.0.0.1:5000\nTST=ESTABLISHED\nf4\ntIPv4\nn127.0.0.1:8081\nTST=CLOSED\n"))
	if err != nil || len(got) != 0 {
		t.Errorf("other states: %+v %v", got, err)
	}
	if got, err := ParseLsof(nil); err != nil || got != nil {
		t.Errorf("empty: %+v %v", got, err)
	}
}

// ps output, recorded (a header and a command column) and in the form
// LsofPorts runs, yields pid → parent; the descendants of a job's main
// process are its whole tree, grandchildren included, and nothing else.
func TestParsePsParentsAndDescendantsFollowTheJobsTree(t *testing.T) {
	rec, err := ParsePsParents(readTestdata(t, "ps", "pid-ppid-openclaw-daemon.txt"))
	if err != nil || !reflect.DeepEqual(rec, map[int]int{94203: 1}) {
		t.Errorf("recorded ps: %v %v", rec, err)
	}
	parents, err := ParsePsParents(readTestdata(t, "ps", "axo-wrapper-child.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Descendants(712, parents), map[int]bool{712: true, 713: true, 714: true}; !reflect.DeepEqual(got, want) {
		t.Errorf("tree of 712 = %v, want %v", got, want)
	}
	if got := Descendants(999, parents); !reflect.DeepEqual(got, map[int]bool{999: true}) {
		t.Errorf("a pid ps does not list is its own tree: %v", got)
	}
	if _, err := ParsePsParents([]byte("ps: illegal option\n")); err == nil {
		t.Error("output with no pid column read as a process table")
	}
}

// fileRunner answers each argv (joined by spaces) with a testdata file.
type fileRunner struct {
	t     *testing.T
	files map[string]string // argv → dir/name, or "exit1" for lsof's empty answer
	ran   []string
}

func (r *fileRunner) Run(_ context.Context, argv []string) ([]byte, error) {
	key := strings.Join(argv, " ")
	r.ran = append(r.ran, key)
	f, ok := r.files[key]
	switch {
	case !ok:
		return nil, errors.New("unexpected " + key)
	case f == "exit1":
		return nil, &ExitError{Argv: argv, Code: 1}
	}
	dir, name, _ := strings.Cut(f, "/")
	return readTestdata(r.t, dir, name), nil
}

var (
	lsofArgv = strings.Join(append([]string{LsofPath}, LsofArgs...), " ")
	psArgv   = strings.Join(append([]string{PsPath}, PsArgs...), " ")
)

// LsofPorts runs lsof and ps by absolute path with argv arrays and gives
// the job the sockets its process tree holds: a child's socket is the
// job's; another process's is not; lsof's exit 1 with nothing printed is
// nothing listening.
func TestLsofPortsAttributesAChildsSocketToTheJob(t *testing.T) {
	r := &fileRunner{t: t, files: map[string]string{lsofArgv: "lsof/field-wrapper-child-listens.txt", psArgv: "ps/axo-wrapper-child.txt"}}
	p := LsofPorts{Runner: r}
	ctx := context.Background()
	job := Job{Unit: "com.example.wrapped", PID: 712}
	ls, err := p.PortOwners(ctx, 8080, job)
	if err != nil || len(ls) != 1 || ls[0].Unit != job.Unit || ls[0].PID != 713 || ls[0].Program != "node" {
		t.Errorf("port 8080: %+v %v", ls, err)
	}
	ls, err = p.PortOwners(ctx, 5432, job)
	if err != nil || len(ls) != 2 || ls[0].Unit != "" || ls[1].Unit != "" {
		t.Errorf("port 5432 (postgres, not the job's): %+v %v", ls, err)
	}
	own, err := p.UnitListeners(ctx, job)
	if err != nil || len(own) != 1 || own[0].Port != 8080 {
		t.Errorf("the job's sockets: %+v %v", own, err)
	}
	if own, err := p.UnitListeners(ctx, Job{Unit: job.Unit}); err != nil || own != nil {
		t.Errorf("a job with no pid holds nothing: %+v %v", own, err)
	}
	for _, argv := range r.ran {
		if argv != lsofArgv && argv != psArgv {
			t.Errorf("ran %s", argv)
		}
	}
	r.files[lsofArgv] = "exit1"
	if ls, err := p.PortOwners(ctx, 8080, job); err != nil || len(ls) != 0 {
		t.Errorf("lsof exit 1: %+v %v", ls, err)
	}
}

// A socket launchd itself holds (pid 1, a socket-activated job's, as
// recorded) belongs to no job's process tree: a job whose directory port
// it is reads elsewhere, held by launchd, never owned.
func TestAPortLaunchdHoldsIsNoJobsOwnership(t *testing.T) {
	r := &fileRunner{t: t, files: map[string]string{lsofArgv: "lsof/launchd-holds-5900-inspec.txt", psArgv: "ps/axo-portracker-nodes.txt"}}
	ls, err := LsofPorts{Runner: r}.PortOwners(context.Background(), 5900, Job{Unit: "com.example.vnc", PID: 56079})
	if err != nil {
		t.Fatal(err)
	}
	state, on := PortOwnership("com.example.vnc", "127.0.0.1", ls)
	if state != PortElsewhere || len(on) != 4 || on[0].PID != 1 || on[0].Program != "launchd" {
		t.Errorf("%s %+v", state, on)
	}
}

// Every lsof and ps file is in testdata/lsof/README.md, recorded with its
// source or marked as written.
func TestEveryPortReaderTestdataFileNamesItsSource(t *testing.T) {
	readme := string(readTestdata(t, "lsof", "README.md"))
	for _, dir := range []string{"lsof", "ps"} {
		entries, err := os.ReadDir(filepath.Join("testdata", dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Name() != "README.md" && !strings.Contains(readme, "`"+dir+"/"+e.Name()+"`") {
				t.Errorf("%s/%s is not in testdata/lsof/README.md", dir, e.Name())
			}
		}
	}
}

// A verify reading of a launchd job (its port's owners and its own
// sockets) runs lsof and ps once each, not once per question.
func TestReadPortsRunsLsofAndPsOncePerReading(t *testing.T) {
	r := &fileRunner{t: t, files: map[string]string{lsofArgv: "lsof/node-listen-and-established-portracker.txt", psArgv: "ps/axo-portracker-nodes.txt"}}
	on, own, err := ReadPorts(context.Background(), LsofPorts{Runner: r}, 4301, Job{Unit: "com.example.jobs", PID: 66450})
	if err != nil || len(on) != 1 || on[0].PID != 67460 || on[0].Unit != "" || len(own) != 1 || own[0].Port != 4302 {
		t.Fatalf("owners %+v, own %+v, %v", on, own, err)
	}
	if len(r.ran) != 2 {
		t.Errorf("ran %v, want lsof and ps once each", r.ran)
	}
}

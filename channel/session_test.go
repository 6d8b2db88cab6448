package channel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

func TestASessionServesEveryCallThroughTheOneGrammar(t *testing.T) {
	host := &recordingHost{}
	var in bytes.Buffer
	for _, argv := range [][]string{{"version"}, {"id"}, {"session"}, {"unit-restart", "system", "a.service"}} {
		if err := writeSessionFrame(&in, sessionRequest{Argv: argv}); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	if code := Serve(context.Background(), "stado host channel session", &in, &out, &errb, host); code != ExitOK {
		t.Fatalf("session exit %d: %s", code, errb.String())
	}
	r := bufio.NewReader(&out)
	if hello, _ := r.ReadString('\n'); hello != SessionHello {
		t.Fatalf("hello %q", hello)
	}
	want := []struct {
		exit int
		kind string
	}{{ExitOK, KindResult}, {ExitRefused, KindRefusal}, {ExitRefused, KindRefusal}, {ExitOK, KindResult}}
	for i, w := range want {
		var resp sessionResponse
		if err := readSessionFrame(r, &resp); err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		var doc struct{ Kind string }
		if resp.Exit != w.exit || json.Unmarshal(resp.Stdout, &doc) != nil || doc.Kind != w.kind {
			t.Errorf("response %d: exit %d %s, want %d %s", i, resp.Exit, resp.Stdout, w.exit, w.kind)
		}
	}
	if _, err := r.ReadByte(); err != io.EOF {
		t.Errorf("more after the last response: %v", err)
	}
	if calls := host.Calls(); len(calls) != 2 || calls[0].Method != "Version" || calls[1].Method != "UnitRestart" {
		t.Errorf("host calls %+v", calls)
	}
}

func TestKeptCallsRideOneRemoteSession(t *testing.T) {
	f := newFixture(t)
	host := &recordingHost{}
	f.srv.serveChannel(host)
	k := startKeeper(t, KeeperConfig{})
	pool := NewPool(f.dialer())
	pool.Keeper = &KeeperClient{Socket: k.socket}
	defer pool.Close()
	c := &Client{Pool: pool, Target: f.srv.target("web1")}
	for i := range 3 {
		if _, err := c.UnitRestart(context.Background(), UnitRef{Scope: ScopeSystem, Unit: "a.service"}); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	// a refusal inside the session reads as a remote refusal, as it does
	// from its own execution
	_, err := c.UnitShow(context.Background(), ShowRequest{Scope: ScopeSystem, Units: []string{"com.example.x"}})
	if re := remoteErr(t, err, "web1", StageRemoteRefusal); re.ExitStatus != ExitRefused {
		t.Fatalf("refusal %+v", re)
	}
	if n := f.srv.commands.Load(); n != 1 {
		t.Fatalf("the server ran %d commands, want 1 session", n)
	}
	if calls := host.Calls(); len(calls) != 3 {
		t.Fatalf("host calls %+v", calls)
	}
}

func TestAHostWithoutSessionsIsCalledOneExecutionAtATime(t *testing.T) {
	f := newFixture(t)
	host := &recordingHost{}
	// an older remote program: it refuses the session verb as unknown
	f.srv.setHandler(func(cmd string, stdin io.Reader, stdout, stderr io.Writer) int {
		if strings.HasSuffix(strings.TrimSuffix(cmd, "'"), "session") {
			io.WriteString(stdout, `{"kind":"stado.channel.refusal","protocol":1,"code":"unknown_verb","message":"unknown verb"}`+"\n")
			return ExitRefused
		}
		return Serve(context.Background(), cmd, stdin, stdout, stderr, host)
	})
	k := startKeeper(t, KeeperConfig{})
	pool := NewPool(f.dialer())
	pool.Keeper = &KeeperClient{Socket: k.socket}
	defer pool.Close()
	c := &Client{Pool: pool, Target: f.srv.target("web1")}
	for i := range 2 {
		if _, err := c.UnitRestart(context.Background(), UnitRef{Scope: ScopeSystem, Unit: "a.service"}); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	// one refused session, then one execution per call (the refusal is
	// remembered for the connection)
	if n := f.srv.commands.Load(); n != 3 {
		t.Fatalf("the server ran %d commands, want 3", n)
	}
}

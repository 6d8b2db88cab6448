package channel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
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
		var resp SessionResponse
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

func TestASessionCarriesTheReleaseVerbsWithTheirRequestDocuments(t *testing.T) {
	host := &recordingHost{}
	var in bytes.Buffer
	calls := []sessionRequest{
		{Argv: []string{"release-activate"}, Stdin: []byte(`{"product":"brama","version":"1.4.3","scope":"system","unit":"brama.service","wait":30000000000,"mode":"apply"}`)},
		{Argv: []string{"release-state"}, Stdin: []byte(`{"units":{"brama":{"scope":"system","unit":"brama.service"}}}`)},
	}
	for _, c := range calls {
		if err := writeSessionFrame(&in, c); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	if code := Serve(context.Background(), "stado host channel session", &in, &out, &errb, host); code != ExitOK {
		t.Fatalf("session exit %d: %s", code, errb.String())
	}
	r := bufio.NewReader(&out)
	_, _ = r.ReadString('\n')
	for i := range calls {
		var resp SessionResponse
		if err := readSessionFrame(r, &resp); err != nil || resp.Exit != ExitOK {
			t.Fatalf("response %d: exit %d %v %s", i, resp.Exit, err, resp.Stderr)
		}
	}
	if got := host.Calls(); len(got) != 2 || got[0].Method != "ReleaseActivate" || got[1].Method != "ReleaseState" {
		t.Fatalf("host calls %+v", got)
	}
}

// keepingHost is a recordingHost that can keep what its calls open for a
// session, and records when it is asked to and when it lets go.
type keepingHost struct {
	recordingHost
	kept     int
	released int
	keptAt   []int // how many calls the host had seen at each keep and release
}

func (h *keepingHost) KeepForSession() func() {
	h.kept++
	h.keptAt = append(h.keptAt, len(h.Calls()))
	return func() {
		h.released++
		h.keptAt = append(h.keptAt, len(h.Calls()))
	}
}

func TestASessionKeepsWhatItsHostOpensFromItsFirstCallToItsEnd(t *testing.T) {
	host := &keepingHost{}
	var in bytes.Buffer
	for _, argv := range [][]string{{"version"}, {"unit-restart", "system", "a.service"}, {"unit-restart", "system", "b.service"}} {
		if err := writeSessionFrame(&in, sessionRequest{Argv: argv}); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	if code := Serve(context.Background(), "stado host channel session", &in, &out, &errb, host); code != ExitOK {
		t.Fatalf("session exit %d: %s", code, errb.String())
	}
	if host.kept != 1 || host.released != 1 || len(host.keptAt) != 2 || host.keptAt[0] != 0 || host.keptAt[1] != 3 {
		t.Errorf("kept %d, released %d, at calls %v; want one keep before the first call and one release after the third", host.kept, host.released, host.keptAt)
	}
	// a single call is no session: nothing is kept for it
	single := &keepingHost{}
	if code := ServeArgv(context.Background(), []string{"version"}, nil, &out, &errb, single); code != ExitOK {
		t.Fatalf("single call exit %d", code)
	}
	if single.kept != 0 {
		t.Errorf("a single call kept its host's managers %d times", single.kept)
	}
}

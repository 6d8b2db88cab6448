package repair

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/register"
	"github.com/wisent/stado/registry"
)

func TestStandingQuestionIsRepairedRestartedAlertedAndRecordedOnce(t *testing.T) {
	r := newRig(t, 1)
	f := r.add("hold", "fixture-hold", modeHold)

	if got := block(t, r.pass(), "hold"); got.State != beacon.AnswerAsked || got.Question.Endpoint == "" {
		t.Fatalf("first pass: %+v, want asked with an endpoint", got)
	}
	r.clock.Advance(500 * time.Millisecond)
	if got := block(t, r.pass(), "hold"); got.State != beacon.AnswerWaiting || got.WaitedSeconds != 0.5 {
		t.Fatalf("within the bound: %+v, want waiting 0.5s", got)
	}
	// one pass interval later the question has waited longer than the bound
	r.clock.Advance(time.Second)
	stood := block(t, r.pass(), "hold")
	if stood.State != beacon.AnswerStood || stood.BoundSeconds != 1 || stood.WaitedSeconds != 1.5 {
		t.Fatalf("past the bound: %+v, want stood, waited 1.5 of bound 1", stood)
	}
	if rec := recoveryOf(t, stood); rec.State != register.Running {
		t.Errorf("stood block carries recovery %q, want running", rec.State)
	}
	r.a.Idle()

	if _, err := os.Stat(r.marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the repair step did not remove the marker: %v", err)
	}
	if n := f.restartCount(); n != 1 {
		t.Fatalf("restarts = %d, want 1", n)
	}
	after := block(t, r.pass(), "hold")
	if after.State != beacon.AnswerAsked {
		t.Fatalf("after the recovery: %s, want a fresh question (asked)", after.State)
	}
	rec := recoveryOf(t, after)
	if rec.State != register.Attempted || !rec.Complete || len(rec.Steps) != 1 || !rec.Steps[0].OK || rec.Restart == nil || !rec.Restart.OK {
		t.Fatalf("recovery %+v, want a complete attempt: unmark ok, restart ok", rec)
	}
	r.settle("hold")
	r.clock.Advance(time.Second)
	done := block(t, r.pass(), "hold")
	if done.State != beacon.AnswerFinished || done.Finished.Answered == nil || !done.Finished.Answered.Successful {
		t.Fatalf("next pass: %+v, want finished successful", done)
	}
	r.settle("hold")
	if again := block(t, r.pass(), "hold"); len(again.Recovery) != 0 {
		t.Errorf("after a successful answer the episode still carries a recovery: %s", again.Recovery)
	}

	rows := r.recoveries()
	if len(rows) != 1 {
		t.Fatalf("register holds %d rows, want 1", len(rows))
	}
	row := rows[0]
	if row.Service != "hold" || row.Host != rigHost || row.Unit != "stado-test-hold.service" || row.HeldRequests != 0 ||
		row.Declaration == nil || row.Declaration.Path != "/work" || row.WaitedSeconds != 1.5 || row.BoundSeconds != 1 ||
		!row.Complete || len(row.Alerts) != 1 || !row.Alerts[0].OK || row.Restart.PID != 1001 {
		t.Errorf("register row incomplete: %+v", row)
	}
	alerts := r.hook.received()
	if len(alerts) != 1 {
		t.Fatalf("webhook got %d alerts, want 1", len(alerts))
	}
	mustContain(t, "alert summary", alerts[0].Summary, "repair unmark ok", "restart stado-test-hold.service done")
	if strings.Contains(strings.ToLower(alerts[0].Summary), "register") {
		t.Errorf("the alert claims something about the register: %q", alerts[0].Summary)
	}
}

func TestFastUnsuccessfulAnswerIsReportedWithItsBodyAndNeverRestarts(t *testing.T) {
	r := newRig(t, 1)
	f := r.add("sealed", "fixture-503", mode503)
	r.pass()
	for i := 0; i < 5; i++ {
		r.settle("sealed")
		r.clock.Advance(2 * time.Second) // longer than the bound, every time
		got := block(t, r.pass(), "sealed")
		if got.State != beacon.AnswerFinished || got.Finished.Answered == nil {
			t.Fatalf("pass %d: %+v, want finished answered", i, got)
		}
		ans := got.Finished.Answered
		if ans.Status != 503 || ans.Successful || ans.Detail != "vault sealed: canary item unreadable" {
			t.Fatalf("pass %d: answer %+v, want unsuccessful 503 with its body", i, ans)
		}
	}
	r.a.Idle()
	if n := f.restartCount(); n != 0 {
		t.Errorf("a service answering 503 was restarted %d times", n)
	}
	if rows := r.recoveries(); len(rows) != 0 {
		t.Errorf("register holds %d rows for a service that answers", len(rows))
	}
}

func TestRecoveredServiceStandingAgainInTheEpisodeIsAlreadyAttempted(t *testing.T) {
	r := newRig(t, 1)
	f := r.add("never", "fixture-never", modeNever)
	stand := func() *beacon.Answering {
		t.Helper()
		if got := block(t, r.pass(), "never"); got.State != beacon.AnswerAsked {
			t.Fatalf("want asked, got %s", got.State)
		}
		r.clock.Advance(2 * time.Second)
		got := block(t, r.pass(), "never")
		r.a.Idle()
		return got
	}
	if got := stand(); got.State != beacon.AnswerStood || got.AlreadyAttempted {
		t.Fatalf("first standing: %+v", got)
	}
	for i := 0; i < 2; i++ {
		got := stand()
		if got.State != beacon.AnswerStood || !got.AlreadyAttempted || recoveryOf(t, got).Restart == nil {
			t.Fatalf("standing again %d: %+v, want already_attempted with the last recovery", i, got)
		}
	}
	if n := f.restartCount(); n != 1 {
		t.Fatalf("restarted %d times in one episode, want 1", n)
	}
	// a successful answer ends the episode; a later standing recovers again
	f.setMode(modeOK)
	r.pass()
	r.settle("never")
	f.setMode(modeNever)
	if got := block(t, r.pass(), "never"); got.State != beacon.AnswerFinished || !got.Finished.Answered.Successful {
		t.Fatalf("want finished successful, got %+v", got)
	}
	r.clock.Advance(2 * time.Second)
	if got := block(t, r.pass(), "never"); got.State != beacon.AnswerStood || got.AlreadyAttempted {
		t.Fatalf("new episode: %+v, want a new recovery", got)
	}
	r.a.Idle()
	if n := f.restartCount(); n != 2 {
		t.Errorf("restarts = %d, want 2 (one per episode)", n)
	}
	if rows := r.recoveries(); len(rows) != 2 {
		t.Errorf("register holds %d rows, want 2", len(rows))
	}
}

func TestRefusedRepairStepIsReportedEverywhereAndRetried(t *testing.T) {
	r := newRig(t, 1)
	f := r.add("fail", "fixture-fail", modeNever)
	r.pass()
	r.clock.Advance(2 * time.Second)
	r.pass()
	r.a.Idle()
	got := block(t, r.pass(), "fail")
	rec := recoveryOf(t, got)
	if rec.Complete || len(rec.Steps) != 2 || rec.Steps[0].OK || rec.Steps[0].Code != CodeStepFailed || !rec.Steps[1].OK {
		t.Fatalf("recovery %+v, want step fail refused, unmark ok, incomplete", rec)
	}
	mustContain(t, "step refusal", rec.Steps[0].Refusal, "exited 3", "keyring still locked")
	alerts := r.hook.received()
	if len(alerts) != 1 {
		t.Fatalf("%d alerts, want 1", len(alerts))
	}
	mustContain(t, "alert", alerts[0].Summary, "incomplete", "repair fail refused", "keyring still locked", "repair unmark ok")
	rows := r.recoveries()
	if len(rows) != 1 || rows[0].Complete || rows[0].Steps[0].Code != CodeStepFailed {
		t.Fatalf("register %+v, want one incomplete row naming the refusal", rows)
	}
	// the attempt was not complete: the next standing reading retries
	if got.State != beacon.AnswerAsked {
		t.Fatalf("after the restart: %s, want a fresh question", got.State)
	}
	r.clock.Advance(2 * time.Second)
	again := block(t, r.pass(), "fail")
	if again.State != beacon.AnswerStood || again.AlreadyAttempted {
		t.Fatalf("after an incomplete attempt: %+v, want a retry", again)
	}
	r.a.Idle()
	if n := f.restartCount(); n != 2 {
		t.Errorf("restarts = %d, want 2", n)
	}
	if rows := r.recoveries(); len(rows) != 2 {
		t.Errorf("register holds %d rows, want 2", len(rows))
	}
}

func TestRefusedRestartKeepsTheQuestionAndIsRetriedOnTheNextPass(t *testing.T) {
	r := newRig(t, 1)
	f := r.add("never", "fixture-never", modeNever)
	r.mgr.refuse["stado-test-never.service"] = errors.New("restart stado-test-never.service: job finished failed")
	r.pass()
	r.clock.Advance(2 * time.Second)
	r.pass()
	r.a.Idle()
	got := block(t, r.pass(), "never")
	if got.State != beacon.AnswerStood || got.AlreadyAttempted {
		t.Fatalf("next pass after a refused restart: %+v, want stood and retried", got)
	}
	r.a.Idle()
	rows := r.recoveries()
	if len(rows) != 2 || rows[0].Restart.OK || rows[0].Complete || !strings.Contains(rows[0].Restart.Refusal, "job finished failed") {
		t.Fatalf("register %+v, want two rows with the refused restart", rows)
	}
	if f.restartCount() != 0 || f.openConns() != 1 {
		t.Errorf("restarts %d, open connections %d; want the question kept (1) and no restart", f.restartCount(), f.openConns())
	}
}

// readOnlyDir makes dir unwritable even for root (chattr +i), or by mode
// for other users.
func readOnlyDir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
			t.Fatalf("chattr +i %s: %v: %s", dir, err, out)
		}
		t.Cleanup(func() { exec.Command("chattr", "-i", dir).Run() })
		return
	}
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o700) })
}

func TestUnwritableRegisterIsARecordingRefusalAndNoSecondRestart(t *testing.T) {
	r := newRig(t, 1)
	f := r.add("never", "fixture-never", modeNever)
	readOnlyDir(t, r.home+"/.stado")
	r.pass()
	r.clock.Advance(2 * time.Second)
	r.pass()
	r.a.Idle()
	got := block(t, r.pass(), "never")
	if got.RecordingRefusal == nil {
		t.Fatalf("no recording_refusal in %+v", got)
	}
	rr := got.RecordingRefusal
	if rr.Op == "" || !strings.HasPrefix(rr.File, r.home+"/.stado/") || rr.Cause == "" {
		t.Errorf("recording refusal %+v does not name op, file and cause", rr)
	}
	if rec := recoveryOf(t, got); rec.Restart == nil || !rec.Restart.OK {
		t.Errorf("the beacon lost the observed restart: %+v", rec)
	}
	r.clock.Advance(2 * time.Second)
	again := block(t, r.pass(), "never")
	if again.State != beacon.AnswerStood || !again.AlreadyAttempted || again.RecordingRefusal == nil {
		t.Fatalf("standing again: %+v, want already_attempted still naming the recording refusal", again)
	}
	r.a.Idle()
	if n := f.restartCount(); n != 1 {
		t.Errorf("restarts = %d, want 1", n)
	}
}

func TestChangedEndpointOrQuestionRetiresTheQuestionInFlight(t *testing.T) {
	r := newRig(t, 5)
	old := r.add("svc", "fixture-never", modeNever)
	moved := startFixture(t, modeOK, r.marker)
	r.pass()
	waitFor(t, "the question to reach the old endpoint", func() bool { return old.openConns() == 1 })

	// the directory moves the service to another port mid-wait
	r.doc.Directory[0].Port = moved.port
	r.clock.Advance(time.Second)
	got := block(t, r.pass(), "svc")
	if got.State != beacon.AnswerAsked || !strings.HasSuffix(got.Question.Endpoint, ":"+itoa(moved.port)) || got.Finished != nil {
		t.Fatalf("after the port change: %+v, want a fresh question to the new port", got)
	}
	waitFor(t, "the old question to be cancelled", func() bool { return old.openConns() == 0 })
	r.settle("svc")
	if got := block(t, r.pass(), "svc"); got.State != beacon.AnswerFinished || !got.Finished.Answered.Successful {
		t.Fatalf("new endpoint: %+v, want finished successful", got)
	}

	// the catalog now asks another path: the answer of the old path is retired
	r.a.Catalog = siteCatalog(t, r.marker, `  - name: fixture-never2
    units: {systemd: stado-test-never2.service}
    program: /usr/local/bin/stado-answering-fixture
    answering: {method: GET, path: /v2/other}`)
	r.doc.Targets[0].Services[0].Product = "fixture-never2"
	got = block(t, r.pass(), "svc")
	if got.State != beacon.AnswerAsked || got.Question.Path != "/v2/other" || got.Finished != nil {
		t.Fatalf("after the path change: %+v, want a fresh question", got)
	}
}

func TestUnreadableEndpointIsSaidNeverGuessed(t *testing.T) {
	cases := []struct {
		name   string
		change func(d *registry.Document)
		want   string
	}{
		// the directory records no port
		{"no port", func(d *registry.Document) { d.Directory[0].Port = 0 }, "records no port"},
		// the directory places the service elsewhere
		{"other host", func(d *registry.Document) { d.Directory[0].Host = "h2" }, "not on this host"},
		// no directory entry at all
		{"no entry", func(d *registry.Document) { d.Directory = nil }, "no entry"},
		// no refresh interval: no bound
		{"no refresh", func(d *registry.Document) { d.ServiceResolver.RefreshSeconds = 0 }, "refresh_seconds"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, 1)
			f := r.add("svc", "fixture-never", modeNever)
			r.pass()
			waitFor(t, "the question", func() bool { return f.openConns() == 1 })
			c.change(r.doc)
			got := block(t, r.pass(), "svc")
			if got.State != beacon.AnswerUnreadable || !strings.Contains(got.Unreadable, c.want) {
				t.Fatalf("%+v, want unreadable naming %q", got, c.want)
			}
			waitFor(t, "the pending question to be retired", func() bool { return f.openConns() == 0 })
		})
	}
}

func TestChangedRepairStepsStartANewEpisode(t *testing.T) {
	r := newRig(t, 1)
	f := r.add("never", "fixture-never", modeNever)
	r.pass()
	r.clock.Advance(2 * time.Second)
	r.pass()
	r.a.Idle()
	r.pass()
	r.clock.Advance(2 * time.Second)
	if got := block(t, r.pass(), "never"); !got.AlreadyAttempted {
		t.Fatalf("want already_attempted, got %+v", got)
	}
	// the same question now declares a repair step
	r.a.Catalog = siteCatalog(t, r.marker, `  - name: fixture-never-repaired
    units: {systemd: stado-test-never-repaired.service}
    program: /usr/local/bin/stado-answering-fixture
    answering: {method: POST, path: /v1/chat/completions, body: {q: ping}, repair: [unmark]}`)
	r.doc.Targets[0].Services[0].Product = "fixture-never-repaired"
	r.pass()
	r.clock.Advance(2 * time.Second)
	got := block(t, r.pass(), "never")
	if got.State != beacon.AnswerStood || got.AlreadyAttempted {
		t.Fatalf("with new repair steps: %+v, want a new attempt", got)
	}
	r.a.Idle()
	if n := f.restartCount(); n != 2 {
		t.Errorf("restarts = %d, want 2", n)
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func itoa(n int) string { return fmtInt(n) }

// The host process is where a target's command alerts run: its own
// recovery gives the alert to the declared argv on stdin, and the register
// row keeps the command's exit beside the webhook's answer.
func TestTheHostProcessRunsItsOwnCommandAlert(t *testing.T) {
	r := newRig(t, 1)
	got := filepath.Join(t.TempDir(), "alert.json")
	r.doc.Targets[0].Alerts = append(r.doc.Targets[0].Alerts,
		registry.AlertChannel{Name: "pager", Command: &registry.CommandAlert{Argv: []string{"/usr/bin/tee", got}}})
	r.add("hold", "fixture-hold", modeHold)
	r.pass()
	r.clock.Advance(1500 * time.Millisecond)
	if stood := block(t, r.pass(), "hold"); stood.State != beacon.AnswerStood {
		t.Fatalf("past the bound: %+v, want stood", stood)
	}
	r.a.Idle()
	data, err := os.ReadFile(got)
	if err != nil || !strings.Contains(string(data), `"event":"recovery_attempted"`) || !strings.Contains(string(data), `"service":"hold"`) {
		t.Fatalf("the command alert got %q (%v)", data, err)
	}
	rows := r.recoveries()
	if len(rows) != 1 || len(rows[0].Alerts) != 2 || !rows[0].Alerts[0].OK ||
		rows[0].Alerts[1] != (register.AlertOutcome{Channel: "pager", Type: "command", OK: true, Answer: "exit 0"}) {
		t.Fatalf("register rows %+v, want the webhook and the command delivered", rows)
	}
}

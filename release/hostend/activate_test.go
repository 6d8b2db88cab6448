package hostend_test

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"aead.dev/minisign"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/release"
	"github.com/wisent/stado/release/hostend"
)

func TestActivationInstallsAnImmutableImageAndProvesAFreshPIDOnIt(t *testing.T) {
	f := newFixture(t)
	v1 := f.publish("1.0.0", "serve")
	res := f.activate("1.0.0")
	if res.Outcome != release.OutcomeActivated || res.Fetched != "store" {
		t.Fatalf("outcome %q fetched %q, want activated from the store", res.Outcome, res.Fetched)
	}
	img := release.ImagePath(f.root, digest(v1), product)
	a := res.Activation
	if a.PIDAfter == 0 || a.Exe != img || a.Serving != "brama.service owns port 8080" {
		t.Fatalf("activation evidence %+v, want a pid running %s and the serving sentence", a, img)
	}
	for path, want := range map[string]os.FileMode{img: 0o555, filepath.Dir(img): 0o555 | os.ModeDir} {
		if info, err := os.Stat(path); err != nil || info.Mode() != want {
			t.Fatalf("%s: mode %v (%v), want %v", path, info.Mode(), err, want)
		}
	}
	if target, _ := os.Readlink(release.CurrentLink(f.root, product)); target != img {
		t.Fatalf("current link names %q, want %s", target, img)
	}
	st := f.state().Products[product]
	if st.Active == nil || st.Active.SHA256 != digest(v1) || st.Backup != nil || st.Last.Outcome != release.OutcomeActivated {
		t.Fatalf("state %+v, want 1.0.0 active, no backup, last activated", st)
	}
	entries, _ := os.ReadDir(release.ImagesDir(f.root))
	if len(entries) != 1 {
		t.Fatalf("images/ holds %d entries, want the one image and no temporary directory", len(entries))
	}
}

func TestTheActiveImageBecomesTheExactBackupOfTheNext(t *testing.T) {
	f := newFixture(t)
	v1 := f.publish("1.0.0", "serve")
	v2 := f.publish("1.1.0", "serve")
	first := f.activate("1.0.0")
	res := f.activate("1.1.0")
	if res.Outcome != release.OutcomeActivated {
		t.Fatalf("outcome %q, want activated", res.Outcome)
	}
	a := res.Activation
	if a.PIDBefore != first.Activation.PIDAfter || a.PIDAfter == a.PIDBefore || a.Exe != release.ImagePath(f.root, digest(v2), product) {
		t.Fatalf("evidence %+v, want a fresh pid (before %d) on the 1.1.0 image", a, first.Activation.PIDAfter)
	}
	st := f.state().Products[product]
	if st.Backup == nil || st.Backup.SHA256 != digest(v1) || st.Backup.Version != "1.0.0" || st.Active.SHA256 != digest(v2) {
		t.Fatalf("state %+v, want 1.1.0 active and exactly 1.0.0 as backup", st)
	}
}

func TestAnImageAlreadyActiveAndRunningCostsNoRestartAndWritesNothing(t *testing.T) {
	f := newFixture(t)
	f.publish("1.0.0", "serve")
	f.activate("1.0.0")
	restarts, fetches := f.init.Restarts(), f.src.fetches
	before := treeHash(t, f.root)
	res := f.activate("1.0.0")
	if res.Outcome != release.OutcomeUnchanged || res.Fetched != "" {
		t.Fatalf("outcome %q fetched %q, want unchanged with nothing fetched", res.Outcome, res.Fetched)
	}
	if f.init.Restarts() != restarts || f.src.fetches != fetches {
		t.Fatalf("restarts %d→%d, fetches %d→%d: an unchanged activation restarted or fetched", restarts, f.init.Restarts(), fetches, f.src.fetches)
	}
	if after := treeHash(t, f.root); after != before {
		t.Fatalf("an unchanged activation wrote:\n%s\n---\n%s", before, after)
	}
}

func TestTheSameImageNotRunningIsRestartedWithoutReinstalling(t *testing.T) {
	f := newFixture(t)
	f.publish("1.0.0", "serve")
	f.activate("1.0.0")
	f.init.stop()
	fetches := f.src.fetches
	res := f.activate("1.0.0")
	if res.Outcome != release.OutcomeActivated || f.src.fetches != fetches {
		t.Fatalf("outcome %q after %d fetch(es), want activated from the installed image", res.Outcome, f.src.fetches-fetches)
	}
	if st := f.state().Products[product]; st.Backup != nil {
		t.Fatalf("backup %+v: an image is never its own backup", st.Backup)
	}
}

func TestEveryRefusedCheckLeavesTheReleaseTreeUnchanged(t *testing.T) {
	cases := []struct {
		name string
		// setup publishes what the request of 1.1.0 finds, with 1.2.0
		// active beforehand.
		setup  func(f *fixture) release.ActivateRequest
		want   refusal.Code
		phrase string
	}{
		{"no pinned key", func(f *fixture) release.ActivateRequest {
			f.publish("1.3.0", "serve")
			f.host.Keys = func() ([]minisign.PublicKey, error) { return nil, nil }
			return f.request("1.3.0")
		}, refusal.ReleaseNoKeys, "no release key"},
		{"a manifest signed by a key this host does not pin", func(f *fixture) release.ActivateRequest {
			_, other, _ := minisign.GenerateKey(rand.Reader)
			b := f.bytesOf("1.3.0", "serve")
			f.publishManifest("1.3.0", f.manifestOf("1.3.0", b), other)
			return f.request("1.3.0")
		}, refusal.ReleaseUntrusted, "no pinned key"},
		{"an unsigned manifest", func(f *fixture) release.ActivateRequest {
			f.publish("1.3.0", "serve")
			s := f.src.signed[key(product, "1.3.0", goos, goarch)]
			s.Signature = ""
			f.src.signed[key(product, "1.3.0", goos, goarch)] = s
			return f.request("1.3.0")
		}, refusal.ReleaseUnsigned, "no signature"},
		{"a manifest for another architecture", func(f *fixture) release.ActivateRequest {
			b := f.bytesOf("1.3.0", "serve")
			m := f.manifestOf("1.3.0", b)
			m.Arch = "arm64"
			f.publishManifest("1.3.0", m, f.priv)
			return f.request("1.3.0")
		}, refusal.ReleaseMismatch, "arm64"},
		{"a tampered chunk", func(f *fixture) release.ActivateRequest {
			b := f.publish("1.3.0", "serve")
			m := f.manifestOf("1.3.0", b)
			f.src.chunks[m.Chunks[1].SHA256][10] ^= 0xff
			return f.request("1.3.0")
		}, refusal.ReleaseTampered, "does not hold its digest"},
		{"bytes that are not the signed digest", func(f *fixture) release.ActivateRequest {
			b := f.bytesOf("1.3.0", "serve")
			m := f.manifestOf("1.3.0", b)
			m.SHA256 = digest([]byte("other bytes"))
			f.publishManifest("1.3.0", m, f.priv)
			return f.request("1.3.0")
		}, refusal.ReleaseDigest, "the signed manifest says"},
		{"an older version without a pin", func(f *fixture) release.ActivateRequest {
			f.publish("1.1.0", "serve")
			return f.request("1.1.0")
		}, refusal.ReleaseDowngrade, "older than the active 1.2.0"},
		{"an installed image whose file no longer has its digest", func(f *fixture) release.ActivateRequest {
			b := f.publish("1.3.0", "serve")
			img := release.ImagePath(f.root, digest(b), product)
			if err := os.MkdirAll(filepath.Dir(img), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(img, []byte("not the bytes"), 0o555); err != nil {
				t.Fatal(err)
			}
			return f.request("1.3.0")
		}, refusal.ReleaseImageCorrupt, "never rewritten"},
		{"a wait beyond the bound", func(f *fixture) release.ActivateRequest {
			f.publish("1.3.0", "serve")
			r := f.request("1.3.0")
			r.Wait = time.Hour
			return r
		}, refusal.InvalidDuration, "outside"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.publish("1.2.0", "serve")
			f.activate("1.2.0")
			req := tc.setup(f)
			restarts := f.init.Restarts()
			before := treeHash(t, f.root)
			_, err := f.host.Activate(context.Background(), req)
			if code := codeOf(t, err); code != tc.want || !strings.Contains(err.Error(), tc.phrase) {
				t.Fatalf("refusal %s %q, want %s naming %q", code, err, tc.want, tc.phrase)
			}
			if after := treeHash(t, f.root); after != before {
				t.Fatalf("the refusal changed the tree:\n%s\n---\n%s", before, after)
			}
			if f.init.Restarts() != restarts {
				t.Fatal("a refused activation restarted the unit")
			}
		})
	}
}

func TestAPinnedOlderVersionIsActivated(t *testing.T) {
	f := newFixture(t)
	f.publish("1.0.0", "serve")
	f.publish("1.1.0", "serve")
	f.activate("1.1.0")
	req := f.request("1.0.0")
	req.Pinned = true
	res, err := f.host.Activate(context.Background(), req)
	if err != nil || res.Outcome != release.OutcomeActivated {
		t.Fatalf("pinned downgrade: %q %v, want activated", res.Outcome, err)
	}
}

func TestAFailingImageIsRefusedWithItsEvidenceAndTheExactBackupServesAgain(t *testing.T) {
	f := newFixture(t)
	v2 := f.publish("1.1.0", "serve")
	v3 := f.publish("1.2.0", "exit3")
	good := f.activate("1.1.0")
	res, err := f.host.Activate(context.Background(), f.request("1.2.0"))
	if code := codeOf(t, err); code != refusal.ReleaseNotProven {
		t.Fatalf("refusal %s %v, want release_not_proven", code, err)
	}
	msg := err.Error()
	for _, want := range []string{
		"brama.service: restart did not prove a fresh pid on the activated immutable image; ",
		"the unit is activating (auto-restart); ",
		"; brama.service runs no process: its last run exited 3 and its supervisor has started it 1 time(s)",
		"; its last stderr line: brama: cannot bind 127.0.0.1:8080",
		"; restored 1.1.0 (" + digest(v2)[:12] + "): pid ",
	} {
		if !strings.Contains(msg, want) {
			t.Fatalf("refusal %q does not say %q", msg, want)
		}
	}
	var re *refusal.Error
	if !errors.As(err, &re) || re.Details == nil {
		t.Fatalf("the refusal carries no result: %#v", err)
	}
	a := res.Activation
	if res.Outcome != release.OutcomeRestored || a.LastExit != 3 || a.Runs != 1 || a.Stderr != "brama: cannot bind 127.0.0.1:8080" {
		t.Fatalf("outcome %q evidence %+v, want restored with exit 3, run 1, the stderr line", res.Outcome, a)
	}
	img2 := release.ImagePath(f.root, digest(v2), product)
	r := a.Restored
	if r == nil || r.Version != "1.1.0" || r.PID == 0 || r.PID == good.Activation.PIDAfter || r.Exe != img2 || r.Serving == "" {
		t.Fatalf("restored proof %+v, want a fresh pid (not %d) on %s, serving", r, good.Activation.PIDAfter, img2)
	}
	if b, _ := os.ReadFile(img2); digest(b) != digest(v2) {
		t.Fatal("the backup image's bytes changed")
	}
	if target, _ := os.Readlink(release.CurrentLink(f.root, product)); target != img2 {
		t.Fatalf("current names %q, want the backup %s", target, img2)
	}
	st := f.state().Products[product]
	if st.Active.SHA256 != digest(v2) || st.Last.Outcome != release.OutcomeRestored || st.Last.SHA256 != digest(v3) || st.Last.Restored == nil {
		t.Fatalf("state %+v / last %+v, want 1.1.0 active and the restored evidence of 1.2.0", st, st.Last)
	}
}

func TestAFirstInstallThatFailsLeavesNoLinkAndRecordsTheFailure(t *testing.T) {
	f := newFixture(t)
	f.publish("1.0.0", "exit3")
	res, err := f.host.Activate(context.Background(), f.request("1.0.0"))
	if code := codeOf(t, err); code != refusal.ReleaseNotProven || !strings.Contains(err.Error(), "no previous image") {
		t.Fatalf("refusal %s %v, want release_not_proven with no previous image", code, err)
	}
	if _, lerr := os.Lstat(release.CurrentLink(f.root, product)); !os.IsNotExist(lerr) {
		t.Fatalf("current link left behind: %v", lerr)
	}
	st := f.state().Products[product]
	if res.Outcome != release.OutcomeFailed || st.Active != nil || st.Last == nil || st.Last.Outcome != release.OutcomeFailed {
		t.Fatalf("outcome %q state %+v, want failed with nothing active", res.Outcome, st)
	}
}

func TestWhenNeitherTheNewImageNorTheBackupServesTheRestoreFails(t *testing.T) {
	f := newFixture(t)
	f.publish("1.0.0", "serve")
	f.publish("1.1.0", "serve")
	f.activate("1.0.0")
	f.serves = false
	req := f.request("1.1.0")
	req.Wait = 3 * time.Second // long enough for a loaded machine to start the process; it never serves
	_, err := f.host.Activate(context.Background(), req)
	if code := codeOf(t, err); code != refusal.ReleaseRestoreFailed || !strings.Contains(err.Error(), "does not serve: nothing listens on port 8080") {
		t.Fatalf("refusal %s %v: a backup that does not serve either is release_restore_failed", code, err)
	}
	if st := f.state().Products[product]; st.Last.Outcome != release.OutcomeFailed || st.Active.Version != "1.0.0" {
		t.Fatalf("state %+v, want the failure recorded with the backup's link active", st)
	}
}

func TestPlanSaysWhatApplyWouldDoAndWritesNothing(t *testing.T) {
	f := newFixture(t)
	f.publish("1.0.0", "serve")
	req := f.request("1.0.0")
	req.Mode = hostend.ModePlan
	before := treeHash(t, f.root)
	res, err := f.host.Activate(context.Background(), req)
	if err != nil || res.Outcome != release.OutcomeWouldActivate {
		t.Fatalf("plan: %q %v, want would_activate", res.Outcome, err)
	}
	if treeHash(t, f.root) != before || f.init.Restarts() != 0 {
		t.Fatal("plan wrote or restarted")
	}
	f.activate("1.0.0")
	if res, err := f.host.Activate(context.Background(), req); err != nil || res.Outcome != release.OutcomeUnchanged {
		t.Fatalf("plan after apply: %q %v, want unchanged", res.Outcome, err)
	}
	f.publish("0.9.0", "serve")
	req.Version = "0.9.0"
	if _, err := f.host.Activate(context.Background(), req); codeOf(t, err) != refusal.ReleaseDowngrade {
		t.Fatalf("plan of a downgrade: %v, want release_downgrade", err)
	}
}

func TestWithoutAUnitTheImageIsInstalledAndSwitched(t *testing.T) {
	f := newFixture(t)
	b := f.publish("1.0.0", "serve")
	req := f.request("1.0.0")
	req.Unit, req.Port = "", 0
	res, err := f.host.Activate(context.Background(), req)
	if err != nil || res.Outcome != release.OutcomeInstalled || f.init.Restarts() != 0 {
		t.Fatalf("%q %v after %d restart(s), want installed without a restart", res.Outcome, err, f.init.Restarts())
	}
	if target, _ := os.Readlink(release.CurrentLink(f.root, product)); target != release.ImagePath(f.root, digest(b), product) {
		t.Fatalf("current names %q", target)
	}
}

func TestAUnitNotInstalledYetIsNotRestartedAndTheImageIsActive(t *testing.T) {
	f := newFixture(t)
	f.init.mu.Lock()
	f.init.missing = true
	f.init.mu.Unlock()
	b := f.publish("1.0.0", "serve")
	res, err := f.host.Activate(context.Background(), f.request("1.0.0"))
	if err != nil || res.Outcome != release.OutcomeInstalled || f.init.Restarts() != 0 {
		t.Fatalf("%q %v after %d restart(s), want installed without a restart", res.Outcome, err, f.init.Restarts())
	}
	if res.Activation == nil || !strings.Contains(res.Activation.Note, "service ensure starts the unit") {
		t.Fatalf("the activation does not say the unit is not installed: %+v", res.Activation)
	}
	if target, _ := os.Readlink(release.CurrentLink(f.root, product)); target != release.ImagePath(f.root, digest(b), product) {
		t.Fatalf("current names %q", target)
	}
}

func TestAStadoActivationIsProvenByABeaconOfTheNewVersion(t *testing.T) {
	f := newFixture(t)
	f.host.Poll = 10 * time.Millisecond
	var published string
	f.host.BeaconProof = func(ctx context.Context, since time.Time) (string, error) {
		if published == "" {
			return "", errors.New("no beacon since the restart")
		}
		return published, nil
	}
	// The proofs that succeed get the fixture's whole wait (a loaded
	// machine starts processes slowly); the one that must fail waits for
	// a beacon that never comes, so it gets a short one.
	stado := func(version string, wait ...time.Duration) release.ActivateRequest {
		r := f.request(version)
		r.Product, r.Unit, r.Port = "stado", "stado.service", 0
		if len(wait) > 0 {
			r.Wait = wait[0]
		}
		return r
	}
	for _, v := range []string{"1.0.0", "1.1.0"} {
		b := f.bytesOf(v, "serve")
		m := f.manifestOf(v, b)
		m.Product = "stado"
		mb := f.signedManifest(m)
		f.src.signed[key("stado", v, goos, goarch)] = mb
	}
	f.init.link = release.CurrentLink(f.root, "stado")
	published = "1.0.0"
	if res, err := f.host.Activate(context.Background(), stado("1.0.0")); err != nil || res.Outcome != release.OutcomeActivated {
		t.Fatalf("stado 1.0.0: %q %v", res.Outcome, err)
	}
	// The new stado runs but its beacon still says 1.0.0: not proven.
	_, err := f.host.Activate(context.Background(), stado("1.1.0", 2*time.Second))
	if code := codeOf(t, err); code != refusal.ReleaseNotProven || !strings.Contains(err.Error(), "beacon published since the restart says stado 1.0.0, not 1.1.0") {
		t.Fatalf("%s %v, want release_not_proven naming the beacon's version", code, err)
	}
	published = "1.1.0"
	if res, err := f.host.Activate(context.Background(), stado("1.1.0")); err != nil || res.Outcome != release.OutcomeActivated {
		t.Fatalf("stado 1.1.0 with its beacon: %q %v", res.Outcome, err)
	}
}

func TestStateSaysWhetherTheUnitRunsTheActiveImage(t *testing.T) {
	f := newFixture(t)
	b := f.publish("1.0.0", "serve")
	f.activate("1.0.0")
	res, err := f.host.State(context.Background(), release.StateRequest{Units: map[string]release.UnitOf{product: {Scope: scope, Unit: unit}}})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Running[product]
	if !r.OnActive || r.PID == 0 || r.Exe != release.ImagePath(f.root, digest(b), product) || res.State.Products[product].Active.Version != "1.0.0" {
		t.Fatalf("state %+v running %+v, want the unit on the active 1.0.0 image", res.State, r)
	}
	f.init.stop()
	res, _ = f.host.State(context.Background(), release.StateRequest{Units: map[string]release.UnitOf{product: {Scope: scope, Unit: unit}}})
	if r := res.Running[product]; r.OnActive || r.PID != 0 {
		t.Fatalf("a stopped unit reads %+v", r)
	}
}

func TestTheActiveImageThatDoesNotRunStaysActiveWithItsFailureRecorded(t *testing.T) {
	f := newFixture(t)
	b := f.publish("1.0.0", "exit3")
	req := f.request("1.0.0")
	req.Unit, req.Port = "", 0
	if _, err := f.host.Activate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	_, err := f.host.Activate(context.Background(), f.request("1.0.0"))
	if code := codeOf(t, err); code != refusal.ReleaseNotProven || !strings.Contains(err.Error(), "already active") {
		t.Fatalf("%s %v, want release_not_proven saying the image was already active", code, err)
	}
	st := f.state().Products[product]
	if st.Active == nil || st.Active.SHA256 != digest(b) || st.Last.Outcome != release.OutcomeFailed {
		t.Fatalf("state %+v, want the image still active and the failure recorded", st)
	}
	if target, _ := os.Readlink(release.CurrentLink(f.root, product)); target != release.ImagePath(f.root, digest(b), product) {
		t.Fatalf("current names %q", target)
	}
}

package hostend

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/release"
	"github.com/wisent/stado/units"
)

// ProductStado is the product that is stado itself: its activation is
// proven by a beacon the new version publishes.
const ProductStado = "stado"

// activate is steps 4 to 8, once the image is installed.
func (h *Host) activate(ctx context.Context, req release.ActivateRequest, c checked, wait time.Duration) (release.ActivateResult, error) {
	root, product := h.Root, req.Product
	prev := c.prev
	oldTarget, _ := os.Readlink(release.CurrentLink(root, product))
	im := c.image
	next := release.ProductState{Active: &im, Backup: prev.Backup, Last: prev.Last}
	if prev.Active != nil && prev.Active.SHA256 != im.SHA256 {
		b := *prev.Active
		next.Backup = &b
	}
	act := &release.Activation{Product: product, Version: im.Version, SHA256: im.SHA256, At: h.now(), Unit: req.Unit}
	res := release.ActivateResult{Product: product, Active: next.Active, Backup: next.Backup, Activation: act, Fetched: c.fetched}
	// The backup is recorded before the link moves: whatever happens next,
	// the state names the image to come back to, and prune keeps it.
	if err := h.record(c.st, product, next); err != nil {
		return res, err
	}
	if err := switchLink(root, product, im.Path); err != nil {
		return res, err
	}
	unitMissing := false
	if req.Unit != "" {
		// A unit the init system does not hold yet (declared, never
		// ensured) has nothing to restart: the image is active, and the
		// ensure that installs the unit starts it on the image.
		if v, err := h.Init.Show(ctx, req.Scope, req.Unit); err == nil && v.State == units.StateMissing {
			unitMissing = true
			act.Note = fmt.Sprintf("%s is not installed on this host: the image is active and service ensure starts the unit on it", req.Unit)
		}
	}
	if req.Unit == "" || unitMissing {
		act.Outcome = release.OutcomeInstalled
		next.Last = act
		res.Outcome = act.Outcome
		return res, h.record(c.st, product, next)
	}
	p := h.restartAndProve(ctx, req, im, wait)
	act.PIDBefore, act.PIDAfter, act.Exe, act.Serving = p.before, p.pid, p.exe, p.serving
	if p.ok {
		act.Outcome = release.OutcomeActivated
		next.Last = act
		res.Outcome = act.Outcome
		return res, h.record(c.st, product, next)
	}
	// The new image did not take over: its evidence, then the backup.
	v := p.verdict
	act.LastExit, act.Runs = v.LastExit, v.Starts
	if ls, err := h.Init.Logs(ctx, req.Scope, req.Unit, logLines); err == nil {
		act.Stderr = units.LastLogLine(ls)
	}
	act.Refusal = notProvenSentence(req.Unit, p)
	if act.Stderr != "" {
		act.Refusal += "; its last stderr line: " + act.Stderr
	}
	if prev.Active == nil || prev.Active.SHA256 == im.SHA256 {
		// Nothing else to come back to: a first install, or the image that
		// was already active and did not run.
		var err error
		if oldTarget == "" {
			err = removeLink(root, product)
		} else {
			err = switchLink(root, product, oldTarget)
		}
		act.Outcome = release.OutcomeFailed
		res.Outcome = act.Outcome
		res.Active, res.Backup = prev.Active, prev.Backup
		if rerr := h.record(c.st, product, release.ProductState{Active: prev.Active, Backup: prev.Backup, Last: act}); err == nil {
			err = rerr
		}
		if err != nil {
			return res, err
		}
		why := "; there was no previous image to restore"
		if prev.Active != nil {
			why = "; the image was already active, so there is no other to restore"
		}
		return res, &refusal.Error{Code: refusal.ReleaseNotProven, Message: act.Refusal + why, Details: res}
	}
	backup := *prev.Active
	res.Active, res.Backup = prev.Active, prev.Backup
	restoredState := release.ProductState{Active: prev.Active, Backup: prev.Backup, Last: act}
	rp := proof{seen: "its image is not intact"}
	err := checkInstalled(backup)
	if err == nil {
		err = switchLink(root, product, backup.Path)
	}
	if err == nil {
		rp = h.restartAndProve(ctx, req, backup, wait)
	} else {
		rp.seen = err.Error()
	}
	if rp.ok {
		act.Outcome = release.OutcomeRestored
		act.Restored = &release.Proof{Version: backup.Version, SHA256: backup.SHA256, PID: rp.pid, Exe: rp.exe, Serving: rp.serving}
		res.Outcome = act.Outcome
		if err := h.record(c.st, product, restoredState); err != nil {
			return res, err
		}
		msg := fmt.Sprintf("%s; restored %s: pid %d runs %s", act.Refusal, imageLabel(&backup), rp.pid, rp.exe)
		if rp.serving != "" {
			msg += " and " + rp.serving
		}
		return res, &refusal.Error{Code: refusal.ReleaseNotProven, Message: msg, Details: res}
	}
	act.Outcome = release.OutcomeFailed
	res.Outcome = act.Outcome
	msg := fmt.Sprintf("%s; the backup %s could not be proven either: %s", act.Refusal, imageLabel(&backup), rp.seen)
	act.Refusal = msg
	if err := h.record(c.st, product, restoredState); err != nil {
		return res, err
	}
	return res, &refusal.Error{Code: refusal.ReleaseRestoreFailed, Message: msg, Details: res}
}

// record writes the product's state into st and st to the state file.
func (h *Host) record(st release.HostState, product string, ps release.ProductState) error {
	if st.Products == nil {
		st.Products = map[string]release.ProductState{}
	}
	st.Products[product] = ps
	return release.WriteHostState(h.Root, st)
}

// proof is what a restart's proof saw.
type proof struct {
	ok      bool
	before  int // the main pid before the restart
	pid     int // the fresh pid that runs the image
	exe     string
	serving string
	// seen says what was last seen when the proof failed.
	seen    string
	verdict units.Verdict
}

// notProvenSentence is the refusal of an image that did not take over.
func notProvenSentence(unit string, p proof) string {
	s := fmt.Sprintf("%s: restart did not prove a fresh pid on the activated immutable image; %s", unit, p.seen)
	if v := p.verdict; v.PID == 0 && v.State != units.StateMissing && (v.Starts > 0 || v.Sentence != "") {
		s += "; " + failingClause(unit, v)
	}
	return s
}

// failingClause is the verdict's sentence of a unit that runs no process.
func failingClause(unit string, v units.Verdict) string {
	if v.Sentence != "" {
		return v.Sentence
	}
	code := strconv.Itoa(v.LastExit)
	if v.Signaled {
		code = "on signal " + code
	}
	return units.FailingSentence(unit, code, v.Starts)
}

// restartAndProve reads the main pid, restarts the unit and proves im
// takes over within wait: a fresh nonzero main pid whose executable is
// im's program, holding for the settle time; then the unit owns its port
// (req.Port); then, for stado, a beacon of im's version published since
// the restart.
func (h *Host) restartAndProve(ctx context.Context, req release.ActivateRequest, im release.Image, wait time.Duration) proof {
	var p proof
	before, err := h.Init.Show(ctx, req.Scope, req.Unit)
	if err != nil {
		p.seen = fmt.Sprintf("its main pid could not be read before the restart: %v", err)
		return p
	}
	p.before = before.PID
	start := h.now()
	deadline := start.Add(wait)
	if err := h.Init.Restart(ctx, req.Scope, req.Unit); err != nil {
		p.seen = fmt.Sprintf("the restart failed: %v", err)
		p.verdict, _ = h.Init.Show(ctx, req.Scope, req.Unit)
		return p
	}
	if !h.provePID(ctx, req, im, deadline, wait, &p) {
		return p
	}
	if req.Port > 0 && !h.proveServing(ctx, req, deadline, wait, &p) {
		return p
	}
	if req.Product == ProductStado && !h.proveBeacon(ctx, im, start, deadline, wait, &p) {
		return p
	}
	p.ok = true
	return p
}

// sleep waits one poll interval (less when the deadline is nearer); false
// when the deadline passed or ctx ended.
func (h *Host) sleep(ctx context.Context, deadline time.Time) bool {
	left := deadline.Sub(h.now())
	if left <= 0 {
		return false
	}
	d := h.poll()
	if left < d {
		d = left
	}
	select {
	case <-ctx.Done():
		return false
	case <-h.after(d):
		return true
	}
}

// provePID reads the unit until a fresh main pid runs im's program for the
// settle time.
func (h *Host) provePID(ctx context.Context, req release.ActivateRequest, im release.Image, deadline time.Time, wait time.Duration, p *proof) bool {
	var held int
	var heldSince time.Time
	for {
		v, err := h.Init.Show(ctx, req.Scope, req.Unit)
		if err != nil {
			p.seen = fmt.Sprintf("the unit could not be read: %v", err)
			return false
		}
		p.verdict = v
		now := h.now()
		switch {
		case v.PID > 0 && v.PID != p.before:
			exe, err := h.Exe(ctx, req.Scope, req.Unit, v.PID)
			switch {
			case err != nil:
				held, p.seen = 0, fmt.Sprintf("the executable of pid %d could not be read: %v", v.PID, err)
			case !sameFile(exe, im.Path):
				held, p.seen = 0, fmt.Sprintf("pid %d runs %s, not the image %s", v.PID, exe, im.Path)
			default:
				if v.PID != held {
					held, heldSince = v.PID, now
				}
				p.pid, p.exe = v.PID, exe
				if now.Sub(heldSince) >= h.settle() {
					return true
				}
				p.seen = fmt.Sprintf("pid %d ran the image for %s only", v.PID, now.Sub(heldSince).Round(time.Millisecond))
			}
		case v.PID > 0:
			held, p.seen = 0, fmt.Sprintf("the main pid is still %d, from before the restart", v.PID)
		case v.State == units.StateMissing:
			p.seen = "the init system does not hold the unit"
			return false
		case v.State == units.StateFailing, v.State == units.StateFailed, v.State == units.StateInactive && v.Starts > 0:
			p.seen = fmt.Sprintf("the unit is %s", orWord(v.Detail, v.State))
			if p.pid > 0 {
				p.seen = fmt.Sprintf("pid %d ran the image and exited; %s", p.pid, p.seen)
			}
			return false
		default:
			held, p.seen = 0, fmt.Sprintf("the unit is %s with no main pid", orWord(v.Detail, v.State))
		}
		if !h.sleep(ctx, deadline) {
			p.seen = fmt.Sprintf("within %s %s", wait, p.seen)
			return false
		}
	}
}

// proveServing reads until the unit owns its directory port, while its
// proven pid keeps running.
func (h *Host) proveServing(ctx context.Context, req release.ActivateRequest, deadline time.Time, wait time.Duration, p *proof) bool {
	for {
		r, err := h.Serving(ctx, req.Scope, req.Unit, req.Port, req.Address)
		switch {
		case err != nil:
			p.seen = fmt.Sprintf("pid %d runs the image and its serving read failed: %v", p.pid, err)
		case r.Serving:
			p.serving = r.Sentence
			return true
		default:
			p.seen = fmt.Sprintf("pid %d runs the image and does not serve: %s", p.pid, r.Sentence)
		}
		v, verr := h.Init.Show(ctx, req.Scope, req.Unit)
		if verr == nil {
			p.verdict = v
			if v.PID != p.pid {
				p.seen = fmt.Sprintf("pid %d ran the image and is gone before it served port %d", p.pid, req.Port)
				return false
			}
		}
		if !h.sleep(ctx, deadline) {
			p.seen = fmt.Sprintf("within %s %s", wait, p.seen)
			return false
		}
	}
}

// proveBeacon reads this host's beacon until one published since the
// restart carries im's version.
func (h *Host) proveBeacon(ctx context.Context, im release.Image, since, deadline time.Time, wait time.Duration, p *proof) bool {
	for {
		ver, err := h.BeaconProof(ctx, since)
		switch {
		case err != nil:
			p.seen = fmt.Sprintf("pid %d runs the image and no beacon of it was read: %v", p.pid, err)
		case ver == im.Version:
			return true
		default:
			p.seen = fmt.Sprintf("pid %d runs the image and the beacon published since the restart says stado %s, not %s", p.pid, ver, im.Version)
		}
		if !h.sleep(ctx, deadline) {
			p.seen = fmt.Sprintf("within %s %s", wait, p.seen)
			return false
		}
	}
}

func orWord(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

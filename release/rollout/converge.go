package rollout

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/release"
)

// DefaultWait bounds a host's proof of a new image (and again of a
// restored one) when Options.Wait is not given.
const DefaultWait = 60 * time.Second

// Outcomes of a converge line beside the host's own (release.Outcome*).
const (
	// OutcomeRefused: the host refused the activation (its code is on the
	// line) or could not be reached; nothing was proven.
	OutcomeRefused = "refused"
	// OutcomeNotAttempted: an earlier failure stopped the rollout before
	// this host (or this product of the failing host) began.
	OutcomeNotAttempted = "not_attempted"
)

// Options is one converge.
type Options struct {
	Doc      *registry.Document
	Declared Declarations
	// Targets names the hosts to converge, in document order whatever
	// their order here; empty means every target.
	Targets []string
	// Product converges only this product; empty, every declared one.
	Product   string
	Connector channel.Connector
	// MaxConcurrent bounds the hosts converging at once after the canary;
	// below 1 means the registry's autonomy max_concurrent, else one. The
	// registry's cap, when it declares one, is the ceiling.
	MaxConcurrent int
	// Wait bounds each host's proof; 0 means DefaultWait.
	Wait time.Duration
	// Mode is channel.ModeApply (empty means apply) or channel.ModePlan,
	// which asks every host what apply would do and changes nothing.
	Mode string
	// OnLine, when not nil, is called with each line as it lands, one call
	// at a time.
	OnLine func(Line)
}

// Line is one product on one host: what its activation did, with the
// evidence or the refusal.
type Line struct {
	Host    string `json:"host"`
	Product string `json:"product"`
	// Canary marks the host that went first.
	Canary  bool   `json:"canary,omitempty"`
	Outcome string `json:"outcome"`
	// From is the version active before (when the host said); To the
	// declared one.
	From   string `json:"from,omitempty"`
	To     string `json:"to"`
	SHA256 string `json:"sha256,omitempty"`
	Unit   string `json:"unit,omitempty"`
	// PID is the unit's main pid the proof names: the new image's, or
	// the restored backup's.
	PID int `json:"pid,omitempty"`
	// Evidence is the proof in words (executable, serving read).
	Evidence string `json:"evidence,omitempty"`
	Fetched  string `json:"fetched,omitempty"`
	// Refusal and Code are the host's refusal, for a failed line.
	Refusal string `json:"refusal,omitempty"`
	Code    string `json:"code,omitempty"`
}

// Failed reports whether the line stops a rollout.
func (l Line) Failed() bool {
	switch l.Outcome {
	case OutcomeRefused, release.OutcomeRestored, release.OutcomeFailed:
		return true
	}
	return false
}

// Report is a whole converge, its lines in target then product order.
type Report struct {
	Mode          string `json:"mode"`
	Canary        string `json:"canary,omitempty"`
	MaxConcurrent int    `json:"max_concurrent"`
	Lines         []Line `json:"lines"`
	// Failed names the first line that failed, as "host/product".
	Failed string `json:"failed,omitempty"`
}

type job struct {
	target   *registry.Target
	products []string
	lines    []Line
}

// Converge brings the selected targets to the declared versions of their
// products, one ReleaseActivate call per host and product (a host already
// on the declared image answers unchanged to that one call):
//
//  1. the work is every (target, product) with a declared version; a
//     product's unit is the target's service declaring it (none: the image
//     is installed and switched without a restart), its port and address
//     that service's directory entry on the host;
//  2. in apply mode the first host (the canary) converges alone and must
//     succeed before any other begins;
//  3. then at most MaxConcurrent hosts converge at once, each host's
//     products one after the other;
//  4. the first failure (a refusal, an unreachable host, a restored or
//     failed activation) stops the rollout: hosts that have not begun, and
//     the failing host's remaining products, are recorded not_attempted;
//     hosts already converging finish;
//  5. plan mode asks every host, changes nothing and stops at nothing.
//
// The error is a refusal naming an unknown target or a product no
// selected target declares a version of (nothing is called), else, when a
// line failed, the first failure: a refusal with the host's own code when
// it had one (release_restore_failed when the host restored nothing). The
// report is complete either way.
func Converge(ctx context.Context, o Options) (Report, error) {
	mode := o.Mode
	if mode == "" {
		mode = channel.ModeApply
	}
	if mode != channel.ModeApply && mode != channel.ModePlan {
		return Report{}, fmt.Errorf("converge mode %q is neither %s nor %s", mode, channel.ModeApply, channel.ModePlan)
	}
	jobs, err := plan(o)
	maxc := maxConcurrent(o)
	rep := Report{Mode: mode, MaxConcurrent: maxc, Lines: []Line{}}
	if err != nil {
		return rep, err
	}
	if len(jobs) == 0 {
		return rep, nil
	}
	wait := o.Wait
	if wait <= 0 {
		wait = DefaultWait
	}
	r := &run{o: o, mode: mode, wait: wait}
	rest := jobs
	if mode == channel.ModeApply {
		rep.Canary = jobs[0].target.Name
		r.host(ctx, jobs[0], true)
		rest = jobs[1:]
	}
	sem := make(chan struct{}, maxc)
	var wg sync.WaitGroup
	for _, j := range rest {
		sem <- struct{}{}
		if r.stopped() {
			<-sem
			r.skip(j, 0)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r.host(ctx, j, false)
		}()
	}
	wg.Wait()
	for _, j := range jobs {
		rep.Lines = append(rep.Lines, j.lines...)
	}
	if r.failure == nil {
		return rep, nil
	}
	rep.Failed = r.failure.Host + "/" + r.failure.Product
	return rep, r.failErr
}

// maxConcurrent is o's bound on hosts at once under the registry's cap.
func maxConcurrent(o Options) int {
	limit := 0
	if o.Doc != nil {
		limit = o.Doc.Autonomy.MaxConcurrent
	}
	n := o.MaxConcurrent
	if n < 1 {
		n = limit
	}
	if limit > 0 {
		n = min(n, limit)
	}
	return max(n, 1)
}

// plan lists the work of o in target order.
func plan(o Options) ([]*job, error) {
	if o.Doc == nil {
		return nil, errors.New("converge: no registry document")
	}
	selected := map[string]bool{}
	for _, name := range o.Targets {
		if _, ok := o.Doc.Target(name); !ok {
			return nil, refusal.New(refusal.NotFound, "the registry declares no target %q", name)
		}
		selected[name] = true
	}
	var jobs []*job
	for i := range o.Doc.Targets {
		t := &o.Doc.Targets[i]
		if len(selected) > 0 && !selected[t.Name] {
			continue
		}
		if ps := o.Declared.declaredOn(t.Name, o.Product); len(ps) > 0 {
			jobs = append(jobs, &job{target: t, products: ps})
		}
	}
	if len(jobs) == 0 && o.Product != "" {
		return nil, refusal.New(refusal.NotFound, "the registry declares no version of %s for the selected targets", o.Product)
	}
	return jobs, nil
}

// run is one converge in progress.
type run struct {
	o    Options
	mode string
	wait time.Duration

	mu      sync.Mutex
	failure *Line
	failErr error
}

func (r *run) stopped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failure != nil && r.mode == channel.ModeApply
}

// land records l on j and reports it; the first failure stops the rollout.
func (r *run) land(j *job, l Line, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	j.lines = append(j.lines, l)
	if l.Failed() && r.failure == nil {
		r.failure = &l
		r.failErr = failError(l, err)
	}
	if r.o.OnLine != nil {
		r.o.OnLine(l)
	}
}

// skip records j's products from the i-th on as not attempted.
func (r *run) skip(j *job, from int) {
	for _, p := range j.products[from:] {
		to, _, _ := r.o.Declared.release(j.target.Name, p)
		r.land(j, Line{Host: j.target.Name, Product: p, Outcome: OutcomeNotAttempted, To: to}, nil)
	}
}

// host converges j's products one after the other.
func (r *run) host(ctx context.Context, j *job, canary bool) {
	h := r.o.Connector(*j.target)
	for i, p := range j.products {
		if i > 0 && r.stopped() {
			r.skip(j, i)
			return
		}
		req := r.request(j.target, p)
		res, err := h.ReleaseActivate(ctx, req)
		l := lineOf(j.target.Name, req, res, err)
		l.Canary = canary
		r.land(j, l, err)
	}
}

// request is the activation of product on t as the registry declares it.
func (r *run) request(t *registry.Target, product string) release.ActivateRequest {
	version, pin, _ := r.o.Declared.release(t.Name, product)
	req := release.ActivateRequest{Product: product, Version: version, Pinned: pin, Wait: r.wait, Mode: r.mode}
	if s := serviceOf(t, product); s != nil {
		req.Scope, req.Unit = s.EffectiveScope(), s.Unit
		if e, ok := r.o.Doc.DirectoryEntryOn(s.Name, t.Name); ok {
			req.Port, req.Address = e.Port, r.o.Doc.ListenAddress(e)
			if s.Protocol != nil {
				// the host reads the protocol's ready operation too
				svc := *s
				req.Service = &svc
			}
		}
	}
	return req
}

// lineOf says what one activation did.
func lineOf(host string, req release.ActivateRequest, res release.ActivateResult, err error) Line {
	l := Line{Host: host, Product: req.Product, To: req.Version, Unit: req.Unit, Outcome: res.Outcome, Fetched: res.Fetched}
	if res.Active != nil {
		l.From = res.Active.Version
	}
	a := res.Activation
	if a != nil {
		l.SHA256 = a.SHA256
	}
	switch res.Outcome {
	case release.OutcomeActivated, release.OutcomeInstalled:
		// the active image before is now the backup
		l.From = ""
		if res.Backup != nil {
			l.From = res.Backup.Version
		}
		if a != nil {
			l.PID = a.PIDAfter
			l.Evidence = evidence(a.Exe, a.Serving)
		}
	case release.OutcomeRestored, release.OutcomeFailed:
		if a != nil {
			l.Refusal = a.Refusal
			if a.Restored != nil {
				l.PID = a.Restored.PID
				l.Evidence = "restored " + a.Restored.Version + ": " + evidence(a.Restored.Exe, a.Restored.Serving)
			}
		}
	}
	if err != nil {
		if l.Outcome == "" {
			l.Outcome = OutcomeRefused
		}
		if l.Refusal == "" {
			l.Refusal = err.Error()
		}
	}
	if l.Failed() {
		l.Code = string(codeOf(l, err))
	}
	return l
}

// codeOf is a failed line's refusal code: the host's own when it sent one.
func codeOf(l Line, err error) refusal.Code {
	if c, ok := refusal.CodeOf(err); ok {
		return c
	}
	switch l.Outcome {
	case release.OutcomeRestored:
		return refusal.ReleaseNotProven
	case release.OutcomeFailed:
		return refusal.ReleaseRestoreFailed
	}
	return ""
}

func evidence(exe, serving string) string {
	switch {
	case exe != "" && serving != "":
		return "runs " + exe + "; " + serving
	case exe != "":
		return "runs " + exe
	}
	return serving
}

// failError is the converge's error for its first failed line.
func failError(l Line, err error) error {
	if l.Code == "" {
		return fmt.Errorf("converge %s on %s: %w", l.Product, l.Host, err)
	}
	e := refusal.New(refusal.Code(l.Code), "converge %s on %s: %s", l.Product, l.Host, l.Refusal)
	e.Err = err
	return e
}

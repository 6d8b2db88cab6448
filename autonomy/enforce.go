package autonomy

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/wisent/stado/fleet"
	"github.com/wisent/stado/release/rollout"
	"github.com/wisent/stado/units"
)

// ActionResult is what an enforcing cycle did for one row, and what the
// unit looked like when read again afterwards.
type ActionResult struct {
	Action  string    `json:"action"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
	// OK is true when the action succeeded and the re-verify found the unit
	// clean.
	OK bool `json:"ok"`
	// Install and Run are ensure's (installed/updated/unchanged;
	// started/restarted/none).
	Install string           `json:"install,omitempty"`
	Run     string           `json:"run,omitempty"`
	Verdict *units.Verdict   `json:"verdict,omitempty"`
	Logs    []string         `json:"logs,omitempty"`
	Error   *fleet.HostError `json:"error,omitempty"`
	// Reverify is the unit read again after the action; Clean says it is
	// active, with the declared bytes and its port its own.
	Reverify      *fleet.ServiceVerify `json:"reverify,omitempty"`
	ReverifyError string               `json:"reverify_error,omitempty"`
	Clean         bool                 `json:"clean"`
	// Release is a converge row's activation as the host answered it
	// (outcome, from and to versions, pid and evidence, or the refusal).
	Release *rollout.Line `json:"release,omitempty"`
}

// Actor acts on plan rows. ActOn acts on rows, all of one host, in order:
// before each it calls proceed and returns at once when proceed says no;
// after each it sets the row's Result and calls done. It is called from
// several goroutines at once, for different hosts.
type Actor interface {
	ActOn(ctx context.Context, host string, rows []*Row, proceed func() bool, done func(*Row))
}

// Enforce acts on every row that plans an action, host by host, through
// actor: never more than caps.MaxConcurrent hosts at once, never more than
// caps.PerService(n) of a service's n hosts at once (hostsOf gives n), and
// no new action once caps.FailureBudget actions failed or ctx ended. Rows it
// did not reach keep their action and get a not_attempted refusal. It
// returns how many actions failed and why it stopped early ("" when it
// reached every row).
func Enforce(ctx context.Context, rows []Row, caps Caps, hostsOf func(service string) int, actor Actor) (failed int, stopped string) {
	type job struct {
		host string
		rows []*Row
	}
	var jobs []*job
	byHost := map[string]*job{}
	for i := range rows {
		r := &rows[i]
		if !r.Acts() {
			continue
		}
		j := byHost[r.Host]
		if j == nil {
			j = &job{host: r.Host}
			byHost[r.Host] = j
			jobs = append(jobs, j)
		}
		j.rows = append(j.rows, r)
	}
	var (
		mu       sync.Mutex
		cond     = sync.NewCond(&mu)
		running  int
		inflight = map[string]int{}
	)
	stop := func() bool { // under mu
		switch {
		case stopped != "":
		case failed >= caps.FailureBudget:
			stopped = fmt.Sprintf("the failure budget of %d was reached", caps.FailureBudget)
		case ctx.Err() != nil:
			stopped = "the cycle was cancelled: " + context.Cause(ctx).Error()
		}
		return stopped != ""
	}
	fits := func(j *job) bool { // under mu
		if running >= caps.MaxConcurrent {
			return false
		}
		for _, r := range j.rows {
			if inflight[r.Service]+1 > caps.PerService(hostsOf(r.Service)) {
				return false
			}
		}
		return true
	}
	// Wake the scheduler when the context ends, so it stops waiting.
	ctxDone := context.AfterFunc(ctx, func() { mu.Lock(); cond.Broadcast(); mu.Unlock() })
	defer ctxDone()

	var wg sync.WaitGroup
	pending := jobs
	mu.Lock()
	for len(pending) > 0 && !stop() {
		k := -1
		for i, j := range pending {
			if fits(j) {
				k = i
				break
			}
		}
		if k < 0 {
			cond.Wait()
			continue
		}
		j := pending[k]
		pending = append(pending[:k:k], pending[k+1:]...)
		running++
		for _, r := range j.rows {
			inflight[r.Service]++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			actor.ActOn(ctx, j.host, j.rows, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return !stop()
			}, func(r *Row) {
				mu.Lock()
				defer mu.Unlock()
				if r.Result == nil || !r.Result.OK {
					failed++
				}
			})
			mu.Lock()
			running--
			for _, r := range j.rows {
				inflight[r.Service]--
			}
			cond.Broadcast()
			mu.Unlock()
		}()
	}
	mu.Unlock()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	stop()
	for i := range rows {
		r := &rows[i]
		if r.Acts() && r.Result == nil {
			why := stopped
			if why == "" {
				why = "the host's earlier action ended its turn"
			}
			r.Refusal = &Refusal{Code: CodeNotAttempted, Message: fmt.Sprintf("%s on %s was not attempted: %s", r.Action, r.Host, why)}
		}
	}
	return failed, stopped
}

// FleetActor acts through the write half: restore, reinstall and start are
// one fleet.Ensure each, restart one fleet.Restart, and every action is
// followed by a fleet.Verify of the unit it touched. Each host gets its own
// connections (Connect is called once per host and closed after it), so a
// host's journal and sshd log show exactly when it was acted on.
type FleetActor struct {
	// Fleet is the fleet as the cycle read it; its Connect is not used.
	Fleet *fleet.Fleet
	// Connect opens a fresh set of host connections and returns the func
	// that closes them.
	Connect func() (fleet.Connector, func())
	Reason  string
	// Settle and Wait are ensure's (zero: its defaults).
	Settle, Wait time.Duration
	Now          func() time.Time
}

// ActOn implements Actor.
func (a *FleetActor) ActOn(ctx context.Context, host string, rows []*Row, proceed func() bool, done func(*Row)) {
	conn, closeConn := a.Connect()
	defer closeConn()
	f := *a.Fleet
	f.Connect, f.Parallel = conn, 1
	now := a.Now
	if now == nil {
		now = time.Now
	}
	for _, r := range rows {
		if !proceed() {
			return
		}
		res := &ActionResult{Action: r.Action, Started: now().UTC()}
		if r.Action == ActionConverge {
			a.converge(ctx, conn, host, r, res)
			res.Ended = now().UTC()
			r.Result = res
			done(r)
			continue
		}
		var err error
		switch r.Action {
		case ActionRestart:
			var outs []fleet.RestartOutcome
			outs, err = f.Restart(ctx, fleet.RestartOptions{Name: r.Service, Hosts: []string{host}}, nil)
			if len(outs) == 1 {
				res.Verdict = outs[0].Verdict
			}
		default:
			var outs []fleet.EnsureOutcome
			outs, err = f.Ensure(ctx, fleet.EnsureOptions{Name: r.Service, Hosts: []string{host}, Reason: a.Reason, Settle: a.Settle, Wait: a.Wait}, nil)
			if len(outs) == 1 {
				o := outs[0]
				res.Install, res.Run, res.Verdict, res.Logs = o.Install, o.Run, o.Verdict, o.Logs
			}
		}
		res.Error = fleet.DescribeHostError(host, err)
		vr, verr := f.Verify(ctx, fleet.VerifyOptions{Name: r.Service, Hosts: []string{host}}, nil)
		switch {
		case verr != nil:
			res.ReverifyError = verr.Error()
		case len(vr.Hosts) != 1 || !vr.Hosts[0].Reachable || len(vr.Hosts[0].Services) != 1:
			res.ReverifyError = "the re-verify did not read the unit"
			if len(vr.Hosts) == 1 && vr.Hosts[0].Error != nil {
				res.ReverifyError += ": " + vr.Hosts[0].Error.Message
			}
		default:
			sv := vr.Hosts[0].Services[0]
			res.Reverify, res.Clean = &sv, sv.Clean()
		}
		res.OK = err == nil && res.Clean
		res.Ended = now().UTC()
		r.Result = res
		done(r)
	}
}

// converge activates the declared version of r's product on host: one
// rollout.Converge of that host and product alone, in apply mode. The
// host proves the takeover itself (or restores its backup and refuses),
// so the result is its line, ok when the declared image is active and
// proven (activated, installed or unchanged).
func (a *FleetActor) converge(ctx context.Context, conn fleet.Connector, host string, r *Row, res *ActionResult) {
	rep, err := rollout.Converge(ctx, rollout.Options{Doc: a.Fleet.Doc, Declared: rollout.DeclarationsOf(a.Fleet.Doc),
		Targets: []string{host}, Product: r.Product, Connector: conn, MaxConcurrent: 1, Wait: a.Wait}) // no Mode: apply
	if len(rep.Lines) == 1 {
		l := rep.Lines[0]
		res.Release = &l
	}
	res.Error = fleet.DescribeHostError(host, err)
	if res.Error == nil && res.Release == nil {
		res.Error = &fleet.HostError{Host: host, Stage: fleet.StagePlan, Message: fmt.Sprintf("the registry declares no version of %s for %s any more", r.Product, host)}
	}
	if res.Error == nil {
		switch l := res.Release; {
		case !l.Failed() && l.Outcome != rollout.OutcomeNotAttempted:
			res.OK, res.Clean = true, true
		default:
			res.Error = &fleet.HostError{Host: host, Stage: fleet.StagePlan, Code: res.Release.Code, Message: fmt.Sprintf("%s: %s %s: %s", host, r.Product, res.Release.Outcome, res.Release.Refusal)}
		}
	}
}

package autonomy

import (
	"fmt"
	"strings"

	"github.com/wisent/stado/spread"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/fleet"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/release/rollout"
	"github.com/wisent/stado/units"
)

// Actions a plan row can carry.
const (
	ActionRestore   = "restore"   // the unit file is absent: create it from the declaration and start it
	ActionReinstall = "reinstall" // the installed bytes differ from the rendering: install them, restart
	ActionStart     = "start"     // inactive or failed: start it
	ActionRestart   = "restart"   // failing, without a crash loop: restart it
	ActionNone      = "none"      // as declared: nothing to do
	// ActionConverge: the host's active image of a product is not the
	// version the registry declares for it: activate the declared one.
	ActionConverge = "converge"
)

// Codes of the refusals a cycle records. declaration_incomplete and
// recovery_unit are refusal's own; the others are the cycle's.
const (
	CodeDeclarationIncomplete = refusal.DeclarationIncomplete
	CodeRecoveryUnit          = refusal.RecoveryUnit
	// CodeUnreachable: the verify sweep could not reach the host; the
	// refusal names the stage.
	CodeUnreachable = refusal.Unreachable
	// CodeNoEvidence: the host's beacon is stale or absent and the verify
	// could not read the unit either.
	CodeNoEvidence = refusal.NoEvidence
	// CodeInconclusive: the beacon and the verify disagree about the unit,
	// or only the beacon could answer.
	CodeInconclusive = refusal.Inconclusive
	// CodeCrashLoop: the unit's supervisor keeps restarting the declared
	// bytes and each run exits nonzero; another restart would change
	// nothing.
	CodeCrashLoop = refusal.CrashLoop
	// CodeNotAttempted: an enforcing cycle stopped (failure budget, lease
	// lost, cancelled) before this action.
	CodeNotAttempted = refusal.NotAttempted
	// CodeNotAuthorized: enforce mode without the registry's authorization.
	CodeNotAuthorized = refusal.NotAuthorized
	// CodeLeaseHeld: another enforcer holds the store's lease.
	CodeLeaseHeld = refusal.LeaseHeld
)

// CrashLoopStarts is how many starts of a failing unit make a crash loop:
// its supervisor has already restarted it this often, each run ending
// nonzero, so the cycle refuses to restart the same bytes again.
const CrashLoopStarts = 3

// Refusal is why a row is not acted on.
type Refusal struct {
	Code    refusal.Code `json:"code"`
	Message string       `json:"message"`
	// Stage is where an unreachable host's call failed (resolve, connect,
	// handshake, host_key, auth, command).
	Stage string `json:"stage,omitempty"`
}

// BeaconEvidence is what the host's latest beacon says of the unit.
type BeaconEvidence struct {
	// State is the beacon row's state; unknown when the beacon is stale or
	// absent.
	State     string           `json:"state"`
	PID       int              `json:"pid,omitempty"`
	LastExit  *int             `json:"last_exit,omitempty"`
	Starts    int              `json:"starts,omitempty"`
	Freshness beacon.Freshness `json:"freshness"`
	// File is the host's own comparison of the unit file with the
	// declaration's rendering, when its fresh beacon carries one.
	File *beacon.FileCheck `json:"file,omitempty"`
}

// VerifyEvidence is what the verify sweep read of the unit on its host.
type VerifyEvidence struct {
	Reachable bool `json:"reachable"`
	// ReachOnly is true when the sweep asked the host for reachability
	// only: its fresh beacon said every unit's state and file.
	ReachOnly bool   `json:"reach_only,omitempty"`
	Stage     string `json:"stage,omitempty"`
	// Error is the host's failure when it was not reachable.
	Error string `json:"error,omitempty"`
	// Check is the host's reading of the unit; nil when the host was not
	// reachable or did not report it.
	Check *fleet.ServiceVerify `json:"check,omitempty"`
}

// ReleaseEvidence is what a converge row's decision rests on: the
// declared version and what the host's fresh beacon says of the product
// (rollout.ShowFleet's row).
type ReleaseEvidence struct {
	Declared string `json:"declared"`
	Pinned   bool   `json:"pinned,omitempty"`
	// Status is rollout's (converged, differs, not_installed, unknown).
	Status string                    `json:"status"`
	Active *beacon.ReleaseImage      `json:"active,omitempty"`
	Backup *beacon.ReleaseImage      `json:"backup,omitempty"`
	Last   *beacon.ReleaseActivation `json:"last,omitempty"`
	// Unknown says why the host's images are not known.
	Unknown string `json:"unknown,omitempty"`
}

// Evidence is what a row's decision rests on.
type Evidence struct {
	Beacon BeaconEvidence `json:"beacon"`
	Verify VerifyEvidence `json:"verify"`
	// Release is set on a converge row (one per host and declared
	// product).
	Release *ReleaseEvidence `json:"release,omitempty"`
}

// Row is one declared service on one host: the action planned for it, or
// why none may be taken, with its evidence. An enforcing cycle fills in
// Result for the rows it acted on and NotAttempted for those it stopped
// before.
type Row struct {
	Host    string `json:"host"`
	Service string `json:"service"`
	Unit    string `json:"unit"`
	// Product is set on a release row: the product whose declared version
	// the row converges. Its Service is the host's service declaring the
	// product, or the product's name when none does (install only).
	Product string `json:"product,omitempty"`
	// Action is one of the Action constants; "" when Refusal is set.
	Action string `json:"action,omitempty"`
	// Plan says in words what the action would do ("would create
	// /etc/systemd/system/x.service and start x.service").
	Plan     string   `json:"plan,omitempty"`
	Refusal  *Refusal `json:"refusal,omitempty"`
	Evidence Evidence `json:"evidence"`
	// Result is what an enforcing cycle did; nil when it did not act.
	Result *ActionResult `json:"result,omitempty"`
}

// Acts reports whether the row plans an action that changes the host.
func (r Row) Acts() bool { return r.Refusal == nil && r.Action != "" && r.Action != ActionNone }

// Input is what a plan is made from: the declarations, the catalog (for
// recovery-source units; nil means none), the beacon rows of the read half
// and one verify sweep.
type Input struct {
	Doc     *registry.Document
	Catalog *catalog.Catalog
	Beacons []beacon.Row
	Verify  *fleet.VerifyResult
	// Releases are the release rows of the fleet from the same beacons
	// (rollout.ShowFleet over the registry's declarations); a row with no
	// declared version plans nothing.
	Releases []rollout.Row
	// Outline, when not nil, is the outline Doc was decoded as: the plan
	// reads each target's services from its outlines, since Doc holds the
	// services only of the targets decoded whole.
	Outline *registry.Outline
}

// outlines are what the plan reads of every target's services: the
// outline's, or those of doc's services.
func outlines(doc *registry.Document, o *registry.Outline) [][]registry.ServiceOutline {
	if o != nil {
		return o.Services
	}
	out := make([][]registry.ServiceOutline, len(doc.Targets))
	for i := range doc.Targets {
		out[i] = registry.OutlineOf(doc.Targets[i].Services)
	}
	return out
}

// Plan decides every declared service of in.Doc, in registry order. It is
// pure: it reads its input only, opens nothing and changes nothing. The
// rules, in order:
//
//  1. a declaration without program and args: declaration_incomplete;
//  2. a host the verify could not reach: unreachable, naming the stage;
//  3. a unit the verify could not read: no_evidence when the beacon is
//     stale or absent, else inconclusive;
//  4. a fresh beacon whose state disagrees with the verify's (running,
//     stopped and missing are the three kinds compared): inconclusive;
//  5. from the verify: file absent → restore; bytes drifted → reinstall;
//     a crash loop (failing, or caught running between two of its crashes
//     while the fresh beacon says failing, and started CrashLoopStarts
//     times or more) → crash_loop; inactive or failed → start; failing →
//     restart; active → none;
//  6. a unit of the catalog's recovery list that needs an action:
//     recovery_unit (stado's own host process is restarted only by the
//     host repair step).
//
// A host the sweep asked for reachability only (BeaconStands held for each
// of its declarations) skips rules 3 and 4: its fresh beacon's reading,
// the unit's state and the host's own comparison of its file, decides as
// the verify's would in rule 5 (a crash loop: failing and started
// CrashLoopStarts times or more).
//
// After a target's services come its release rows, one per product the
// registry declares a version of for it (planRelease): converge when the
// fresh beacon's active image is another version or none, nothing when it
// is the declared one, a refusal when the images are not known.
func Plan(in Input) []Row {
	// Beacon rows and verify checks come in registry order, so each is
	// looked for first at its own index in its host's list, then by a scan.
	beacons := make(map[string][]*beacon.Row, len(in.Doc.Targets))
	for i := range in.Beacons {
		b := &in.Beacons[i]
		beacons[b.Host] = append(beacons[b.Host], b)
	}
	hosts := map[string]*fleet.HostVerify{}
	if in.Verify != nil {
		for i := range in.Verify.Hosts {
			hosts[in.Verify.Hosts[i].Host] = &in.Verify.Hosts[i]
		}
	}
	releases := map[string][]*rollout.Row{}
	for k := range in.Releases {
		if rr := &in.Releases[k]; rr.Declared != "" {
			releases[rr.Host] = append(releases[rr.Host], rr)
		}
	}
	// Each target is planned alone, so runs of targets are planned on
	// every processor, each into its own stretch of rows (room for every
	// service and every release row a target may have), closed up after.
	targets := in.Doc.Targets
	services := outlines(in.Doc, in.Outline)
	at := make([]int, len(targets)+1)
	for i := range targets {
		at[i+1] = at[i] + len(services[i]) + len(releases[targets[i].Name])
	}
	rows := make([]Row, at[len(targets)])
	used := make([]int, len(targets))
	planRange := func(lo, hi int) {
		for ti := lo; ti < hi; ti++ {
			t := &targets[ti]
			hv := hosts[t.Name]
			bs := beacons[t.Name]
			out := rows[at[ti]:at[ti]:at[ti+1]]
			ss := services[ti]
			for i := range ss {
				s := &ss[i]
				var c *fleet.ServiceVerify
				if hv != nil {
					c = find(hv.Services, i, func(v *fleet.ServiceVerify) bool { return v.Service == s.Name })
				}
				b := findPtr(bs, i, func(r *beacon.Row) bool { return r.Service == s.Name })
				out = append(out, planOne(in.Catalog, t.Name, s, b, hv, c))
			}
			for _, rr := range releases[t.Name] {
				if row, ok := planRelease(t.Name, ss, rr, hv); ok {
					out = append(out, row)
				}
			}
			used[ti] = len(out)
		}
	}
	spread.Runs(len(targets), planRun, planRange)
	n := 0
	for ti := range targets {
		if at[ti] != n {
			copy(rows[n:], rows[at[ti]:at[ti]+used[ti]])
		}
		n += used[ti]
	}
	clear(rows[n:])
	return rows[:n:n]
}

// planRun is how many targets one processor plans at a time.
const planRun = 64

// planRelease decides one declared product on one host from its release
// row; false when the host runs the declared version (nothing to say).
// An unknown image (stale, absent or unreadable beacon, no release block,
// an unreadable state file) is refused no_evidence with the reason, and a
// host the sweep could not reach unreachable: the cycle never guesses what
// a host runs.
func planRelease(host string, services []registry.ServiceOutline, rr *rollout.Row, hv *fleet.HostVerify) (Row, bool) {
	r := Row{Host: host, Service: rr.Product, Product: rr.Product}
	for i := range services {
		if s := &services[i]; s.Product == rr.Product {
			r.Service, r.Unit = s.Name, s.Unit
			break
		}
	}
	ev := &ReleaseEvidence{Declared: rr.Declared, Pinned: rr.Pinned, Status: rr.Status, Active: rr.Active, Backup: rr.Backup, Last: rr.Last, Unknown: rr.Unknown}
	r.Evidence.Release = ev
	// A release row reads no unit state of the beacon, only its freshness.
	if rr.Beacon != nil {
		r.Evidence.Beacon.Freshness = *rr.Beacon
	}
	if r.Evidence.Beacon.Freshness.Kind != beacon.FreshnessFresh {
		r.Evidence.Beacon.State = beacon.StateUnknown
	}
	if hv != nil {
		r.Evidence.Verify = VerifyEvidence{Reachable: hv.Reachable, Stage: hv.Stage}
		if hv.Error != nil {
			r.Evidence.Verify.Error = hv.Error.Message
		}
	}
	switch {
	case rr.Status == rollout.StatusConverged:
		return r, false
	case rr.Status == rollout.StatusUnknown:
		r.Refusal = &Refusal{Code: CodeNoEvidence, Message: fmt.Sprintf("%s on %s: %s is declared, and the host's images are not known (%s)", rr.Product, host, rr.Declared, rr.Unknown)}
	case hv != nil && !hv.Reachable:
		cause := r.Evidence.Verify.Error
		if cause == "" {
			cause = "no answer"
		}
		r.Refusal = &Refusal{Code: CodeUnreachable, Stage: hv.Stage, Message: fmt.Sprintf("%s is unreachable at stage %s: %s", host, hv.Stage, cause)}
	case rr.Status == rollout.StatusDiffers || rr.Status == rollout.StatusNotInstalled:
		now := "none"
		if rr.Active != nil {
			now = rr.Active.Version
		}
		r.Action, r.Plan = ActionConverge, fmt.Sprintf("would activate %s %s, now %s", rr.Product, rr.Declared, now)
		if rr.Pinned {
			r.Plan += " (pinned)"
		}
	default:
		return r, false
	}
	return r, true
}

// find returns the element of list that matches, looking at index i first.
func find[T any](list []T, i int, match func(*T) bool) *T {
	if i < len(list) && match(&list[i]) {
		return &list[i]
	}
	for k := range list {
		if match(&list[k]) {
			return &list[k]
		}
	}
	return nil
}

// findPtr is find over a list of pointers.
func findPtr[T any](list []*T, i int, match func(*T) bool) *T {
	if i < len(list) && match(list[i]) {
		return list[i]
	}
	for _, p := range list {
		if match(p) {
			return p
		}
	}
	return nil
}

func planOne(cat *catalog.Catalog, host string, s *registry.ServiceOutline, b *beacon.Row, hv *fleet.HostVerify, c *fleet.ServiceVerify) Row {
	r := Row{Host: host, Service: s.Name, Unit: s.Unit}
	r.Evidence.Beacon.State = beacon.StateUnknown
	if b != nil {
		r.Evidence.Beacon = BeaconEvidence{State: b.State, PID: b.PID, LastExit: b.LastExit, Starts: b.Starts, Freshness: b.Beacon, File: b.File}
	} else {
		r.Evidence.Beacon.Freshness = beacon.Freshness{Reason: "no beacon row for this declaration"}
	}
	if hv != nil {
		r.Evidence.Verify = VerifyEvidence{Reachable: hv.Reachable, ReachOnly: hv.ReachOnly, Stage: hv.Stage, Check: c}
		if hv.Error != nil {
			r.Evidence.Verify.Error = hv.Error.Message
		}
	}
	refuse := func(code refusal.Code, stage, format string, args ...any) Row {
		r.Refusal = &Refusal{Code: code, Stage: stage, Message: fmt.Sprintf(format, args...)}
		return r
	}
	if s.Incomplete() {
		msg := fmt.Sprintf("%s on %s declares no program and args; it cannot be rendered or reinstalled", s.Name, host)
		if s.IncompleteReason != "" {
			msg += " (" + s.IncompleteReason + ")"
		}
		return refuse(CodeDeclarationIncomplete, "", "%s; hint: read it with stado service show %s and write its program and args into the entry", msg, s.Name)
	}
	fresh := b != nil && b.Beacon.Kind == beacon.FreshnessFresh && b.State != beacon.StateUnknown
	switch {
	case hv == nil:
		return refuse(CodeNoEvidence, "", "the verify sweep did not read %s", host)
	case !hv.Reachable:
		cause := r.Evidence.Verify.Error
		if cause == "" {
			cause = "no answer"
		}
		return refuse(CodeUnreachable, hv.Stage, "%s is unreachable at stage %s: %s", host, hv.Stage, cause)
	case hv.ReachOnly && c == nil:
		if !BeaconStands(b) {
			return refuse(CodeNoEvidence, "", "%s on %s: the sweep read only the host's reachability, and the beacon cannot stand in (%s)", s.Unit, host, beaconReason(b))
		}
		lastExit := 0
		if b.LastExit != nil {
			lastExit = *b.LastExit
		}
		var logs []string
		if b.LastStderr != "" {
			logs = []string{b.LastStderr}
		}
		return decide(cat, host, s, r, reading{state: b.State, path: b.File.Path, absent: b.File.Absent, drift: b.File.Drift,
			starts: b.Starts, lastExit: lastExit, sentence: b.Sentence, logs: logs,
			crashLoop: b.Starts >= CrashLoopStarts && b.State == units.StateFailing})
	case c == nil || c.State == "":
		why := "the verify did not report it"
		if c != nil && c.Refusal != nil {
			why = c.Refusal.Message
		}
		if !fresh {
			return refuse(CodeNoEvidence, "", "%s on %s: %s, and the beacon cannot stand in (%s)", s.Unit, host, why, beaconReason(b))
		}
		return refuse(CodeInconclusive, "", "%s on %s: %s; the beacon alone does not justify an action", s.Unit, host, why)
	case c.Refusal != nil && !c.FileAbsent && !c.Drift:
		// The state was read but the bytes could not be compared: acting on
		// half the evidence is not justified unless the unit runs as it is.
		if c.State == units.StateActive {
			r.Action = ActionNone
			return r
		}
		return refuse(CodeInconclusive, "", "%s on %s is %s but its file could not be compared: %s", s.Unit, host, c.State, c.Refusal.Message)
	}
	// A crash loop flaps: a reader may catch its program in the moment it
	// runs. Its start count, and a beacon that saw it failing, give it away.
	starts := c.Evidence.Starts
	if fresh && b.Starts > starts {
		starts = b.Starts // the same host's count, read a moment earlier
	}
	crashLoop := starts >= CrashLoopStarts &&
		(c.State == units.StateFailing || (c.State == units.StateActive && fresh && b.State == units.StateFailing))
	if fresh && kind(b.State) != kind(c.State) && !crashLoop {
		return refuse(CodeInconclusive, "", "the beacon (pass %d, %.0fs old) says %s is %s and the verify says %s", b.Beacon.Pass, b.Beacon.AgeSeconds, s.Unit, b.State, c.State)
	}
	sentence := c.Evidence.Sentence
	if sentence == "" && b != nil {
		sentence = b.Sentence
	}
	return decide(cat, host, s, r, reading{state: c.State, path: c.Path, absent: c.FileAbsent, drift: c.Drift, dropIns: c.RepeatingDropIns,
		starts: starts, lastExit: c.Evidence.LastExit, sentence: sentence, logs: c.Logs, crashLoop: crashLoop})
}

// reading is what rule 5 decides from: the verify's check of the unit, or
// the fresh beacon's report of a host asked for reachability only.
type reading struct {
	state         string
	path          string
	absent, drift bool
	dropIns       []string
	starts        int
	lastExit      int
	sentence      string
	logs          []string
	crashLoop     bool
}

// decide is rules 5 and 6 over one reading.
func decide(cat *catalog.Catalog, host string, s *registry.ServiceOutline, r Row, u reading) Row {
	switch {
	case u.absent:
		r.Action, r.Plan = ActionRestore, fmt.Sprintf("would create %s from the declaration and start %s", orUnitPath(u.path), s.Unit)
	case u.drift:
		r.Action, r.Plan = ActionReinstall, fmt.Sprintf("would install the declared bytes at %s and restart %s", orUnitPath(u.path), s.Unit)
	case len(u.dropIns) > 0:
		r.Action, r.Plan = ActionReinstall, fmt.Sprintf("would set aside %s, which repeats commands of the declaration, and restart %s", strings.Join(u.dropIns, ", "), s.Unit)
	case u.state == units.StateInactive || u.state == units.StateFailed || u.state == units.StateMissing:
		r.Action, r.Plan = ActionStart, "would start "+s.Unit
	case u.crashLoop:
		ev := u.sentence
		if ev == "" {
			ev = fmt.Sprintf("last exit %d, started %d time(s)", u.lastExit, u.starts)
		}
		if n := len(u.logs); n > 0 {
			ev += "; last line: " + u.logs[n-1]
		}
		r.Refusal = &Refusal{Code: CodeCrashLoop, Message: fmt.Sprintf("%s on %s runs its declared bytes in a crash loop (%s); a restart would change nothing: fix the program or its declaration", s.Unit, host, ev)}
		return r
	case u.state == units.StateFailing:
		r.Action, r.Plan = ActionRestart, fmt.Sprintf("would restart %s (last exit %d)", s.Unit, u.lastExit)
	default:
		r.Action = ActionNone
	}
	if r.Action != ActionNone && cat != nil {
		if p, ok := recoveryEntry(cat, s); ok {
			r.Action, r.Plan = "", ""
			r.Refusal = &Refusal{Code: CodeRecoveryUnit, Message: fmt.Sprintf("%s on %s is %s on the recovery list: it is restarted only by its recovery path (stado repair %s --step host --target %s --apply)", s.Unit, host, p.Name, p.Name, host)}
		}
	}
	return r
}

// BeaconStands reports whether a beacon row can stand in for the verify's
// reading of its unit: the beacon is fresh, says a state the plan knows
// (active, inactive, failed, failing or missing) and carries the host's
// comparison of the unit file with the declaration's rendering. A unit
// caught running after its supervisor started it CrashLoopStarts times or
// more does not stand: one reading cannot tell a crash loop between two
// crashes from a unit that recovered, so the sweep reads it a second time
// and the plan weighs both readings (rule 5).
func BeaconStands(b *beacon.Row) bool {
	if b == nil || b.Beacon.Kind != beacon.FreshnessFresh || b.File == nil || b.File.Uncompared {
		return false
	}
	switch b.State {
	case units.StateActive:
		return b.Starts < CrashLoopStarts
	case units.StateInactive, units.StateFailed, units.StateFailing, units.StateMissing:
		return true
	}
	return false
}

func recoveryEntry(cat *catalog.Catalog, s *registry.ServiceOutline) (*catalog.Product, bool) {
	if p, ok := cat.RecoveryEntry(s.Unit); ok {
		return p, true
	}
	return cat.RecoveryEntry(s.Name)
}

// kind groups states the way a plan compares them: running, stopped or
// missing. Between two readings a crash loop moves between failing and
// inactive; it does not become active or lose its unit.
func kind(state string) string {
	switch state {
	case units.StateActive:
		return "running"
	case units.StateMissing:
		return "missing"
	default:
		return "stopped"
	}
}

func beaconReason(b *beacon.Row) string {
	switch {
	case b == nil:
		return "no beacon row"
	case b.Beacon.Reason != "":
		return b.Beacon.Reason
	}
	return "beacon state " + b.State
}

func orUnitPath(p string) string {
	if p == "" {
		return "the unit file"
	}
	return p
}

// Counts counts rows by action and by refusal code.
func Counts(rows []Row) map[string]int {
	out := map[string]int{}
	for _, r := range rows {
		switch {
		case r.Refusal != nil:
			out[string(r.Refusal.Code)]++
		default:
			out[r.Action]++
		}
	}
	return out
}

// Summary says a plan in one line: how many rows of each action and refusal.
func Summary(rows []Row) string {
	c := Counts(rows)
	var parts []string
	for _, k := range []string{ActionRestore, ActionReinstall, ActionStart, ActionRestart, ActionConverge, ActionNone} {
		if c[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, c[k]))
		}
	}
	for _, k := range []refusal.Code{CodeDeclarationIncomplete, CodeUnreachable, CodeNoEvidence, CodeInconclusive, CodeCrashLoop, CodeRecoveryUnit, CodeNotAttempted} {
		if c[string(k)] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, c[string(k)]))
		}
	}
	if len(parts) == 0 {
		return "nothing declared"
	}
	return strings.Join(parts, ", ")
}

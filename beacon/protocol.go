package beacon

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/wisent/stado/declaration"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/svcproto"
	"github.com/wisent/stado/units"
)

// ProtocolEvidence is the beacon contributor that reads, for every declared service
// of this host naming a protocol executable, its status and ready
// operations (fingerprint for a probe) once per declared period. A reading
// runs in a goroutine of its own and is carried by the first pass after it
// ends, so a slow executable never holds a pass. Safe for concurrent use;
// Close ends it.
type ProtocolEvidence struct {
	// Run runs one operation; nil means svcproto.Run.
	Run svcproto.Runner
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// An operation runs as the agent would run it (svcproto.Invocation):
	// the protocol's environment with this host as the node (PATH the
	// units' fixed one), cwd the bundle root, and a user-scope
	// declaration's operations as the target's SSH user.

	once    sync.Once
	mu      sync.Mutex
	states  map[string]*protocolState
	ctx     context.Context
	cancel  context.CancelFunc
	running sync.WaitGroup
}

type protocolState struct {
	key     string // what changes retire the reading: argv and probe
	last    *Protocol
	started time.Time // when the newest reading started; zero before the first
	busy    bool
}

func (e *ProtocolEvidence) init() {
	e.once.Do(func() {
		e.states = map[string]*protocolState{}
		e.ctx, e.cancel = context.WithCancel(context.Background())
	})
}

func (e *ProtocolEvidence) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// Close cancels readings in flight and waits for them.
func (e *ProtocolEvidence) Close() {
	e.init()
	e.cancel()
	e.running.Wait()
}

// Idle waits until no reading runs (tests use it).
func (e *ProtocolEvidence) Idle() { e.running.Wait() }

// Contribute implements Contributor.
func (e *ProtocolEvidence) Contribute(_ context.Context, p *Pass) {
	e.init()
	now := e.now().UTC()
	seen := map[string]bool{}
	e.mu.Lock()
	defer e.mu.Unlock()
	if p.Target != nil {
		for i := range p.Target.Services {
			svc := &p.Target.Services[i]
			if svc.Protocol == nil || len(svc.Protocol.Exec) == 0 {
				continue
			}
			seen[svc.Name] = true
			st := e.advance(svc, p.node(), now)
			if rep := p.Unit(svc.Name); rep != nil {
				b := *st.last
				rep.Protocol = &b
			}
		}
	}
	for name := range e.states {
		if !seen[name] {
			delete(e.states, name)
		}
	}
}

// advance starts a reading when one is due and returns the state. e.mu is held.
func (e *ProtocolEvidence) advance(svc *registry.Service, node svcproto.Node, now time.Time) *protocolState {
	key := protocolKey(svc.Protocol)
	st := e.states[svc.Name]
	if st == nil || st.key != key {
		st = &protocolState{key: key, last: &Protocol{State: ProtocolPending}}
		e.states[svc.Name] = st
	}
	period := time.Duration(svc.Protocol.Period()) * time.Second
	if st.busy || (!st.started.IsZero() && now.Sub(st.started) < period) {
		return st
	}
	st.busy, st.started = true, now
	argv := append([]string(nil), svc.Protocol.Exec...)
	env, opts, err := svcproto.Invocation(*svc, node)
	probe := svc.Protocol.Probe
	e.running.Add(1)
	go func() {
		defer e.running.Done()
		var b *Protocol
		if err != nil {
			at := e.now().UTC()
			op := svcproto.OpStatus
			if probe {
				op = svcproto.OpFingerprint
			}
			b = &Protocol{State: ProtocolUnreadable, At: &at, Op: op, Cause: err.Error()}
		} else {
			b = e.read(argv, env, opts, probe)
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		st.busy = false
		if e.states[svc.Name] == st {
			st.last = b
		}
	}()
	return st
}

// read runs one reading: status then ready, or fingerprint for a probe.
func (e *ProtocolEvidence) read(argv, env []string, opts svcproto.Options, probe bool) *Protocol {
	run := e.Run
	if run == nil {
		run = opts.Runner()
	}
	at := e.now().UTC()
	b := &Protocol{State: ProtocolRead, At: &at}
	unreadable := func(err error) *Protocol {
		pe := protocolError(err)
		b.State, b.Op, b.Cause = ProtocolUnreadable, pe.Op, pe.Cause
		return b
	}
	if probe {
		fp, err := svcproto.ReadFingerprint(e.ctx, run, argv, env)
		if err != nil {
			return unreadable(err)
		}
		b.Healthy, b.Running = &fp.Healthy, &fp.Running
		return b
	}
	st, err := svcproto.ReadStatus(e.ctx, run, argv, svcproto.OpStatus, env)
	if err != nil {
		return unreadable(err)
	}
	rd, err := svcproto.ReadStatus(e.ctx, run, argv, svcproto.OpReady, env)
	if err != nil {
		return unreadable(err)
	}
	// ready is the gate; status's running is the process's own word
	b.Running, b.Ready = &st.Running, &rd.Ready
	return b
}

// node is this host as the node its protocol operations run on.
func (p *Pass) node() svcproto.Node {
	n := svcproto.Node{ID: p.Host, OS: registry.OSLinux, ScopeUser: "root"}
	if p.Target != nil {
		if p.Target.OS != "" {
			n.OS = p.Target.OS
		}
		if p.Target.SSH.User != "" {
			n.ScopeUser = p.Target.SSH.User
		}
	}
	n.Path = units.FixedPath(n.OS)
	return n
}

// protocolError is err as the operation and cause it names.
func protocolError(err error) *svcproto.Error {
	var pe *svcproto.Error
	if errors.As(err, &pe) {
		return pe
	}
	return &svcproto.Error{Cause: err.Error()}
}

func protocolKey(p *declaration.ServiceProtocol) string {
	k := ""
	for _, a := range p.Exec {
		k += a + "\x00"
	}
	if p.Probe {
		k += "probe"
	}
	return k
}

package beacon

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/wisent/stado/declaration"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/svcproto"
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
	// Environ is the environment every operation starts from (before the
	// declaration's own env); nil means only PATH.
	Environ []string

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
			st := e.advance(svc, now)
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
func (e *ProtocolEvidence) advance(svc *registry.Service, now time.Time) *protocolState {
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
	env := e.environ(svc)
	probe := svc.Protocol.Probe
	e.running.Add(1)
	go func() {
		defer e.running.Done()
		b := e.read(argv, env, probe)
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
func (e *ProtocolEvidence) read(argv, env []string, probe bool) *Protocol {
	run := e.Run
	if run == nil {
		run = func(ctx context.Context, argv []string, op string, env []string) ([]byte, error) {
			return svcproto.Run(ctx, argv, op, env)
		}
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

// environ is the operation's environment: the base, the declaration's env
// and OARBANK_SERVICE naming the declaration.
func (e *ProtocolEvidence) environ(svc *registry.Service) []string {
	env := e.Environ
	if env == nil {
		env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	}
	env = append([]string(nil), env...)
	names := make([]string, 0, len(svc.Env))
	for k := range svc.Env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		env = append(env, k+"="+svc.Env[k])
	}
	return append(env, "OARBANK_SERVICE="+svc.Name)
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

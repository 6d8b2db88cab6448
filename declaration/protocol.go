package declaration

import (
	"fmt"
	"strconv"
)

// ServiceProtocol names an executable speaking Oarbank's service protocol 1
// for a declared service. The host pass runs its status and ready
// operations (fingerprint for a probe) every PeriodSeconds and carries what
// they say in the beacon, beside the unit's own state.
type ServiceProtocol struct {
	// Exec is the argv of the executable; the operation is appended.
	Exec []string `yaml:"exec" json:"exec"`
	// PeriodSeconds is the time between two reads; 0 means
	// DefaultProtocolPeriod.
	PeriodSeconds int `yaml:"period_seconds,omitempty" json:"period_seconds,omitempty"`
	// Probe says the executable implements only fingerprint.
	Probe bool `yaml:"probe,omitempty" json:"probe,omitempty"`
}

// DefaultProtocolPeriod is the period of a protocol read when the
// declaration gives none, in seconds.
const DefaultProtocolPeriod = 30

// Period returns the period with its default applied.
func (p *ServiceProtocol) Period() int {
	if p.PeriodSeconds <= 0 {
		return DefaultProtocolPeriod
	}
	return p.PeriodSeconds
}

// protocol validates a service's protocol block at path p.
func (v *validator) protocol(sp *ServiceProtocol, p string) {
	if sp == nil {
		return
	}
	p += ".protocol"
	if len(sp.Exec) == 0 {
		v.add(p+".exec", "missing; the protocol executable's argv")
	}
	for i, a := range sp.Exec {
		ap := p + ".exec[" + strconv.Itoa(i) + "]"
		if i == 0 {
			if msg := PathProblem(a); msg != "" {
				v.add(ap, "%s", msg)
			}
			continue
		}
		if msg := ArgProblem(a); msg != "" {
			v.add(ap, "%s", msg)
		}
	}
	if sp.PeriodSeconds < 0 || sp.PeriodSeconds > 86400 {
		v.add(p+".period_seconds", "%s", fmt.Sprintf("must be 0 (default %d) to 86400, got %d", DefaultProtocolPeriod, sp.PeriodSeconds))
	}
}

package registry

import (
	"fmt"

	"github.com/wisent/stado/declaration"
	"github.com/wisent/stado/store"
)

// Limits of a registry document (docs/limits.md); the limits of one
// service (arguments, environment, command size) are declaration's. A document past them is
// refused when it is pushed and when it is read back from the store, so no
// reader spends seconds and gigabytes on one, and no declaration is stored
// that the render, the channel or the host would refuse later.
const (
	// MaxDocumentBytes bounds a registry document as text (YAML or JSON)
	// and as stored; it is checked before the document is parsed. It
	// admits the largest fleet the other limits are meant for in its common
	// shape: 10,000 targets of 20 services is 28 MB as stored.
	MaxDocumentBytes = 32 << 20
	// MaxTargets bounds the targets of a document.
	MaxTargets = 10_000
	// MaxServicesPerTarget bounds the services of one target.
	MaxServicesPerTarget = 1_000
	// MaxTargetNameBytes keeps the key of a target's beacon
	// (store.BeaconPrefix + name) within store.MaxKeyLength, so the host can publish.
	MaxTargetNameBytes = store.MaxKeyLength - len(store.BeaconPrefix)
)

// CheckDocumentSize refuses a document text larger than MaxDocumentBytes,
// before anything parses it. The error is a *ParseError naming source.
func CheckDocumentSize(data []byte, source string) error {
	if len(data) > MaxDocumentBytes {
		return &ParseError{Source: source, Msg: fmt.Sprintf("document is %d bytes, the limit is %d (docs/limits.md)", len(data), MaxDocumentBytes)}
	}
	return nil
}

// documentLimits checks the document against the limits above and against what
// the render, the channel and the host refuse, naming each field.
func (v *validator) documentLimits(d *Document, perTarget [][]Violation) {
	if d == nil {
		return
	}
	if len(d.Targets) > MaxTargets {
		v.add("targets", "%d targets, the limit is %d", len(d.Targets), MaxTargets)
	}
	for i := range d.Targets {
		v.out = append(v.out, perTarget[i]...)
	}
}

// targetLimits checks one target, at path p, against the size limits.
func (v *validator) targetLimits(t *Target, p string) {
	if len(t.Name) > MaxTargetNameBytes {
		v.add(p+".name", "%d bytes, at most %d: the host publishes its beacon under %s<name>, a store key of at most %d bytes", len(t.Name), MaxTargetNameBytes, store.BeaconPrefix, store.MaxKeyLength)
	}
	if len(t.Services) > MaxServicesPerTarget {
		v.add(p+".services", "%d services, the limit per target is %d", len(t.Services), MaxServicesPerTarget)
	}
	for j := range t.Services {
		v.addService(at(p, "services", j), declaration.CheckLimits(&t.Services[j], t.OS))
	}
}

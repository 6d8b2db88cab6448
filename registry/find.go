package registry

import (
	"fmt"
	"strings"

	"github.com/wisent/stado/refusal"
)

// FindService finds the declaration addressed by name (its name or unit)
// on target host, or on every target when host is "". Refusals: not_found
// when no target declares it, ambiguous (with a hint to name the target)
// when several do.
func (d *Document) FindService(host, name string) (*Target, *Service, error) {
	var found []*Target
	var svc *Service
	for i := range d.Targets {
		t := &d.Targets[i]
		if host != "" && t.Name != host {
			continue
		}
		if s, ok := t.Service(name); ok {
			found, svc = append(found, t), s
		}
	}
	switch {
	case len(found) == 0 && host != "":
		return nil, nil, refusal.New(refusal.NotFound, "service %s is not declared on target %s", name, host)
	case len(found) == 0:
		return nil, nil, refusal.New(refusal.NotFound, "service %s is not declared on any target", name)
	case len(found) > 1:
		names := make([]string, len(found))
		for i, t := range found {
			names[i] = t.Name
		}
		return nil, nil, &refusal.Error{Code: refusal.Ambiguous, Message: fmt.Sprintf("service %s is declared on %s", name, strings.Join(names, ", ")),
			Hint: "name the target with --host"}
	}
	return found[0], svc, nil
}

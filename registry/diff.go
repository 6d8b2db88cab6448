package registry

import (
	"encoding/json"
	"slices"
)

// Clone returns a deep copy of d: changing the copy never changes d.
func (d *Document) Clone() *Document {
	if d == nil {
		return nil
	}
	c := *d
	c.Directory = slices.Clone(d.Directory)
	for i := range c.Directory {
		c.Directory[i].Callers = slices.Clone(d.Directory[i].Callers)
	}
	c.Releases = cloneReleases(d.Releases)
	c.Targets = slices.Clone(d.Targets)
	for i := range c.Targets {
		t := &c.Targets[i]
		t.Releases = cloneReleases(t.Releases)
		t.Alerts = slices.Clone(t.Alerts)
		for j := range t.Alerts {
			a := &t.Alerts[j]
			if a.Webhook != nil {
				w := *a.Webhook
				a.Webhook = &w
			}
			if a.Command != nil {
				cmd := CommandAlert{Argv: slices.Clone(a.Command.Argv)}
				a.Command = &cmd
			}
		}
		t.Services = slices.Clone(t.Services)
		for j := range t.Services {
			t.Services[j] = t.Services[j].Clone()
		}
	}
	return &c
}

// Change summarises what a push changes, for its report. Services are
// named "<target>/<service>". A service of an added or removed target is
// listed as added or removed too.
type Change struct {
	TargetsAdded     []string `json:"targets_added,omitempty"`
	TargetsChanged   []string `json:"targets_changed,omitempty"`
	TargetsRemoved   []string `json:"targets_removed,omitempty"`
	ServicesAdded    []string `json:"services_added,omitempty"`
	ServicesChanged  []string `json:"services_changed,omitempty"`
	ServicesRemoved  []string `json:"services_removed,omitempty"`
	DirectoryAdded   []string `json:"directory_added,omitempty"`
	DirectoryChanged []string `json:"directory_changed,omitempty"`
	DirectoryRemoved []string `json:"directory_removed,omitempty"`
	ResolverChanged  bool     `json:"resolver_changed,omitempty"`
	// ReleasesChanged names each declared version set, changed or removed:
	// "PRODUCT" at the top level, "TARGET/PRODUCT" on a target.
	ReleasesChanged []string `json:"releases_changed,omitempty"`
}

// Empty reports whether the change changes nothing.
func (c Change) Empty() bool {
	return len(c.TargetsAdded)+len(c.TargetsChanged)+len(c.TargetsRemoved)+
		len(c.ServicesAdded)+len(c.ServicesChanged)+len(c.ServicesRemoved)+
		len(c.DirectoryAdded)+len(c.DirectoryChanged)+len(c.DirectoryRemoved)+len(c.ReleasesChanged) == 0 && !c.ResolverChanged
}

// Diff compares two documents; a nil old is the empty registry. Lists are
// in the order of the document that holds the item (new for added and
// changed, old for removed).
func Diff(old, new *Document) Change {
	if old == nil {
		old = &Document{}
	}
	if new == nil {
		new = &Document{}
	}
	var c Change
	c.ResolverChanged = !sameJSON(old.ServiceResolver, new.ServiceResolver)
	c.ReleasesChanged = releasesChanged(old.Releases, new.Releases, "")
	for _, nt := range new.Targets {
		ot, ok := old.Target(nt.Name)
		if !ok {
			c.TargetsAdded = append(c.TargetsAdded, nt.Name)
			for _, s := range nt.Services {
				c.ServicesAdded = append(c.ServicesAdded, nt.Name+"/"+s.Name)
			}
			continue
		}
		a, b := *ot, nt
		a.Services, b.Services = nil, nil
		a.Releases, b.Releases = nil, nil
		if !sameJSON(a, b) {
			c.TargetsChanged = append(c.TargetsChanged, nt.Name)
		}
		c.ReleasesChanged = append(c.ReleasesChanged, releasesChanged(ot.Releases, nt.Releases, nt.Name+"/")...)
		for _, ns := range nt.Services {
			os, ok := serviceNamed(ot, ns.Name)
			switch {
			case !ok:
				c.ServicesAdded = append(c.ServicesAdded, nt.Name+"/"+ns.Name)
			case !sameJSON(os, ns):
				c.ServicesChanged = append(c.ServicesChanged, nt.Name+"/"+ns.Name)
			}
		}
		for _, os := range ot.Services {
			if _, ok := serviceNamed(&nt, os.Name); !ok {
				c.ServicesRemoved = append(c.ServicesRemoved, nt.Name+"/"+os.Name)
			}
		}
	}
	for _, ot := range old.Targets {
		if _, ok := new.Target(ot.Name); !ok {
			c.TargetsRemoved = append(c.TargetsRemoved, ot.Name)
			for _, s := range ot.Services {
				c.ServicesRemoved = append(c.ServicesRemoved, ot.Name+"/"+s.Name)
			}
		}
	}
	for _, ne := range new.Directory {
		oe, ok := old.DirectoryEntryOn(ne.Service, ne.Host)
		switch {
		case !ok:
			c.DirectoryAdded = append(c.DirectoryAdded, ne.Service+"@"+ne.Host)
		case !sameJSON(*oe, ne):
			c.DirectoryChanged = append(c.DirectoryChanged, ne.Service+"@"+ne.Host)
		}
	}
	for _, oe := range old.Directory {
		if _, ok := new.DirectoryEntryOn(oe.Service, oe.Host); !ok {
			c.DirectoryRemoved = append(c.DirectoryRemoved, oe.Service+"@"+oe.Host)
		}
	}
	return c
}

func serviceNamed(t *Target, name string) (Service, bool) {
	for _, s := range t.Services {
		if s.Name == name {
			return s, true
		}
	}
	return Service{}, false
}

// sameJSON compares two values by their JSON form, so nil and empty lists
// (both omitted) compare equal.
func sameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

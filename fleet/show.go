package fleet

import (
	"context"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
)

// ShownDeclaration is one host's declaration in Show.
type ShownDeclaration struct {
	Host       string           `json:"host"`
	Service    registry.Service `json:"service"`
	Incomplete bool             `json:"incomplete"`
}

// ShowResult is a service's declarations and its catalog entry.
type ShowResult struct {
	Name         string             `json:"name"`
	Revision     int64              `json:"registry_revision"`
	Declarations []ShownDeclaration `json:"declarations"`
	Catalog      *catalog.Product   `json:"catalog,omitempty"`
	// Host is the host's truth, read when show is asked for one host.
	Host *HostTruth `json:"host_truth,omitempty"`
}

// Show reads name's declarations (by name or unit) on every target and its
// catalog entry, without any host. Env values are masked unless showValues.
func (f *Fleet) Show(name string, showValues bool) (ShowResult, error) {
	res := ShowResult{Name: name, Revision: f.Meta.Revision, Declarations: []ShownDeclaration{}}
	for _, t := range f.Doc.Targets {
		if s, ok := t.Service(name); ok {
			d := s.Masked(showValues)
			res.Declarations = append(res.Declarations, ShownDeclaration{Host: t.Name, Service: d, Incomplete: s.Incomplete()})
		}
	}
	product, ok := f.Catalog.Lookup(name)
	if !ok {
		product, ok = f.Catalog.RecoveryEntry(name)
	}
	if ok {
		res.Catalog = product
	}
	if len(res.Declarations) == 0 && !ok {
		return res, refusal.New(refusal.NotFound, "%s is neither declared on any target nor a catalog product", name)
	}
	return res, nil
}

// HostTruth is what a host holds for a declaration: the unit file the init
// system loaded, its drop-ins, the live verdict, and how adopt reads the
// file now (complete, or every blocker).
type HostTruth struct {
	Host     string          `json:"host"`
	Unit     string          `json:"unit"`
	Verdict  *units.Verdict  `json:"verdict,omitempty"`
	File     *units.UnitFile `json:"file,omitempty"`
	Complete bool            `json:"complete"`
	Blockers []units.Blocker `json:"blockers,omitempty"`
	Error    *HostError      `json:"error,omitempty"`
}

// ShowOnHost reads name's declaration on host together with the host's
// truth about its unit (one channel call: verdict, file and drop-ins), so
// an incomplete declaration can be completed from what actually runs. The
// file is masked as a whole unless showValues when it sets environment
// values or the declaration marks arguments secret.
func (f *Fleet) ShowOnHost(ctx context.Context, name, host string, showValues bool) (ShowResult, error) {
	res, err := f.Show(name, showValues)
	if err != nil {
		return res, err
	}
	t, s, err := f.Declared(host, name)
	if err != nil {
		return res, err
	}
	truth := &HostTruth{Host: t.Name, Unit: s.Unit}
	res.Host = truth
	h, err := f.host(t)
	var fr channel.FileResult
	if err == nil {
		fr, err = h.UnitFile(ctx, channel.UnitRef{Scope: s.EffectiveScope(), Unit: s.Unit})
	}
	if err != nil {
		truth.Error = DescribeHostError(t.Name, err)
		return res, err
	}
	truth.Verdict = &fr.Verdict
	if fr.File != nil {
		truth.File = fr.File
		if p, perr := units.ParseUnit(fr.File.Path, fr.File.Unit, []byte(fr.File.Content), fr.File.DropIns); perr == nil {
			truth.Complete, truth.Blockers = p.Complete, p.Blockers
			if !showValues && (len(p.Env) > 0 || len(s.SecretArgs) > 0) {
				// The file's text holds the values (and the command line
				// the secret arguments): mask it as a whole.
				truth.File = &units.UnitFile{Unit: fr.File.Unit, Path: fr.File.Path, Home: fr.File.Home, Read: fr.File.Read,
					Content: "(masked: it sets environment values or secret arguments; --show-values prints it)"}
				for _, d := range fr.File.DropIns {
					truth.File.DropIns = append(truth.File.DropIns, units.DropIn{Path: d.Path, Content: "(masked)"})
				}
			}
		}
	}
	return res, nil
}

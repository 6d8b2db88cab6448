package rollout

import (
	"context"
	"fmt"
	"slices"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/release"
)

// Statuses of a show row: where a host's product stands against the
// registry's declared version.
const (
	StatusConverged    = "converged"     // the active image is the declared version
	StatusDiffers      = "differs"       // another version is active
	StatusNotInstalled = "not_installed" // a version is declared, none is active
	StatusUndeclared   = "undeclared"    // an image is active, no version is declared
	StatusUnknown      = "unknown"       // the host's images are not known (Unknown says why)
)

// Row is one product on one host.
type Row struct {
	Host    string `json:"host"`
	Product string `json:"product"`
	// Declared is the registry's version for this host (a target's own
	// declaration wins); Pinned when it pins exactly that version.
	Declared string `json:"declared,omitempty"`
	Pinned   bool   `json:"pinned,omitempty"`
	Status   string `json:"status"`
	// Converged is Status == StatusConverged.
	Converged bool                 `json:"converged"`
	Active    *beacon.ReleaseImage `json:"active,omitempty"`
	Backup    *beacon.ReleaseImage `json:"backup,omitempty"`
	// Last is the host's last activation of the product.
	Last *beacon.ReleaseActivation `json:"last,omitempty"`
	// Unit, PID, Exe and OnActive say what the product's unit runs now:
	// read over the channel (ShowHost) only. OnActive is nil when the host
	// could not say.
	Unit     string `json:"unit,omitempty"`
	PID      int    `json:"pid,omitempty"`
	Exe      string `json:"exe,omitempty"`
	OnActive *bool  `json:"on_active,omitempty"`
	// Beacon is the freshness of the beacon the row is read from (ShowFleet).
	Beacon *beacon.Freshness `json:"beacon,omitempty"`
	// Unknown says why the host's images are not known.
	Unknown string `json:"unknown,omitempty"`
}

// ShowFleet is every declared target's products as their beacons carry
// them, with no SSH: per host and product (only product when not empty) the
// declared version, the active and backup images and the last activation.
// A host whose beacon is not fresh, carries no releases block or reports
// its state file unreadable reads StatusUnknown with the reason; its images
// are never taken from an older report. Rows are in target order, products
// sorted. It touches nothing and is safe for concurrent use.
func ShowFleet(v *beacon.View, decl Declarations, product string) []Row {
	var rows []Row
	if v == nil || v.Document == nil {
		return rows
	}
	for i := range v.Document.Targets {
		t := &v.Document.Targets[i]
		fr := v.Freshness(t.Name)
		var rel *beacon.Releases
		unknown := ""
		switch b := v.Beacons[t.Name]; {
		case fr.Kind != beacon.FreshnessFresh:
			unknown = fr.Reason
		case b == nil || b.Releases == nil:
			unknown = "the beacon carries no release images (its stado reads no release directory)"
		case b.Releases.State == beacon.ReleasesUnreadable:
			unknown = "release state unreadable: " + b.Releases.Cause
		case b.Releases.State != beacon.ReleasesRead:
			unknown = fmt.Sprintf("the beacon's release block is in state %q, which the reader does not know", b.Releases.State)
		default:
			rel = b.Releases
		}
		products := decl.declaredOn(t.Name, product)
		if rel != nil {
			for _, pr := range rel.Products {
				if (product == "" || pr.Product == product) && !slices.Contains(products, pr.Product) {
					products = append(products, pr.Product)
				}
			}
			slices.Sort(products)
		}
		for _, p := range products {
			r := Row{Host: t.Name, Product: p, Beacon: &fr}
			r.Declared, r.Pinned, _ = decl.release(t.Name, p)
			if pr := rel.Product(p); pr != nil {
				r.Active, r.Backup, r.Last = pr.Active, pr.Backup, pr.Last
			}
			r.judge(unknown)
			rows = append(rows, r)
		}
	}
	return rows
}

// ShowHost reads one host's release state over its channel (one
// ReleaseState call), naming the unit of each of t's services that
// declares a product, so each row also says whether the unit's running
// pid runs the active image. It returns the channel's error as is (a
// refusal keeps its code). It changes nothing on the host.
func ShowHost(ctx context.Context, host channel.Host, t *registry.Target, decl Declarations, product string) ([]Row, error) {
	req := release.StateRequest{Units: map[string]release.UnitOf{}}
	for _, s := range t.Services {
		if s.Product != "" && (product == "" || s.Product == product) {
			req.Units[s.Product] = release.UnitOf{Scope: s.EffectiveScope(), Unit: s.Unit}
		}
	}
	res, err := host.ReleaseState(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("read release state of %s: %w", t.Name, err)
	}
	st := beacon.ReleasesOf(res.State, nil)
	products := decl.declaredOn(t.Name, product)
	for _, pr := range st.Products {
		if (product == "" || pr.Product == product) && !slices.Contains(products, pr.Product) {
			products = append(products, pr.Product)
		}
	}
	slices.Sort(products)
	rows := []Row{}
	for _, p := range products {
		r := Row{Host: t.Name, Product: p}
		r.Declared, r.Pinned, _ = decl.release(t.Name, p)
		if pr := st.Product(p); pr != nil {
			r.Active, r.Backup, r.Last = pr.Active, pr.Backup, pr.Last
		}
		if run, ok := res.Running[p]; ok {
			on := run.OnActive
			r.Unit, r.PID, r.Exe, r.OnActive = run.Unit, run.PID, run.Exe, &on
		} else if s := serviceOf(t, p); s != nil {
			r.Unit = s.Unit
		}
		r.judge("")
		rows = append(rows, r)
	}
	return rows, nil
}

// ShowTarget is ShowHost of the target doc names, over the Host connect
// gives it, with doc's declarations. A name doc declares no target of is
// refused with not_found before any host is reached.
func ShowTarget(ctx context.Context, connect channel.Connector, doc *registry.Document, name, product string) ([]Row, error) {
	t, ok := doc.Target(name)
	if !ok {
		return nil, refusal.New(refusal.NotFound, "the registry declares no target %q", name)
	}
	return ShowHost(ctx, connect(*t), t, DeclarationsOf(doc), product)
}

// judge sets the row's status from its declared and active versions, or
// unknown with why.
func (r *Row) judge(unknown string) {
	switch {
	case unknown != "":
		r.Status, r.Unknown = StatusUnknown, unknown
	case r.Declared == "":
		r.Status = StatusUndeclared
	case r.Active == nil:
		r.Status = StatusNotInstalled
	case r.Active.Version == r.Declared:
		r.Status = StatusConverged
	default:
		r.Status = StatusDiffers
	}
	r.Converged = r.Status == StatusConverged
}

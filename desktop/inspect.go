package desktop

import (
	"cmp"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/fleet"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/register"
	"github.com/wisent/stado/registry"
)

// Inspection is one row in full: its declaration (environment masked),
// catalog entry, unit verdict, answering block, the recovery the host
// reports beside it, and the recoveries other hosts attempted of it.
type Inspection struct {
	Row         Row
	Declaration *registry.Service
	DeclJSON    string
	Product     *catalog.Product
	ProductJSON string
	// AnsweringJSON is the whole answering block as the beacon holds it.
	AnsweringJSON string
	// Recovery is the block's recovery, decoded; RecoveryUnreadable says
	// why it could not be.
	Recovery           *register.Recovery
	RecoveryUnreadable string
	// MissingEvidence: the question stood and the block carries no
	// recovery.
	MissingEvidence bool
	Peers           []PeerView
	ProtocolJSON    string
	CSRF            string
	Error           *refusalView
}

// PeerView is a recovery of this row's service that another host's pass
// attempted, as that host's beacon reports it.
type PeerView struct {
	ObservedBy         string
	Summary            string
	Recovery           *register.Recovery
	RecoveryUnreadable string
	RecordingRefusal   *beacon.FileRefusal
}

// Inspect says the row of service on host in full; ok is false when the
// registry declares no such row.
func (sn *snapshot) Inspect(host, service string, now time.Time) (Inspection, bool) {
	var in Inspection
	found := false
	for _, r := range sn.Rows(now) {
		if r.Host == host && r.Service == service {
			in.Row, found = r, true
			break
		}
	}
	if !found {
		return in, false
	}
	if t, ok := sn.view.Document.Target(host); ok {
		if s, ok := t.Service(service); ok {
			d := s.Masked(false) // never a secret to the browser: env values and secret args masked
			in.Declaration, in.DeclJSON = &d, indent(d)
		}
	}
	if p, ok := sn.cat.Entry(cmp.Or(in.Row.Product, service)); ok {
		in.Product, in.ProductJSON = p, indent(p)
	} else if p, ok := sn.cat.Entry(in.Row.Unit); ok {
		in.Product, in.ProductJSON = p, indent(p)
	}
	if a := in.Row.Answering; a != nil {
		in.AnsweringJSON = indent(a)
		if len(a.Recovery) > 0 {
			in.Recovery, in.RecoveryUnreadable = decodeRecovery(a.Recovery)
		} else if a.State == beacon.AnswerStood {
			in.MissingEvidence = true
		}
	}
	if p := in.Row.Protocol; p != nil {
		in.ProtocolJSON = indent(p)
	}
	observers := make([]string, 0, len(sn.view.Beacons))
	for h := range sn.view.Beacons {
		observers = append(observers, h)
	}
	slices.Sort(observers)
	for _, h := range observers {
		if h == host {
			continue
		}
		for _, pr := range sn.view.Beacons[h].PeerRecoveries {
			if pr.Host != host || pr.Service != service {
				continue
			}
			pv := PeerView{ObservedBy: h, Summary: pr.Summary(), RecordingRefusal: pr.RecordingRefusal}
			if len(pr.Recovery) > 0 {
				pv.Recovery, pv.RecoveryUnreadable = decodeRecovery(pr.Recovery)
			}
			in.Peers = append(in.Peers, pv)
		}
	}
	return in, true
}

// decodeRecovery reads a recovery a beacon carries (the register row's
// JSON, which register.Recovery shares with register.Recovery).
func decodeRecovery(raw json.RawMessage) (*register.Recovery, string) {
	var r register.Recovery
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err.Error()
	}
	return &r, ""
}

func indent(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func (s *Server) handleInspect(w http.ResponseWriter, r *http.Request) {
	host, service := r.URL.Query().Get("host"), r.URL.Query().Get("service")
	sn, err := s.load(r.Context())
	if err != nil {
		s.render(w, "inspect", Inspection{Error: viewOfError(err)})
		return
	}
	in, ok := sn.Inspect(host, service, s.cfg.Now())
	if !ok {
		in.Error = viewOfError(fleet.NotManaged(service, host))
		in.Error.Code = string(refusal.NotFound)
	}
	in.CSRF = s.csrf
	s.render(w, "inspect", in)
}

package desktop

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/wisent/stado/fleet"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/register"
)

// OpTimeout bounds one operation's host calls.
const OpTimeout = 2 * time.Minute

// OpResult is what an operation answered, as the page shows it: its
// output, or its refusal (code and message), never both as a success.
type OpResult struct {
	Op      string
	Host    string
	Service string
	OK      bool
	Refusal *OpRefusal
	// JSON is the result document, as `--json` prints it.
	JSON       string
	Recoveries []register.Recovery
	File       string
	Logs       []string
	Unit       string
	Restart    *fleet.RestartOutcome
	// Hosts are ensure's, converge's and retire's results, one per host
	// (under Confirm: converge's plan, from its dry run).
	Hosts []HostLine
	// Headline is converge's first line: its hosts and caps.
	Headline string
	// Confirm asks for the operation's confirmation.
	Confirm bool
	CSRF    string
}

// HostLine is one host's part of an operation as the page shows it.
type HostLine struct {
	Host    string
	Action  string
	Outcome string
	OK      bool
	Code    string
	Detail  string
}

// OpRefusal is a refused or failed operation: its code and message, and
// where the host channel stopped.
type OpRefusal struct {
	Code       string
	Message    string
	Hint       string
	Stage      string
	StderrTail string
	Refused    bool
}

func refusalOf(host string, he *fleet.HostError, err error) *OpRefusal {
	if he == nil {
		he = fleet.DescribeHostError(host, err)
	}
	if he == nil {
		return nil
	}
	r := &OpRefusal{Code: he.Code, Message: he.Message, Stage: he.Stage, StderrTail: he.StderrTail, Refused: he.Refused}
	if err != nil {
		r.Hint = viewOfError(err).Hint
	}
	return r
}

// open reads the fleet (registry and catalog) for one operation.
func (s *Server) open(ctx context.Context) (*fleet.Fleet, error) {
	return fleet.Open(ctx, s.cfg.Store, s.cfg.Connect)
}

func (s *Server) opContext(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), OpTimeout)
}

// handleRecoveries reads a host's recovery register over its channel:
// `stado service recoveries --host H [--service S]`.
func (s *Server) handleRecoveries(w http.ResponseWriter, r *http.Request) {
	host, service := r.URL.Query().Get("host"), r.URL.Query().Get("service")
	res := OpResult{Op: "recoveries", Host: host, Service: service}
	ctx, cancel := s.opContext(r)
	defer cancel()
	f, err := s.open(ctx)
	if err == nil {
		var rr fleet.RecoveriesResult
		rr, err = f.Recoveries(ctx, host, service)
		res.Recoveries, res.File, res.JSON = rr.Recoveries, rr.File, indent(rr)
		if err != nil {
			res.Refusal = refusalOf(host, rr.Error, err)
		}
	} else {
		res.Refusal = refusalOf(host, nil, err)
	}
	res.OK = res.Refusal == nil
	s.render(w, "op", res)
}

// handleLogs reads the last lines of a declared service (or a catalog
// product's unit) on a host: `stado service logs S --host H --lines N`.
func (s *Server) handleLogs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	host, service := q.Get("host"), q.Get("service")
	lines := s.cfg.LogLines
	if v := q.Get("lines"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			s.render(w, "op", OpResult{Op: "logs", Host: host, Service: service,
				Refusal: &OpRefusal{Code: string(refusal.Usage), Message: "lines must be a number between 1 and " + strconv.Itoa(fleet.MaxLogLines), Refused: true}})
			return
		}
		lines = n
	}
	res := OpResult{Op: "logs", Host: host, Service: service}
	ctx, cancel := s.opContext(r)
	defer cancel()
	f, err := s.open(ctx)
	if err == nil {
		var lr fleet.LogsResult
		lr, err = f.Logs(ctx, service, host, lines)
		res.Logs, res.Unit, res.JSON = lr.Lines, lr.Unit, indent(lr)
		if err != nil {
			res.Refusal = refusalOf(host, lr.Error, err)
		}
	} else {
		res.Refusal = refusalOf(host, nil, err)
	}
	res.OK = res.Refusal == nil
	s.render(w, "op", res)
}

// handleRestart restarts a declared service on one host once the request
// confirms it (confirm names the service again): `stado service restart S
// --host H`. Without the confirmation it changes nothing and asks for it.
func (s *Server) handleRestart(w http.ResponseWriter, r *http.Request) {
	host, service := r.PostFormValue("host"), r.PostFormValue("service")
	res := OpResult{Op: "restart", Host: host, Service: service, CSRF: s.csrf}
	if r.PostFormValue("confirm") != service || service == "" {
		res.Confirm = true
		s.render(w, "op", res)
		return
	}
	ctx, cancel := s.opContext(r)
	defer cancel()
	f, err := s.open(ctx)
	if err == nil {
		var outs []fleet.RestartOutcome
		outs, err = f.Restart(ctx, fleet.RestartOptions{Name: service, Hosts: []string{host}}, nil)
		if len(outs) == 1 {
			res.Restart, res.JSON = &outs[0], indent(outs[0])
			if outs[0].Error != nil {
				res.Refusal = refusalOf(host, outs[0].Error, err)
			}
		}
		if err != nil && res.Refusal == nil {
			res.Refusal = refusalOf(host, nil, err)
		}
	} else {
		res.Refusal = refusalOf(host, nil, err)
	}
	res.OK = res.Refusal == nil
	s.render(w, "op", res)
}

// confirmed reports whether the form confirms the operation (confirm
// names the service again); when not, res asks for it.
func confirmed(r *http.Request, res *OpResult) bool {
	if r.PostFormValue("confirm") != res.Service || res.Service == "" {
		res.Confirm = true
		return false
	}
	return true
}

// handleEnsure ensures a service on every target that declares it, once
// confirmed: `stado service ensure S --all`.
func (s *Server) handleEnsure(w http.ResponseWriter, r *http.Request) {
	res := OpResult{Op: "ensure", Service: r.PostFormValue("service"), CSRF: s.csrf}
	if confirmed(r, &res) {
		ctx, cancel := s.opContext(r)
		defer cancel()
		outs, err := s.ensure(ctx, res.Service, nil, false, "desktop: ensure "+res.Service)
		for _, o := range outs {
			res.Hosts = append(res.Hosts, lineOf(o.Host, "ensure", o.Error, o.Lines()))
		}
		res.JSON = indent(outs)
		res.Refusal = refusalOf("", nil, err)
	}
	res.OK = res.Refusal == nil
	s.render(w, "op", res)
}

// handleConverge converges a service: unconfirmed, it shows converge's dry
// run (each host's action, what a cap skips); confirmed, it runs it.
func (s *Server) handleConverge(w http.ResponseWriter, r *http.Request) {
	res := OpResult{Op: "converge", Service: r.PostFormValue("service"), CSRF: s.csrf}
	dry := !confirmed(r, &res)
	ctx, cancel := s.opContext(r)
	defer cancel()
	cr, err := s.converge(ctx, res.Service, dry, "desktop: converge "+res.Service)
	for _, row := range cr.Rows {
		res.Hosts = append(res.Hosts, lineOf(row.Host, row.Action, row.Error, row.Lines(dry)))
		res.Hosts[len(res.Hosts)-1].Outcome = row.Outcome
	}
	if cr.Rows != nil {
		res.Headline, res.JSON = cr.Lines()[0], indent(cr)
	}
	if err != nil && (!dry || cr.Rows == nil) {
		res.Refusal = refusalOf("", nil, err)
		res.Confirm = false
	}
	res.OK = res.Refusal == nil
	s.render(w, "op", res)
}

// handleRetire retires a declared service on one host once confirmed:
// `stado service retire S --host H`.
func (s *Server) handleRetire(w http.ResponseWriter, r *http.Request) {
	res := OpResult{Op: "retire", Host: r.PostFormValue("host"), Service: r.PostFormValue("service"), CSRF: s.csrf}
	if confirmed(r, &res) {
		ctx, cancel := s.opContext(r)
		defer cancel()
		wr, err := s.retire(ctx, res.Service, res.Host, false, "desktop: retire "+res.Service+" on "+res.Host)
		if wr.Service.Name != "" {
			res.Hosts = append(res.Hosts, lineOf(res.Host, "retire", wr.Error, wr.Lines(true)))
			res.JSON = indent(wr)
		}
		res.Refusal = refusalOf(res.Host, nil, err)
	}
	res.OK = res.Refusal == nil
	s.render(w, "op", res)
}

// lineOf is one host's line: done, or its error's outcome and code.
func lineOf(host, action string, he *fleet.HostError, lines []string) HostLine {
	l := HostLine{Host: host, Action: action, Outcome: "done", OK: he == nil, Detail: strings.Join(lines, "\n")}
	if he != nil {
		l.Outcome, l.Code = he.Outcome(), he.Code
	}
	return l
}

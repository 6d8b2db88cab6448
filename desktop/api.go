package desktop

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/convergence"
	"github.com/wisent/stado/fleet"
	"github.com/wisent/stado/refusal"
)

// The local API: the page's JSON routes under /api/v1/ (docs/api.md). They
// pass the same guard as the page (loopback Host header, access token,
// and for POST the CSRF token and same origin) and answer JSON, refusals
// included.

// APIPrefix is where the API's routes live.
const APIPrefix = "/api/v1/"

// The kinds of the API's documents.
const (
	APISessionKind = "stado.api.session"
	APIRefusalKind = "stado.api.refusal"
)

// APIAnswer is an operation's answer: ok, the error it ended with (its
// code; a refusal before any host has no result), and the result as the
// CLI's --json carries it, with one entry per host.
type APIAnswer struct {
	Kind   string    `json:"kind"`
	OK     bool      `json:"ok"`
	Error  *APIError `json:"error,omitempty"`
	Result any       `json:"result,omitempty"`
}

// APIError is an answer's error: a refusal's code (refused: nothing was
// changed on that account) or "failure".
type APIError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
	Refused bool   `json:"refused"`
}

func (s *Server) apiRoutes(m *http.ServeMux) {
	m.HandleFunc("GET "+APIPrefix+"session", s.apiSession)
	m.HandleFunc("GET "+APIPrefix+"services", s.apiServices)
	m.HandleFunc("POST "+APIPrefix+"services/{name}/ensure", s.apiEnsure)
	m.HandleFunc("POST "+APIPrefix+"services/{name}/converge", s.apiConverge)
	m.HandleFunc("POST "+APIPrefix+"services/{name}/retire", s.apiRetire)
	m.HandleFunc(APIPrefix, func(w http.ResponseWriter, r *http.Request) {
		s.apiRefuse(w, http.StatusNotFound, string(refusal.NotFound), "no API route "+r.Method+" "+r.URL.Path, "docs/api.md lists the routes")
	})
}

// isAPI reports whether r is addressed to the API.
func isAPI(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, APIPrefix) }

// apiRefuse answers a refusal made before any work as JSON.
func (s *Server) apiRefuse(w http.ResponseWriter, status int, code, msg, hint string) {
	w.Header().Set("X-Stado-Refusal", code)
	writeJSON(w, status, APIAnswer{Kind: APIRefusalKind, Error: &APIError{Code: code, Message: msg, Hint: hint, Refused: true}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, "encode: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// apiSession answers the CSRF token a client sends with each POST (the
// page carries it in its markup; a script reads it here, with the token).
func (s *Server) apiSession(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		Kind       string `json:"kind"`
		CSRF       string `json:"csrf"`
		CSRFHeader string `json:"csrf_header"`
	}{APISessionKind, s.csrf, CSRFHeader})
}

// apiServices answers the table's rows as GET /rows?format=json does, with
// the same filters (q, mark, host, service) and page.
func (s *Server) apiServices(w http.ResponseWriter, r *http.Request) {
	p := s.pageOf(r)
	if p.Error != nil {
		w.Header().Set("X-Stado-Refusal", p.Error.Code)
		writeJSON(w, statusOf(refusal.Code(p.Error.Code), true), rowsDocOf(p))
		return
	}
	s.renderJSON(w, rowsDocOf(p))
}

// apiAnswer writes an operation's result with the status its error says.
func (s *Server) apiAnswer(w http.ResponseWriter, kind string, result any, err error) {
	a := APIAnswer{Kind: kind, OK: err == nil, Result: result}
	status := http.StatusOK
	if err != nil {
		code, refused := fleet.Classify(err)
		a.Error = &APIError{Code: code, Message: err.Error(), Refused: refused}
		if v := viewOfError(err); v != nil {
			a.Error.Hint = v.Hint
		}
		status = statusOf(refusal.Code(code), refused)
		if refused {
			w.Header().Set("X-Stado-Refusal", code)
		}
	}
	writeJSON(w, status, a)
}

// statusOf is the HTTP status of an operation's error: 400 for a wrong
// request, 404 for a thing that is not there, 409 for any other refusal,
// 502 for a failure (a host or the store failed).
func statusOf(code refusal.Code, refused bool) int {
	switch {
	case !refused:
		return http.StatusBadGateway
	case code == refusal.Usage || code == refusal.Validation:
		return http.StatusBadRequest
	case code == refusal.NotFound:
		return http.StatusNotFound
	}
	return http.StatusConflict
}

// flag reads a boolean query or form parameter: true, 1 or yes.
func flag(r *http.Request, name string) bool {
	switch strings.ToLower(r.FormValue(name)) {
	case "true", "1", "yes":
		return true
	}
	return false
}

// ensure runs `stado service ensure NAME --host H...` (every target that
// declares NAME when hosts is empty).
func (s *Server) ensure(ctx context.Context, name string, hosts []string, dryRun bool, reason string) ([]fleet.EnsureOutcome, error) {
	f, err := s.open(ctx)
	if err != nil {
		return nil, err
	}
	return f.Ensure(ctx, fleet.EnsureOptions{Name: name, Hosts: hosts, All: len(hosts) == 0, DryRun: dryRun, Reason: reason}, nil)
}

// converge runs `stado service converge NAME`, over the undeclared units
// the fresh beacons show and the registry's caps.
func (s *Server) converge(ctx context.Context, name string, dryRun bool, reason string) (fleet.ConvergeResult, error) {
	res := fleet.ConvergeResult{Service: name, DryRun: dryRun}
	f, err := s.open(ctx)
	if err != nil {
		return res, err
	}
	o := fleet.ConvergeOptions{Name: name, DryRun: dryRun, Reason: reason}
	if err := convergence.Evidence(ctx, f, beacon.Reading{Now: s.cfg.Now(), StaleAfter: s.cfg.StaleAfter, Store: "the desktop's store"}, &o); err != nil {
		return res, err
	}
	return f.Converge(ctx, o)
}

// retire runs `stado service retire NAME --host H`.
func (s *Server) retire(ctx context.Context, name, host string, dryRun bool, reason string) (fleet.WithdrawResult, error) {
	f, err := s.open(ctx)
	if err != nil {
		return fleet.WithdrawResult{Host: host}, err
	}
	res, err := f.Retire(ctx, fleet.WithdrawOptions{Name: name, Host: host, DryRun: dryRun, Reason: reason})
	res.Error = fleet.DescribeHostError(host, err)
	return res, err
}

// ensureDoc is ensure's result, as `stado service ensure --json` prints it.
type ensureDoc struct {
	Service string                `json:"service"`
	DryRun  bool                  `json:"dry_run"`
	Results []fleet.EnsureOutcome `json:"results"`
}

func (s *Server) apiEnsure(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	ctx, cancel := s.opContext(r)
	defer cancel()
	r.ParseForm()
	outs, err := s.ensure(ctx, name, r.Form["host"], flag(r, "dry_run"), r.FormValue("reason"))
	var result any
	if outs != nil {
		result = ensureDoc{Service: name, DryRun: flag(r, "dry_run"), Results: outs}
	}
	s.apiAnswer(w, "stado.service.ensure", result, err)
}

func (s *Server) apiConverge(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.opContext(r)
	defer cancel()
	res, err := s.converge(ctx, r.PathValue("name"), flag(r, "dry_run"), r.FormValue("reason"))
	var result any
	if res.Rows != nil {
		result = res
	}
	s.apiAnswer(w, "stado.service.converge", result, err)
}

func (s *Server) apiRetire(w http.ResponseWriter, r *http.Request) {
	host := r.FormValue("host")
	if host == "" {
		s.apiRefuse(w, http.StatusBadRequest, string(refusal.Usage), "retire needs the host: ?host=H", "")
		return
	}
	ctx, cancel := s.opContext(r)
	defer cancel()
	res, err := s.retire(ctx, r.PathValue("name"), host, flag(r, "dry_run"), r.FormValue("reason"))
	var result any
	if res.Service.Name != "" {
		result = res
	}
	s.apiAnswer(w, "stado.service.retire", result, err)
}

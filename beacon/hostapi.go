package beacon

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// The host process's HTTP API beside its passes: GET /healthz, GET
// /metrics when the runner has a MetricsHandler, and GET
// /api/release/object?uri=stado://releases/NAME, which serves a release
// object from the store, and GET /api/release/chunk?sha256=HEX, which
// serves a release chunk to a peer from this host's installed images or
// the store (releasechunk.go). It only reads.

// ProbeRelease is the release object stado's own answering question asks
// for (stado://releases/answering-probe). Nobody publishes it: the route
// reads the store for it like any other object, and when the read succeeds
// and finds nothing it answers 200 with a body saying the object is absent,
// so a healthy host's answer reads successful. A read that fails answers
// 503; a read that hangs holds the question, which then stands. Any other
// absent object is a 404.
const ProbeRelease = "answering-probe"

// ReleaseAbsence is the 200 body of the probe object's absence.
type ReleaseAbsence struct {
	Kind    string `json:"kind"` // stado.release.object
	URI     string `json:"uri"`
	Present bool   `json:"present"` // always false
	Message string `json:"message"`
}

// ListenAddress is where host's stado serves its API: the directory's port
// for its stado declaration on this host, else the catalog's port of the
// stado product, at the target's address. "" when the registry cannot be
// read or declares no stado service on host.
func ListenAddress(ctx context.Context, st store.Store, host string) string {
	doc, _, err := registry.Load(ctx, st)
	if err != nil {
		return ""
	}
	return listenAddressIn(ctx, st, doc, host)
}

// Peer is another host's API: its target name and base URL.
type Peer struct {
	Host string
	URL  string // http://ADDR:PORT
}

// PeerAPIs lists, in registry order, the host APIs of at most max targets
// other than self that declare a stado service (ListenAddress of each);
// none when the registry cannot be read.
func PeerAPIs(ctx context.Context, st store.Store, self string, max int) []Peer {
	doc, _, err := registry.Load(ctx, st)
	if err != nil {
		return nil
	}
	var out []Peer
	for _, t := range doc.Targets {
		if len(out) >= max {
			break
		}
		if t.Name == self {
			continue
		}
		if addr := listenAddressIn(ctx, st, doc, t.Name); addr != "" {
			out = append(out, Peer{Host: t.Name, URL: "http://" + addr})
		}
	}
	return out
}

func listenAddressIn(ctx context.Context, st store.Store, doc *registry.Document, host string) string {
	t, ok := doc.Target(host)
	if !ok {
		return ""
	}
	addr := t.SSH.Address
	if addr == "" {
		addr = t.Name
	}
	var self *registry.Service
	for i := range t.Services {
		if s := &t.Services[i]; s.Product == "stado" || s.Unit == "stado.service" || s.Unit == "com.wisent.stado" {
			self = s
		}
	}
	if self == nil {
		return ""
	}
	if d, ok := doc.DirectoryEntryOn(self.Name, host); ok {
		return net.JoinHostPort(doc.ListenAddress(d), strconv.Itoa(d.Port))
	}
	if cat, err := catalog.Load(ctx, st); err == nil {
		if p, ok := cat.Lookup("stado"); ok && p.Port > 0 {
			return net.JoinHostPort(addr, strconv.Itoa(p.Port))
		}
	}
	return ""
}

// ServeAPI serves the host API on listen (ListenAddress when "", nothing
// when that is "" too) until the returned stop is called. A listener that
// cannot be opened is not fatal: every later beacon carries it as a
// listen_failed refusal (the beacon is the host's voice), and stop does
// nothing.
func (r *Runner) ServeAPI(ctx context.Context, listen string) (stop func()) {
	if listen == "" {
		listen = ListenAddress(ctx, r.Store, r.Host)
	}
	if listen == "" {
		return func() {}
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		r.logger().Error("http listener", "addr", listen, "err", err)
		r.Persist(Refusal{Code: "listen_failed", Subject: listen, Message: err.Error()})
		return func() {}
	}
	srv := &http.Server{Handler: r.APIHandler(), ReadHeaderTimeout: 5 * time.Second}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			r.logger().Error("http server", "err", err)
		}
	}()
	r.logger().Info("serving", "addr", ln.Addr().String())
	return func() {
		shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
		wg.Wait()
	}
}

// APIHandler is the host API over r's store.
func (r *Runner) APIHandler() http.Handler {
	mux := http.NewServeMux()
	writeJSON := func(w http.ResponseWriter, code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"kind": "stado.healthz", "ok": true, "host": r.Host, "version": r.Version})
	})
	mux.HandleFunc("GET /api/release/object", func(w http.ResponseWriter, req *http.Request) {
		uri := req.URL.Query().Get("uri")
		refused := func(code int, machine, msg string) {
			writeJSON(w, code, map[string]any{"kind": "stado.release.object", "error": machine, "uri": uri, "message": msg})
		}
		name, ok := strings.CutPrefix(uri, "stado://releases/")
		if !ok || name == "" || store.ValidateKey(store.ReleasePrefix+name) != nil {
			refused(http.StatusBadRequest, "bad_uri", "want uri=stado://releases/NAME")
			return
		}
		obj, err := r.Store.Get(req.Context(), store.ReleasePrefix+name)
		switch {
		case errors.Is(err, store.ErrNotFound) && name == ProbeRelease:
			// the store read and answered: the question is answered
			writeJSON(w, http.StatusOK, ReleaseAbsence{Kind: "stado.release.object", URI: uri, Present: false,
				Message: "the store was read and holds no such object: the probe object is never published"})
		case errors.Is(err, store.ErrNotFound):
			refused(http.StatusNotFound, string(refusal.NotFound), "no such release object")
		case err != nil:
			refused(http.StatusServiceUnavailable, "store_unreadable", err.Error())
		default:
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("X-Stado-Revision", strconv.FormatInt(obj.Revision, 10))
			_, _ = w.Write(obj.Value)
		}
	})
	mux.HandleFunc("GET /api/release/chunk", func(w http.ResponseWriter, req *http.Request) {
		r.serveChunk(w, req, writeJSON)
	})
	if r.MetricsHandler != nil {
		mux.Handle("GET /metrics", r.MetricsHandler)
	}
	return mux
}

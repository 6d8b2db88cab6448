package desktop

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/wisent/stado/fleet"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/store"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// The page's answers to a request it refuses before any work: the access
// token is missing or wrong, or a state-changing request lacks the CSRF
// token (or comes from another origin).
const (
	CodeTokenRequired = string(refusal.TokenRequired)
	CodeCSRFRefused   = string(refusal.CSRFRefused)
	CodeHostRefused   = string(refusal.HostHeaderRefused)
)

// CookieName is the cookie that carries the access token after the first
// visit of the printed URL, for the page listening on port. The port is in
// the name: a browser sends a loopback cookie to every port of the host, so
// two pages (or a page and another loopback service) must not share one.
func CookieName(port string) string { return "stado_desktop_" + port }

// cookieFor names the cookie of the page a request reached, by the port it
// arrived on.
func cookieFor(r *http.Request) string {
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if _, port, err := net.SplitHostPort(a.String()); err == nil {
			return CookieName(port)
		}
	}
	return CookieName("0")
}

// CSRFHeader is the header a state-changing request carries the page's CSRF
// token in (a form field named csrf works too).
const CSRFHeader = "X-Stado-CSRF"

// Config is what the page reads and how it reaches hosts.
type Config struct {
	// Store is read for the table and the inspector; required.
	Store store.Store
	// Connect reaches a target's host for the operations; nil refuses
	// every operation (restart_unavailable).
	Connect fleet.Connector
	// Now is the reader's clock (default time.Now).
	Now func() time.Time
	// StaleAfter, when positive, overrides every beacon's own bound.
	StaleAfter time.Duration
	// Refresh is the page's fixed refresh interval (default 5 s); the page
	// also refreshes as soon as the store changes.
	Refresh time.Duration
	// WatchEvery is how often the store is checked for a change (default
	// 250 ms); a store with a Watch method is watched instead.
	WatchEvery time.Duration
	// PageSize is the rows shown per page (default 100).
	PageSize int
	// Token is the access token; empty means a random one.
	Token string
	// LogLines is the default log window of the logs operation (default 50).
	LogLines int
	// MaxConns bounds the connections the page keeps open (default 64). At
	// the bound a new connection first evicts an idle one that never showed
	// the token, then any idle one, so whoever holds the token is served.
	MaxConns int
	// HeaderTimeout bounds reading a request's header (default 5 s) and
	// IdleTimeout a kept connection's silence (default 60 s).
	HeaderTimeout, IdleTimeout time.Duration
}

// The page's other bounds: reading a whole request, and writing an answer
// (a changes poll waits 25 s; a logs or restart operation rides SSH).
const (
	readTimeout  = 30 * time.Second
	writeTimeout = 2 * time.Minute
	// onceTTL is how long the one-time address --open hands the browser
	// stays good.
	onceTTL = 2 * time.Minute
)

// Server is one desktop page. It is safe for concurrent use.
type Server struct {
	cfg   Config
	token string
	csrf  string
	tmpl  *template.Template
	mux   *http.ServeMux
	feed  *changeFeed

	mu   sync.Mutex
	snap *snapshot

	onceMu  sync.Mutex
	once    string    // the one-time code of OpenURL; "" once used
	onceEnd time.Time // when it stops being good
}

// New returns the page over cfg. The error is a refusal for a config
// without a store.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, refusal.New(refusal.Usage, "desktop: no store")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = 5 * time.Second
	}
	if cfg.WatchEvery <= 0 {
		cfg.WatchEvery = 250 * time.Millisecond
	}
	if cfg.PageSize <= 0 {
		cfg.PageSize = 100
	}
	if cfg.LogLines <= 0 {
		cfg.LogLines = 50
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 64
	}
	if cfg.HeaderTimeout <= 0 {
		cfg.HeaderTimeout = 5 * time.Second
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 60 * time.Second
	}
	s := &Server{cfg: cfg, token: cfg.Token, csrf: randomToken()}
	if s.token == "" {
		s.token = randomToken()
	}
	t, err := template.New("desktop").Funcs(funcs).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("desktop templates: %w", err)
	}
	s.tmpl = t
	s.feed = newChangeFeed(cfg.Store, cfg.WatchEvery)
	s.routes()
	return s, nil
}

// randomToken is 32 random bytes in hex.
func randomToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("desktop: no randomness: " + err.Error())
	}
	return hex.EncodeToString(b)
}

// Token is the access token (printed once, in the URL).
func (s *Server) Token() string { return s.token }

// URL is the page's address on ln with the access token.
func (s *Server) URL(ln net.Listener) string {
	return "http://" + ln.Addr().String() + "/?token=" + url.QueryEscape(s.token)
}

// OpenURL is an address for a browser's command line, which every user of
// the machine can read: it carries a one-time code instead of the token.
// The first request with the code gets the cookie; the code is then dead,
// and so is any code older than two minutes. A new call replaces the code.
func (s *Server) OpenURL(ln net.Listener) string {
	code := randomToken()
	s.onceMu.Lock()
	s.once, s.onceEnd = code, s.cfg.Now().Add(onceTTL)
	s.onceMu.Unlock()
	return "http://" + ln.Addr().String() + "/?once=" + url.QueryEscape(code)
}

// takeOnce reports whether code is the live one-time code, and kills it.
func (s *Server) takeOnce(code string) bool {
	s.onceMu.Lock()
	defer s.onceMu.Unlock()
	if !equal(code, s.once) || s.cfg.Now().After(s.onceEnd) {
		return false
	}
	s.once = ""
	return true
}

// Handler is the page: every request passes the access check, and every
// state-changing one the CSRF check, before its route.
func (s *Server) Handler() http.Handler { return s.guard(s.mux) }

// Serve serves the page on ln, watches the store and keeps its rows
// judged (every second) until ctx ends; then it closes the server and
// returns nil.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	lim := newConnLimit(ln, s.cfg.MaxConns)
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: s.cfg.HeaderTimeout, ReadTimeout: readTimeout,
		WriteTimeout: writeTimeout, IdleTimeout: s.cfg.IdleTimeout, ConnState: lim.track, ConnContext: lim.context}
	ln = lim
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go s.feed.run(wctx)
	go s.keepWarm(wctx)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		sctx, c := context.WithTimeout(context.Background(), 2*time.Second)
		defer c()
		srv.Shutdown(sctx)
		return nil
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}

// Listen listens on addr (host:port), which must name a loopback address
// (127.0.0.0/8, ::1 or localhost); anything else is a usage refusal and
// nothing listens.
func Listen(addr string) (net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, refusal.New(refusal.Usage, "--listen %q: want HOST:PORT on loopback, e.g. 127.0.0.1:7480", addr)
	}
	if host == "localhost" {
		host = "127.0.0.1"
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return nil, &refusal.Error{Code: refusal.Usage, Message: fmt.Sprintf("--listen %q: the desktop listens on loopback only", addr),
			Hint: "use 127.0.0.1:PORT; reach it from elsewhere through an SSH tunnel"}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), port))
	if err != nil {
		return nil, refusal.New(refusal.ListenFailed, "listen on %s: %v", addr, err)
	}
	return ln, nil
}

// guard refuses a request without the access token (403; the query's
// token, the page's cookie or an API client's Authorization: Bearer), with a Host
// header that is not a loopback address (403: a page of another site that
// resolves its name to loopback), and a state-changing request without the
// CSRF token or from another origin (403).
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			s.refuse(w, r, http.StatusForbidden, CodeHostRefused, "the desktop answers requests addressed to loopback only")
			return
		}
		tok := r.URL.Query().Get("token")
		fromQuery := tok != ""
		if code := r.URL.Query().Get("once"); code != "" && !fromQuery {
			if !s.takeOnce(code) {
				w.Header().Set("Connection", "close")
				s.refuse(w, r, http.StatusForbidden, CodeTokenRequired, "this one-time address was used already or is too old; use the address stado desktop printed")
				return
			}
			tok, fromQuery = s.token, true
		}
		if !fromQuery {
			if c, err := r.Cookie(cookieFor(r)); err == nil {
				tok = c.Value
			}
			if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
				tok = b // an API client's token (docs/api.md)
			}
		}
		if !equal(tok, s.token) {
			// an unauthenticated client keeps no connection open
			w.Header().Set("Connection", "close")
			s.refuse(w, r, http.StatusForbidden, CodeTokenRequired, "this page needs the access token printed by stado desktop")
			return
		}
		markAuthenticated(r)
		if fromQuery {
			http.SetCookie(w, &http.Cookie{Name: cookieFor(r), Value: s.token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			if r.Method == http.MethodGet && r.URL.Path == "/" {
				// keep the token out of the address bar and the history
				q := r.URL.Query()
				q.Del("token")
				q.Del("once")
				target := "/"
				if len(q) > 0 {
					target += "?" + q.Encode()
				}
				http.Redirect(w, r, target, http.StatusSeeOther)
				return
			}
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if !equal(csrfOf(r), s.csrf) || !sameOrigin(r) {
				s.refuse(w, r, http.StatusForbidden, CodeCSRFRefused, "a state-changing request needs this page's CSRF token")
				return
			}
		}
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

func equal(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

func csrfOf(r *http.Request) string {
	if v := r.Header.Get(CSRFHeader); v != "" {
		return v
	}
	if err := r.ParseForm(); err == nil {
		return r.PostForm.Get("csrf")
	}
	return ""
}

// sameOrigin accepts a request whose Origin (when sent) is this page.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

func loopbackHost(hostport string) bool {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	h = strings.Trim(h, "[]")
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func (s *Server) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	m.HandleFunc("GET /{$}", s.handlePage)
	m.HandleFunc("GET /rows", s.handleRows)
	m.HandleFunc("GET /summary", s.handleSummary)
	m.HandleFunc("GET /changes", s.handleChanges)
	m.HandleFunc("GET /inspect", s.handleInspect)
	m.HandleFunc("GET /op/recoveries", s.handleRecoveries)
	m.HandleFunc("GET /op/logs", s.handleLogs)
	m.HandleFunc("POST /op/restart", s.handleRestart)
	m.HandleFunc("POST /op/ensure", s.handleEnsure)
	m.HandleFunc("POST /op/converge", s.handleConverge)
	m.HandleFunc("POST /op/retire", s.handleRetire)
	s.apiRoutes(m)
	s.mux = m
}

// refuse answers a refused request: an HTML fragment the page shows, with
// the code in a header and a data attribute.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	if isAPI(r) {
		s.apiRefuse(w, status, code, msg, "")
		return
	}
	w.Header().Set("X-Stado-Refusal", code)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	s.tmpl.ExecuteTemplate(w, "refusal", refusalView{Code: code, Message: msg})
}

// renderJSON writes v as one JSON document.
func (s *Server) renderJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encode: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(b, '\n'))
}

// render executes the named template into w; a template error is a 500.
func (s *Server) render(w http.ResponseWriter, name string, data any) {
	var b strings.Builder
	if err := s.tmpl.ExecuteTemplate(&b, name, data); err != nil {
		http.Error(w, "render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprint(w, b.String())
}

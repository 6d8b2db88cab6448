package etcdstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The client side of etcd's v3 JSON gateway: every member serves the v3
// RPCs as POST /v3/<service>/<method> on its client URL, with JSON bodies
// whose bytes fields are base64 and whose 64-bit integers are strings. An
// answer that is not 200 carries {"error","code","message"} with the gRPC
// code; a streaming RPC (watch, lease keep-alive) answers a sequence of
// {"result":…} or {"error":{…}} objects.

// gRPC status codes etcd answers with.
const (
	codeInvalidArgument   = 3
	codeNotFound          = 5
	codePermissionDenied  = 7
	codeResourceExhausted = 8
	codeOutOfRange        = 11
	codeUnavailable       = 14
	codeUnauthenticated   = 16
)

// Body bounds: maxBody for a read no caller bounds (a page of List, the
// registry), smallBody for answers that carry no value.
const (
	maxBody   = 1 << 30
	smallBody = 1 << 20
)

// rpcError is an error a member answered with.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return e.Message }

// Is matches an rpcError by its message: etcd's errors are told apart by
// their text (rpctypes in etcd's own client does the same).
func (e *rpcError) Is(target error) bool {
	t, ok := target.(*rpcError)
	return ok && t.Message == e.Message
}

// The errors stado tells apart.
var (
	errCompacted        = &rpcError{codeOutOfRange, "etcdserver: mvcc: required revision has been compacted"}
	errLeaseNotFound    = &rpcError{codeNotFound, "etcdserver: requested lease not found"}
	errRequestTooLarge  = &rpcError{codeInvalidArgument, "etcdserver: request is too large"}
	errAuthFailed       = &rpcError{codeInvalidArgument, "etcdserver: authentication failed, invalid user ID or password"}
	errPermissionDenied = &rpcError{codePermissionDenied, "etcdserver: permission denied"}
	errUserEmpty        = &rpcError{codeInvalidArgument, "etcdserver: user name is empty"}
	errAuthOldRevision  = &rpcError{codeInvalidArgument, "etcdserver: revision of auth store is old"}
)

// memberError: a member did not answer (refused, reset, silent, gone
// midway). The next member is tried, and the call is retried.
type memberError struct {
	endpoint string
	err      error
}

func (e *memberError) Error() string { return "member " + e.endpoint + ": " + e.err.Error() }
func (e *memberError) Unwrap() error { return e.err }

// bodyTooLargeError: an answer longer than its reader's bound, refused
// without reading it further.
type bodyTooLargeError struct{ bound int64 }

func (e *bodyTooLargeError) Error() string {
	return fmt.Sprintf("answer longer than its bound of %d bytes", e.bound)
}

// client speaks to the members of one cluster through one http.Client.
type client struct {
	hc          *http.Client
	urls        []string // scheme://HOST:PORT, one per endpoint
	endpoints   []string // HOST:PORT, for messages
	dialTimeout time.Duration
	user        string
	password    string

	cur atomic.Int32 // the endpoint that answered last

	authMu          sync.Mutex // one authentication at a time
	tokenMu         sync.Mutex
	token           string
	authentications atomic.Int64 // how many times the client authenticated
}

func newClient(cfg Config, tr *http.Transport, scheme string) *client {
	c := &client{
		hc:          &http.Client{Transport: tr},
		endpoints:   cfg.Endpoints,
		dialTimeout: cfg.DialTimeout,
		user:        cfg.Username,
		password:    cfg.Password,
	}
	for _, ep := range cfg.Endpoints {
		c.urls = append(c.urls, scheme+ep)
	}
	return c
}

func (c *client) currentToken() string {
	c.tokenMu.Lock()
	defer c.tokenMu.Unlock()
	return c.token
}

// call posts req to path on a member and decodes its answer into resp,
// reading at most limit bytes of it (limit <= 0: maxBody). A member that
// does not answer, or answers that it has no leader, passes the call to the
// next; a token etcd rejects is renewed once.
func (c *client) call(ctx context.Context, path string, req, resp any, limit int64) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if limit <= 0 {
		limit = maxBody
	}
	return c.withToken(ctx, func(token string) error {
		return c.each(ctx, func(ep int, last bool) error {
			r, err := c.open(ctx, ep, last, path, body, token)
			if err != nil {
				return err
			}
			defer r.Body.Close()
			buf, err := readBounded(r, limit)
			if err != nil {
				return c.bodyError(ep, err)
			}
			if rr, ok := resp.(*rangeResponse); ok {
				return decodeRange(buf, rr)
			}
			return json.Unmarshal(buf, resp)
		})
	})
}

// withToken runs op with the current token (authenticating first when the
// client has a user and no token yet) and once more with a new token when
// etcd rejects the one op sent.
func (c *client) withToken(ctx context.Context, op func(token string) error) error {
	token := c.currentToken()
	if c.user != "" && token == "" {
		var err error
		if token, err = c.authenticate(ctx, ""); err != nil {
			return err
		}
	}
	err := op(token)
	if c.user == "" || !tokenRejected(err) {
		return err
	}
	if token, err = c.authenticate(ctx, token); err != nil {
		return err
	}
	return op(token)
}

// tokenRejected: etcd refused the token as invalid or expired (a member
// restarted, the token's TTL ran out, the auth store moved on).
func tokenRejected(err error) bool {
	var re *rpcError
	return errors.As(err, &re) && (re.Code == codeUnauthenticated || errors.Is(err, errAuthOldRevision))
}

// authenticate trades user and password for a token, unless another
// goroutine already replaced the token stale was: then that one is used.
func (c *client) authenticate(ctx context.Context, stale string) (string, error) {
	c.authMu.Lock()
	defer c.authMu.Unlock()
	if t := c.currentToken(); t != "" && t != stale {
		return t, nil
	}
	body, err := json.Marshal(authenticateRequest{Name: c.user, Password: c.password})
	if err != nil {
		return "", err
	}
	var resp authenticateResponse
	err = c.each(ctx, func(ep int, last bool) error {
		r, err := c.open(ctx, ep, last, "/v3/auth/authenticate", body, "")
		if err != nil {
			return err
		}
		defer r.Body.Close()
		buf, err := readBounded(r, smallBody)
		if err != nil {
			return c.bodyError(ep, err)
		}
		return json.Unmarshal(buf, &resp)
	})
	if err != nil {
		return "", fmt.Errorf("authenticate as %q: %w", c.user, err)
	}
	c.authentications.Add(1)
	c.tokenMu.Lock()
	c.token = resp.Token
	c.tokenMu.Unlock()
	return resp.Token, nil
}

// each runs try on the endpoint that answered last, then on the others in
// order while the one tried did not answer (a memberError) or answered
// that it has no leader. The endpoint that answered is remembered.
func (c *client) each(ctx context.Context, try func(ep int, last bool) error) error {
	n := len(c.urls)
	start := int(c.cur.Load())
	var err error
	for i := 0; i < n; i++ {
		ep := (start + i) % n
		err = try(ep, i == n-1)
		var me *memberError
		answered := !errors.As(err, &me)
		if answered && !unavailable(err) {
			c.cur.Store(int32(ep))
			return err
		}
		if ctx.Err() != nil {
			return err
		}
	}
	return err
}

// open posts body to path on endpoint ep and returns the answer when it
// is 200 (its body is the caller's to read and close), or the error the
// member answered with. While other members remain to be tried (!last), a
// member is given the dial timeout to start its answer.
func (c *client) open(ctx context.Context, ep int, last bool, path string, body []byte, token string) (*http.Response, error) {
	rctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, c.urls[ep]+path, bytes.NewReader(body))
	if err != nil {
		cancel()
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	// etcd's "require leader": a member cut off from its leader refuses
	// at once (Unavailable) instead of waiting, and ends a watch.
	req.Header.Set("Grpc-Metadata-hasleader", "true")
	if token != "" {
		req.Header.Set("Authorization", token)
	}
	var silent atomic.Bool
	var timer *time.Timer
	if !last {
		timer = time.AfterFunc(c.dialTimeout, func() { silent.Store(true); cancel() })
	}
	r, err := c.hc.Do(req)
	if timer != nil {
		timer.Stop()
	}
	if err != nil {
		cancel()
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if silent.Load() && ctx.Err() == nil {
			err = fmt.Errorf("no answer within %v (dial_timeout)", c.dialTimeout)
		}
		return nil, &memberError{c.endpoints[ep], err}
	}
	if silent.Load() {
		r.Body.Close()
		cancel()
		return nil, &memberError{c.endpoints[ep], fmt.Errorf("no answer within %v (dial_timeout)", c.dialTimeout)}
	}
	r.Body = &cancelBody{r.Body, cancel}
	if r.StatusCode == http.StatusOK {
		return r, nil
	}
	defer r.Body.Close()
	buf, err := readBounded(r, smallBody)
	if err != nil {
		return nil, c.bodyError(ep, err)
	}
	var re rpcError
	if json.Unmarshal(buf, &re) == nil && re.Message != "" {
		return nil, &re
	}
	if r.StatusCode == http.StatusBadGateway || r.StatusCode == http.StatusServiceUnavailable || r.StatusCode == http.StatusGatewayTimeout {
		return nil, &memberError{c.endpoints[ep], fmt.Errorf("answered %s", r.Status)}
	}
	return nil, fmt.Errorf("member %s answered %s to %s: %.200q", c.endpoints[ep], r.Status, path, buf)
}

// bodyError words a failure to read an answer: too long is final, a body
// cut off is the member's failure.
func (c *client) bodyError(ep int, err error) error {
	var tl *bodyTooLargeError
	if errors.As(err, &tl) {
		return err
	}
	return &memberError{c.endpoints[ep], err}
}

// cancelBody ends the request's context when its body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// readBounded reads r's body whole when it is at most limit bytes, and
// refuses it after limit+1 bytes otherwise (at once when its length is
// announced).
func readBounded(r *http.Response, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, &bodyTooLargeError{limit}
	}
	body := io.LimitReader(r.Body, limit+1)
	var b []byte
	var err error
	if r.ContentLength > 0 {
		var buf bytes.Buffer
		buf.Grow(int(r.ContentLength) + bytes.MinRead)
		_, err = buf.ReadFrom(body)
		b = buf.Bytes()
	} else {
		// a body of unannounced length (the gateway sends its answers in
		// chunks) is read in pieces and joined once, at its size: a
		// doubling buffer would clear and copy several times a
		// fleet-size registry's megabytes
		b, err = io.ReadAll(body)
	}
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &bodyTooLargeError{limit}
	}
	return b, nil
}

// unavailable reports whether err is etcd's Unavailable family: no leader,
// leader changed, a proposal that timed out, too many requests.
func unavailable(err error) bool {
	var re *rpcError
	return errors.As(err, &re) && re.Code == codeUnavailable
}

// transient reports whether err is one a cluster recovers from by itself:
// etcd's Unavailable family and a member that did not answer.
func transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var me *memberError
	return unavailable(err) || errors.As(err, &me)
}

// stream opens the streaming RPC path with one request message and returns
// the answer's body: a sequence of {"result":…} objects.
func (c *client) stream(ctx context.Context, path string, req any) (io.ReadCloser, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var rc io.ReadCloser
	err = c.withToken(ctx, func(token string) error {
		return c.each(ctx, func(ep int, last bool) error {
			r, err := c.open(ctx, ep, last, path, body, token)
			if err != nil {
				return err
			}
			rc = r.Body
			return nil
		})
	})
	return rc, err
}

// streamError is the gateway's error object inside a stream.
type streamError struct {
	GRPCCode int    `json:"grpc_code"`
	Message  string `json:"message"`
}

// messageReader hands a json.Decoder the bytes of a stream and fails once
// more than max bytes arrived that the decoder has not consumed: one
// message longer than max.
type messageReader struct {
	r   io.Reader
	dec *json.Decoder
	n   int64
	max int64
}

func (m *messageReader) Read(p []byte) (int, error) {
	if m.dec != nil && m.n-m.dec.InputOffset() > m.max {
		return 0, &bodyTooLargeError{m.max}
	}
	n, err := m.r.Read(p)
	m.n += int64(n)
	return n, err
}

// newStreamDecoder decodes the messages of a stream, each at most max
// bytes.
func newStreamDecoder(r io.Reader, max int64) *json.Decoder {
	m := &messageReader{r: r, max: max}
	m.dec = json.NewDecoder(m)
	return m.dec
}

// Messages of the gateway. Keys and values are []byte, which encoding/json
// reads and writes as base64; 64-bit integers are strings.

type responseHeader struct {
	Revision int64  `json:"revision,string"`
	MemberID uint64 `json:"member_id,string"`
}

type keyValue struct {
	Key            []byte `json:"key"`
	CreateRevision int64  `json:"create_revision,string"`
	ModRevision    int64  `json:"mod_revision,string"`
	Version        int64  `json:"version,string"`
	Value          []byte `json:"value"`
	Lease          int64  `json:"lease,string"`

	skip bool // Visit: handed to tooLarge, not to the workers
}

type rangeRequest struct {
	Key          []byte `json:"key"`
	RangeEnd     []byte `json:"range_end,omitempty"`
	Limit        int64  `json:"limit,omitempty,string"`
	Revision     int64  `json:"revision,omitempty,string"`
	Serializable bool   `json:"serializable,omitempty"`
	KeysOnly     bool   `json:"keys_only,omitempty"`
	CountOnly    bool   `json:"count_only,omitempty"`
}

type rangeResponse struct {
	Header responseHeader `json:"header"`
	Kvs    []keyValue     `json:"kvs"`
	More   bool           `json:"more"`
	Count  int64          `json:"count,string"`
}

type putRequest struct {
	Key   []byte `json:"key"`
	Value []byte `json:"value"`
	Lease int64  `json:"lease,omitempty,string"`
}

type putResponse struct {
	Header responseHeader `json:"header"`
}

type deleteRangeRequest struct {
	Key []byte `json:"key"`
}

type deleteRangeResponse struct {
	Header  responseHeader `json:"header"`
	Deleted int64          `json:"deleted,string"`
}

// compare is one condition of a transaction. The revision it compares is a
// string set even when "0" (an unset target would compare equal to
// anything).
type compare struct {
	Result         string `json:"result"` // EQUAL
	Target         string `json:"target"` // MOD or CREATE
	Key            []byte `json:"key"`
	ModRevision    string `json:"mod_revision,omitempty"`
	CreateRevision string `json:"create_revision,omitempty"`
}

type requestOp struct {
	RequestPut   *putRequest   `json:"request_put,omitempty"`
	RequestRange *rangeRequest `json:"request_range,omitempty"`
}

type txnRequest struct {
	Compare []compare   `json:"compare"`
	Success []requestOp `json:"success"`
	Failure []requestOp `json:"failure"`
}

type txnResponse struct {
	Header    responseHeader `json:"header"`
	Succeeded bool           `json:"succeeded"`
	Responses []struct {
		ResponseRange *rangeResponse `json:"response_range"`
	} `json:"responses"`
}

type compactionRequest struct {
	Revision int64 `json:"revision,string"`
}

type leaseGrantRequest struct {
	TTL int64 `json:"TTL,string"`
}

type leaseGrantResponse struct {
	ID    int64  `json:"ID,string"`
	TTL   int64  `json:"TTL,string"`
	Error string `json:"error"`
}

type leaseKeepAliveRequest struct {
	ID int64 `json:"ID,string"`
}

type leaseKeepAliveResponse struct {
	ID  int64 `json:"ID,string"`
	TTL int64 `json:"TTL,string"`
}

type authenticateRequest struct {
	Name     string `json:"name"`
	Password string `json:"password"`
}

type authenticateResponse struct {
	Token string `json:"token"`
}

type watchCreateRequest struct {
	Key      []byte `json:"key"`
	RangeEnd []byte `json:"range_end,omitempty"`
}

type watchRequest struct {
	CreateRequest watchCreateRequest `json:"create_request"`
}

// watchResponse is read without the events' keys and values: a watcher
// only needs to know that there were some.
type watchResponse struct {
	Created         bool       `json:"created"`
	Canceled        bool       `json:"canceled"`
	CompactRevision int64      `json:"compact_revision,string"`
	CancelReason    string     `json:"cancel_reason"`
	Events          []struct{} `json:"events"`
}

// prefixEnd is the end of the key range of every key starting with
// prefix (etcd's range_end for a prefix).
func prefixEnd(prefix []byte) []byte {
	end := bytes.Clone(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return []byte{0} // every key from prefix on
}

// dialer bounds connecting by the dial timeout.
func dialer(d time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return (&net.Dialer{Timeout: d, KeepAlive: 30 * time.Second}).DialContext
}

// scrub makes sure an error never repeats the password.
func scrub(err error, password string) error {
	if err == nil || password == "" || !strings.Contains(err.Error(), password) {
		return err
	}
	return &scrubbed{msg: strings.ReplaceAll(err.Error(), password, "***"), err: err}
}

// scrubbed answers errors.Is as the error it hides, and never hands that
// error out (errors.As and Unwrap do not reach it): only the scrubbed text
// is printed.
type scrubbed struct {
	msg string
	err error
}

func (s *scrubbed) Error() string        { return s.msg }
func (s *scrubbed) Is(target error) bool { return errors.Is(s.err, target) }

package keeper

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/channel/sshclient"
)

// The keeper protocol, between a Client and Serve over the
// keeper's unix socket. One connection carries one call. Every frame is a
// 4-byte big-endian length and that many bytes of one JSON keeperFrame,
// at most maxKeeperFrame.
//
//	client → keeper: request (with version), stdin*, stdin_end
//	keeper → client: unavailable
//	               | failed
//	               | started, (stdout | stderr)*, exit
//
//	client → keeper: adopt (with version, the hosts and the remote program)
//	keeper → client: unavailable | adopted
//
// "adopt" hands the keeper hosts a command dialed itself (the keeper was
// not running yet): it answers "adopted" once it has taken them; the client
// keeps the connection open until its process exits (at most adoptHold),
// and once it closes the keeper connects to each host it does not hold, and
// opens its channel session, for the commands that follow. A keeper older than "adopt" answers "unavailable".
// "unavailable" means nothing was attempted (the client falls back to a
// direct connection); "failed" is a dial, authentication or host key
// failure before a session opened (a channel.RemoteError); "started" is sent once a
// session is open, before the command runs, so a client that never saw it
// knows the command did not run. Closing the connection cancels the call:
// the keeper kills the remote command. A keeper speaking another version
// answers "unavailable" and, when the client's version is newer, retires.
const (
	keeperProtocol = 1
	maxKeeperFrame = 1 << 20   // bytes of one frame's JSON
	keeperChunk    = 256 << 10 // data bytes per stdin/stdout/stderr frame
	maxKeeperStdin = sshclient.MaxOutputBytes
)

// Frame kinds.
const (
	frameRequest     = "request"
	frameStdin       = "stdin"
	frameStdinEnd    = "stdin_end"
	frameUnavailable = "unavailable"
	frameFailed      = "failed"
	frameStarted     = "started"
	frameStdout      = "stdout"
	frameStderr      = "stderr"
	frameExit        = "exit"
	frameAdopt       = "adopt"
	frameAdopted     = "adopted"
)

// maxAdoptBatch bounds the hosts of one adopt frame (well under
// maxKeeperFrame); a client sends more in several calls.
const maxAdoptBatch = 500

// keeperFrame is one frame of either direction; Kind says which fields are set.
type keeperFrame struct {
	Kind    string           `json:"kind"`
	Version int              `json:"version,omitempty"` // request, unavailable
	Request *keeperRequest   `json:"request,omitempty"` // request
	Data    []byte           `json:"data,omitempty"`    // stdin, stdout, stderr
	Address string           `json:"address,omitempty"` // started: the connection's remote address
	Reason  string           `json:"reason,omitempty"`  // unavailable
	Retry   bool             `json:"retry,omitempty"`   // unavailable: the keeper is stopping; a new one may take the call
	Failure *keeperFailure   `json:"failure,omitempty"` // failed
	Exit    *keeperExit      `json:"exit,omitempty"`    // exit
	Adopt   []*keeperRequest `json:"adopt,omitempty"`   // adopt: one request per host, without argv
	Program string           `json:"program,omitempty"` // adopt: the remote program whose session to open
}

// keeperRequest is one call: the endpoint as the client resolved it, how to
// check and authenticate it (paths and the agent socket, never key
// material), and the command. Every path is absolute.
type keeperRequest struct {
	Endpoint keeperEndpoint `json:"endpoint"`
	// KnownHosts is the known_hosts file; AcceptNew records an unknown key.
	KnownHosts string `json:"known_hosts"`
	AcceptNew  bool   `json:"accept_new,omitempty"`
	// AgentSocket is the ssh-agent the client would use, empty for none;
	// NoAgent says the client's Dialer disabled the agent.
	AgentSocket string `json:"agent_socket,omitempty"`
	NoAgent     bool   `json:"no_agent,omitempty"`
	// Timing of a new connection, as the client's Dialer sets it.
	ConnectTimeout  int64 `json:"connect_timeout_ns,omitempty"`
	KeepAlive       int64 `json:"keepalive_ns,omitempty"`
	KeepAliveMissed int   `json:"keepalive_missed,omitempty"`
	// Argv is sent as sshclient.Pool.Run sends it (Quote); Stdin says whether stdin
	// frames follow as the command's input (nil stdin sends none).
	Argv  []string `json:"argv"`
	Stdin bool     `json:"stdin,omitempty"`
}

// keeperEndpoint is a sshclient.Endpoint on the wire.
type keeperEndpoint struct {
	Host          string   `json:"host"`
	Address       string   `json:"address"`
	Port          int      `json:"port"`
	User          string   `json:"user"`
	IdentityFiles []string `json:"identity_files,omitempty"`
	// Explicit is how many of the last IdentityFiles came from the Dialer
	// and must exist.
	Explicit int `json:"explicit,omitempty"`
}

func (e keeperEndpoint) endpoint() sshclient.Endpoint {
	return sshclient.Endpoint{Host: e.Host, Address: e.Address, Port: e.Port, User: e.User, IdentityFiles: e.IdentityFiles, Explicit: e.Explicit}
}

// dialer is the Dialer the keeper dials the request's endpoint with: the
// client's agent socket, never the keeper's own $SSH_AUTH_SOCK. A client
// without an agent gets none (as "not set" when the keeper has none
// either, so an authentication failure reads as it would have directly).
func (r *keeperRequest) dialer() *sshclient.Dialer {
	noAgent := r.NoAgent || (r.AgentSocket == "" && os.Getenv("SSH_AUTH_SOCK") != "")
	return &sshclient.Dialer{
		KnownHostsPath:   r.KnownHosts,
		AcceptNewHostKey: r.AcceptNew,
		AgentSocket:      r.AgentSocket,
		NoAgent:          noAgent,
		ConnectTimeout:   time.Duration(r.ConnectTimeout),
		KeepAlive:        time.Duration(r.KeepAlive),
		KeepAliveMissed:  r.KeepAliveMissed,
	}
}

// validate refuses a request no client of this version sends.
func (r *keeperRequest) validate() error {
	if err := r.validateEndpoint(); err != nil {
		return err
	}
	_, err := channel.Quote(r.Argv)
	return err
}

// validateEndpoint refuses a request whose endpoint, paths or agent no
// client of this version sends: all of validate but the command.
func (r *keeperRequest) validateEndpoint() error {
	e := r.Endpoint
	switch {
	case e.Host == "" || e.Address == "" || e.User == "":
		return errors.New("endpoint lacks host, address or user")
	case e.Port < 1 || e.Port > 65535:
		return fmt.Errorf("port %d out of range", e.Port)
	case e.Explicit < 0 || e.Explicit > len(e.IdentityFiles):
		return errors.New("explicit identity count out of range")
	case !filepath.IsAbs(r.KnownHosts):
		return errors.New("known_hosts path is not absolute")
	case r.AgentSocket != "" && !filepath.IsAbs(r.AgentSocket):
		return errors.New("agent socket path is not absolute")
	}
	for _, f := range e.IdentityFiles {
		if !filepath.IsAbs(f) {
			return errors.New("identity file path is not absolute")
		}
	}
	return nil
}

// keptKey is what one kept connection is shared by: everything that
// decides where it goes, which host key it must have and who it logs in as.
type keptKey struct {
	host, address string
	port          int
	user          string
	identities    string // IdentityFiles joined by NUL
	explicit      int
	knownHosts    string
	acceptNew     bool
	agentSocket   string
	noAgent       bool
}

func (r *keeperRequest) key() keptKey {
	e := r.Endpoint
	var ids []byte
	for _, f := range e.IdentityFiles {
		ids = append(append(ids, f...), 0)
	}
	return keptKey{
		host: e.Host, address: e.Address, port: e.Port, user: e.User,
		identities: string(ids), explicit: e.Explicit,
		knownHosts: r.KnownHosts, acceptNew: r.AcceptNew,
		agentSocket: r.AgentSocket, noAgent: r.NoAgent || r.AgentSocket == "",
	}
}

// keeperFailure is a *channel.RemoteError raised before a session opened: dialing,
// authenticating, checking the host key (of a new or a kept connection) or
// opening the session.
type keeperFailure struct {
	Host    string                  `json:"host"`
	Address string                  `json:"address,omitempty"`
	Stage   channel.Stage           `json:"stage"`
	Message string                  `json:"message"`            // the cause's message
	HostKey *sshclient.HostKeyError `json:"host_key,omitempty"` // the cause, when it is a refused host key
}

func failureOf(err error) *keeperFailure {
	var re *channel.RemoteError
	if !errors.As(err, &re) {
		return &keeperFailure{Stage: channel.StageConnect, Message: err.Error()}
	}
	f := &keeperFailure{Host: re.Host, Address: re.Address, Stage: re.Stage}
	if re.Err != nil {
		f.Message = re.Err.Error()
		errors.As(re.Err, &f.HostKey)
	}
	return f
}

// remoteError is the *channel.RemoteError the keeper met. A refused host key comes
// back as the very *sshclient.HostKeyError the dialer returns; other causes keep
// their message.
func (f *keeperFailure) remoteError(host string) *channel.RemoteError {
	re := &channel.RemoteError{Host: f.Host, Address: f.Address, Stage: f.Stage}
	if re.Host == "" {
		re.Host = host
	}
	switch {
	case f.HostKey != nil && f.HostKey.Error() == f.Message:
		re.Err = f.HostKey
	case f.HostKey != nil:
		re.Err = &wireError{msg: f.Message, cause: f.HostKey}
	case f.Message != "":
		re.Err = errors.New(f.Message)
	}
	return re
}

// wireError is a cause that crossed the keeper socket: its message as it
// was, unwrapping to the typed cause it carried.
type wireError struct {
	msg   string
	cause error
}

func (e *wireError) Error() string { return e.msg }
func (e *wireError) Unwrap() error { return e.cause }

// keeperExit is how a session ended (a sshclient.Exit on the wire), as facts
// the client turns into what sshclient.Pool.Run returns for the same end.
type keeperExit struct {
	Status  int    `json:"status"`            // exit status; -1 when none came
	Signal  string `json:"signal,omitempty"`  // the signal that ended it
	Missing bool   `json:"missing,omitempty"` // it ended with neither status nor signal
	Failed  string `json:"failed,omitempty"`  // the session failed otherwise (transport)
	Over    bool   `json:"over,omitempty"`    // stdout or stderr passed sshclient.MaxOutputBytes
}

func wireExit(x sshclient.Exit) *keeperExit {
	return &keeperExit{Status: x.Status, Signal: x.Signal, Missing: x.Missing, Failed: x.Failed, Over: x.Over}
}

func (x *keeperExit) exit() sshclient.Exit {
	return sshclient.Exit{Status: x.Status, Signal: x.Signal, Missing: x.Missing, Failed: x.Failed, Over: x.Over}
}

// writeFrame writes f as one length-prefixed frame in one Write.
func writeFrame(w io.Writer, f *keeperFrame) error {
	msg, err := appendFrame(nil, f)
	if err != nil {
		return err
	}
	_, err = w.Write(msg)
	return err
}

// appendFrame appends f to dst as one length-prefixed frame.
func appendFrame(dst []byte, f *keeperFrame) ([]byte, error) {
	b, err := json.Marshal(f)
	if err != nil {
		return dst, err
	}
	if len(b) > maxKeeperFrame {
		return dst, fmt.Errorf("keeper frame of %d bytes exceeds %d", len(b), maxKeeperFrame)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(b)))
	return append(dst, b...), nil
}

// readFrame reads one frame into f, refusing one above maxKeeperFrame
// before reading its body.
func readFrame(r io.Reader, f *keeperFrame) error {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxKeeperFrame {
		return fmt.Errorf("keeper frame of %d bytes exceeds %d", n, maxKeeperFrame)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return err
	}
	*f = keeperFrame{}
	if err := json.Unmarshal(b, f); err != nil {
		return fmt.Errorf("decode keeper frame: %w", err)
	}
	return nil
}

package channel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// A session serves many verb calls in one run of the remote program, so a
// kept connection pays for starting stado on the host once instead of once
// per call. `stado host channel session` first prints the line
// SessionHello, then reads frames (a 4-byte big-endian length, then a JSON
// sessionRequest) and answers each with one frame (a SessionResponse):
// what the call would have printed on stdout and stderr and its exit code.
// Every call goes through the same grammar and dispatch as a single call;
// a session cannot be opened inside a session. It ends at the end of its
// input.

// SessionHello is the first line a session prints, with the protocol.
var SessionHello = "stado-channel-session " + strconv.Itoa(ProtocolVersion) + "\n"

// maxSessionFrame bounds one request or response frame: a unit file or an
// ensure request on stdin, or a result document, with room for encoding.
const maxSessionFrame = 4*MaxUnitBytes + 4096

type sessionRequest struct {
	Argv  []string `json:"argv"`
	Stdin []byte   `json:"stdin,omitempty"`
}

// SessionResponse is what one call in a session printed: its stdout and
// stderr and the exit code of the call as a single execution.
type SessionResponse struct {
	Exit   int    `json:"exit"`
	Stdout []byte `json:"stdout"`
	Stderr []byte `json:"stderr,omitempty"`
}

// SessionKeeper is a Host that can hold what its calls open, such as its
// connection to the init system, from one call to the next. A session asks
// it to before its first call and lets go at its end, so its calls share
// what a single call would open and close for itself.
type SessionKeeper interface {
	KeepForSession() (release func())
}

// writeSessionFrame writes v as one length-prefixed JSON frame in one Write.
func writeSessionFrame(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > maxSessionFrame {
		return fmt.Errorf("session frame of %d bytes exceeds %d", len(b), maxSessionFrame)
	}
	buf := make([]byte, 4, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	_, err = w.Write(append(buf, b...))
	return err
}

// readSessionFrame reads one frame into v; io.EOF at a frame boundary ends
// the stream cleanly.
func readSessionFrame(r io.Reader, v any) error {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxSessionFrame {
		return fmt.Errorf("session frame of %d bytes exceeds %d", size, maxSessionFrame)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return fmt.Errorf("read session frame: %w", err)
	}
	return json.Unmarshal(b, v)
}

// WriteSessionCall writes one call of a session — its argv (call[0] is the
// verb) and its stdin (nil for none) — as one frame, the way a session's
// client sends it.
func WriteSessionCall(w io.Writer, call []string, stdin []byte) error {
	return writeSessionFrame(w, sessionRequest{Argv: call, Stdin: stdin})
}

// ReadSessionResponse reads the frame a session answers one call with. An
// error means the stream is unusable: io.EOF when it ended between frames.
func ReadSessionResponse(r io.Reader) (SessionResponse, error) {
	var resp SessionResponse
	err := readSessionFrame(r, &resp)
	return resp, err
}

// serveSession is the remote end of a session.
func serveSession(ctx context.Context, stdin io.Reader, stdout io.Writer, host Host) error {
	if stdin == nil {
		return refusef(CodeInvalidContent, "a session reads its calls on stdin, and there is none")
	}
	if _, err := io.WriteString(stdout, SessionHello); err != nil {
		return err
	}
	if k, ok := host.(SessionKeeper); ok {
		defer k.KeepForSession()()
	}
	in := bufio.NewReader(stdin)
	for {
		var req sessionRequest
		err := readSessionFrame(in, &req)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return refusef(CodeInvalidContent, "session: %v", err)
		}
		var cmd Command
		if len(req.Argv) > 0 && req.Argv[0] == string(VerbSession) {
			err = refusef(CodeInvalidArguments, "a session is not opened inside a session")
		} else {
			cmd, err = ParseArgv(req.Argv)
		}
		var body io.Reader
		if req.Stdin != nil {
			body = bytes.NewReader(req.Stdin)
		}
		var out, errb bytes.Buffer
		code := ExitCode(serve(ctx, cmd, err, body, &out, &errb, host))
		if err := writeSessionFrame(stdout, SessionResponse{Exit: code, Stdout: out.Bytes(), Stderr: errb.Bytes()}); err != nil {
			return err
		}
	}
}

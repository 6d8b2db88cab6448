package channel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/release"
)

// ProtocolVersion is the version of the verb set and its documents. It is
// carried in every document the remote program prints.
const ProtocolVersion = 2

// Capability names something the host end understands that came within a
// protocol version, so a newer client learns from a field — never from the
// wording of a refusal — whether an older host can take it. Every document
// the remote program prints lists the host's capabilities; a document
// without the list comes from a stado older than capabilities, which has
// none of them.
type Capability string

// Capabilities of the host end.
const (
	// CapEnsureServing: ensure reads the request's serving field and
	// answers with the serving reading (EnsureRequest.Serving). A host
	// without it refuses the field as invalid_content.
	CapEnsureServing Capability = "ensure_serving"
	// CapUnitDomain: unit-start, unit-stop, unit-restart and unit-remove
	// take a last word launchd-domain=DOMAIN (Command.Domain). A host
	// without it refuses that word; the client then says so, and never
	// acts in another domain.
	CapUnitDomain Capability = "unit_domain"
)

// HostCapabilities is what this stado's host end advertises.
func HostCapabilities() []Capability { return []Capability{CapEnsureServing, CapUnitDomain} }

// Document kinds the remote program prints on stdout, exactly one per call.
const (
	KindResult  = "stado.channel.result"
	KindRefusal = "stado.channel.refusal"
	KindError   = "stado.channel.error"
)

// Exit codes of the remote program.
const (
	ExitOK      = 0 // the verb ran; a result document
	ExitFailure = 1 // the host action failed; an error document
	ExitRefused = 3 // refused; nothing ran; a refusal document
)

// ResultDocument is what the remote program prints after a verb ran.
type ResultDocument struct {
	Kind         string          `json:"kind"`
	Protocol     int             `json:"protocol"`
	Capabilities []Capability    `json:"capabilities,omitempty"`
	Verb         Verb            `json:"verb"`
	Result       json.RawMessage `json:"result"`
}

// RefusalDocument is what the remote program prints when it refuses.
type RefusalDocument struct {
	Kind         string       `json:"kind"`
	Protocol     int          `json:"protocol"`
	Capabilities []Capability `json:"capabilities,omitempty"`
	Verb         Verb         `json:"verb,omitempty"`
	Code         string       `json:"code"`
	Message      string       `json:"message"`
}

// ErrorDocument is what the remote program prints when the host action failed.
type ErrorDocument struct {
	Kind         string       `json:"kind"`
	Protocol     int          `json:"protocol"`
	Capabilities []Capability `json:"capabilities,omitempty"`
	Verb         Verb         `json:"verb"`
	Message      string       `json:"message"`
}

// Main is the whole of `stado host channel` as an exit code: Run, then
// ExitCode of its error.
func Main(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdin io.Reader, stdout, stderr io.Writer, host Host) int {
	return ExitCode(Run(ctx, args, lookupEnv, stdin, stdout, stderr, host))
}

// Run serves one verb call: with arguments, argv (verb first); without,
// the forced command's SSH_ORIGINAL_COMMAND; with neither it refuses — a
// forced command never opens a login shell. It prints exactly one JSON
// document on stdout and a short line on stderr when it did not succeed,
// and returns nil, the *Refusal it printed, or the host's failure.
func Run(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdin io.Reader, stdout, stderr io.Writer, host Host) error {
	if len(args) > 0 {
		cmd, err := ParseArgv(args)
		return serve(ctx, cmd, err, stdin, stdout, stderr, host)
	}
	original, _ := lookupEnv("SSH_ORIGINAL_COMMAND")
	cmd, err := ParseCommand(original)
	return serve(ctx, cmd, err, stdin, stdout, stderr, host)
}

// ExitCode is the remote program's exit code for Run's error.
func ExitCode(err error) int {
	var r *Refusal
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &r):
		return ExitRefused
	default:
		return ExitFailure
	}
}

// Serve parses original (an SSH_ORIGINAL_COMMAND) with ParseCommand and runs
// it against host (see Run). Anything outside the grammar is refused with
// exit 3 before any Host method is called. It never starts a process itself.
func Serve(ctx context.Context, original string, stdin io.Reader, stdout, stderr io.Writer, host Host) int {
	cmd, err := ParseCommand(original)
	return ExitCode(serve(ctx, cmd, err, stdin, stdout, stderr, host))
}

// ServeArgv is Serve for argv given directly (verb first).
func ServeArgv(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer, host Host) int {
	cmd, err := ParseArgv(argv)
	return ExitCode(serve(ctx, cmd, err, stdin, stdout, stderr, host))
}

func serve(ctx context.Context, cmd Command, err error, stdin io.Reader, stdout, stderr io.Writer, host Host) error {
	if err == nil {
		err = cmd.CheckOS(host.OS())
	}
	if err == nil && cmd.Verb == VerbSession {
		return serveSession(ctx, stdin, stdout, host)
	}
	var body []byte
	if err == nil && (cmd.Verb == VerbUnitInstall || cmd.Verb == VerbEnsure || cmd.Verb == VerbVerify || cmd.Verb == VerbReleaseActivate || cmd.Verb == VerbReleaseState) {
		body, err = readBody(stdin, cmd.Verb)
	}
	if err != nil {
		return printRefusal(stdout, stderr, cmd.Verb, err)
	}
	raw, err := dispatch(ctx, cmd, body, host)
	if err != nil {
		if code, ok := refusal.CodeOf(err); ok {
			return printRefusal(stdout, stderr, cmd.Verb, &Refusal{Code: code, Message: err.Error()})
		}
		writeDoc(stdout, ErrorDocument{Kind: KindError, Protocol: ProtocolVersion, Capabilities: HostCapabilities(), Verb: cmd.Verb, Message: err.Error()})
		fmt.Fprintf(stderr, "stado host channel: %s: %s\n", cmd.Verb, oneLine(err.Error()))
		return err
	}
	writeDoc(stdout, ResultDocument{Kind: KindResult, Protocol: ProtocolVersion, Capabilities: HostCapabilities(), Verb: cmd.Verb, Result: raw})
	return nil
}

// readBody reads the document a verb takes on stdin: the unit file of
// unit-install, the request of ensure.
func readBody(stdin io.Reader, verb Verb) ([]byte, error) {
	if stdin == nil {
		return nil, refusef(CodeInvalidContent, "%s reads its input on stdin, and stdin is empty", verb)
	}
	content, err := io.ReadAll(io.LimitReader(stdin, MaxUnitBytes+1))
	if err != nil {
		return nil, refusef(CodeInvalidContent, "read %s input from stdin: %v", verb, err)
	}
	switch {
	case len(content) > MaxUnitBytes:
		return nil, refusef(CodeContentTooLarge, "%s input exceeds %d bytes", verb, MaxUnitBytes)
	case len(content) == 0:
		return nil, refusef(CodeInvalidContent, "%s reads its input on stdin, and stdin is empty", verb)
	}
	return content, nil
}

// decodeEnsure reads the ensure request document strictly and holds it to
// the verb's words: the same unit, scope and mode, durations in bounds.
func decodeEnsure(c Command, body []byte) (EnsureRequest, error) {
	var req EnsureRequest
	if err := decodeRequest(VerbEnsure, body, &req); err != nil {
		return req, err
	}
	switch {
	case req.Service.Unit != c.Unit():
		return req, refusef(CodeInvalidUnit, "ensure names unit %s and its request declares %s", strconv.Quote(c.Unit()), strconv.Quote(req.Service.Unit))
	case req.Service.EffectiveScope() != c.Scope:
		return req, refusef(CodeInvalidScope, "ensure names scope %s and its request declares %s", c.Scope, req.Service.EffectiveScope())
	case req.Mode != c.Mode:
		return req, refusef(CodeInvalidArguments, "ensure names mode %s and its request says %s", c.Mode, strconv.Quote(req.Mode))
	case req.Settle < 0 || req.Settle > MaxSettle:
		return req, refusef(refusal.InvalidDuration, "settle %s is outside 0 to %s", req.Settle, MaxSettle)
	case req.Wait < 0 || req.Wait > MaxWait:
		return req, refusef(refusal.InvalidDuration, "wait %s is outside 0 to %s", req.Wait, MaxWait)
	case req.Serving != nil && (req.Serving.Port < 1 || req.Serving.Port > 65535):
		return req, refusef(CodeInvalidPort, "serving port %s of %s is not a whole number from 1 to 65535", strconv.Itoa(req.Serving.Port), req.Service.Unit)
	}
	if req.Service.UnitPath != "" {
		if err := checkUnitPath(c.Scope, c.Unit(), req.Service.UnitPath); err != nil {
			return req, err
		}
	}
	return req, nil
}

// decodeRequest decodes body, the request document a verb reads on stdin,
// into v: exactly one JSON document with no field v lacks, followed by
// nothing but JSON whitespace. Anything after the document — a second
// document, a stray byte — is refused (invalid_content, naming where it
// starts and how it begins) rather than ignored, so what the host acts on
// is all that was sent. Errors are *Refusal.
func decodeRequest(verb Verb, body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return refusef(CodeInvalidContent, "%s request on stdin is not a request document: %v", verb, err)
	}
	end := dec.InputOffset()
	rest := bytes.TrimLeft(body[end:], " \t\r\n") // JSON's whitespace, no other
	if len(rest) == 0 {
		return nil
	}
	at := len(body) - len(rest)
	head := rest[:min(len(rest), 24)]
	return refusef(CodeInvalidContent, "%s request on stdin has %d more bytes after its document, from byte %d: %s", verb, len(rest), at, strconv.QuoteToASCII(string(head)))
}

// dispatch calls the Host method of c's verb with its typed request and
// encodes the typed result.
func dispatch(ctx context.Context, c Command, body []byte, h Host) (json.RawMessage, error) {
	u := UnitRef{Scope: c.Scope, Unit: c.Unit(), Domain: c.Domain}
	var res any
	var err error
	switch c.Verb {
	case VerbEnsure:
		var req EnsureRequest
		if req, err = decodeEnsure(c, body); err == nil {
			res, err = h.Ensure(ctx, req)
		}
	case VerbUnitInstall:
		res, err = h.UnitInstall(ctx, InstallRequest{UnitRef: u, Path: c.Path, Content: body})
	case VerbUnitRemove:
		res, err = h.UnitRemove(ctx, RemoveRequest{UnitRef: u, Path: c.Path})
	case VerbUnitStart:
		res, err = h.UnitStart(ctx, u)
	case VerbUnitStop:
		res, err = h.UnitStop(ctx, u)
	case VerbUnitRestart:
		res, err = h.UnitRestart(ctx, u)
	case VerbUnitShow:
		res, err = h.UnitShow(ctx, ShowRequest{Scope: c.Scope, Units: append([]string(nil), c.Units...)})
	case VerbUnitFile:
		res, err = h.UnitFile(ctx, u)
	case VerbUnitLogs:
		res, err = h.UnitLogs(ctx, LogsRequest{UnitRef: u, Lines: c.Lines})
	case VerbUnitEnv:
		res, err = h.UnitEnv(ctx, u)
	case VerbUnitList:
		res, err = h.UnitList(ctx, c.Scope)
	case VerbPortOwner:
		res, err = h.PortOwner(ctx, c.Port)
	case VerbRepairStep:
		res, err = h.RepairStep(ctx, StepRequest{Step: c.Step, Env: append([]EnvVar(nil), c.Env...)})
	case VerbVersion:
		res, err = h.Version(ctx)
	case VerbRecoveries:
		res, err = h.Recoveries(ctx)
	case VerbReleaseActivate:
		var req release.ActivateRequest
		if err = decodeRequest(VerbReleaseActivate, body, &req); err == nil {
			res, err = h.ReleaseActivate(ctx, req)
		}
	case VerbReleaseState:
		var req release.StateRequest
		if err = decodeRequest(VerbReleaseState, body, &req); err == nil {
			res, err = h.ReleaseState(ctx, req)
		}
	case VerbVerify:
		var req VerifyRequest
		if req, err = decodeVerify(body, h.OS()); err == nil {
			res, err = h.Verify(ctx, req)
		}
	default:
		return nil, fmt.Errorf("verb %q has no dispatch", c.Verb) // unreachable: parseWords closes the set
	}
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("encode %s result: %w", c.Verb, err)
	}
	return raw, nil
}

func printRefusal(stdout, stderr io.Writer, verb Verb, err error) error {
	var r *Refusal
	if !errors.As(err, &r) {
		r = &Refusal{Code: CodeInvalidArguments, Message: err.Error()}
	}
	writeDoc(stdout, RefusalDocument{Kind: KindRefusal, Protocol: ProtocolVersion, Capabilities: HostCapabilities(), Verb: verb, Code: string(r.Code), Message: r.Message})
	fmt.Fprintf(stderr, "stado host channel: refused (%s): %s\n", r.Code, oneLine(r.Message))
	return r
}

func writeDoc(w io.Writer, doc any) {
	b, err := json.Marshal(doc)
	if err != nil { // the document types hold only strings and raw JSON
		b = []byte(`{"kind":"` + KindError + `","message":"encode document"}`)
	}
	_, _ = w.Write(append(b, '\n'))
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

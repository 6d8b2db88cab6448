package channel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/wisent/stado/refusal"
	"io"
	"strings"
)

// ProtocolVersion is the version of the verb set and its documents. It is
// carried in every document the remote program prints.
const ProtocolVersion = 1

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

// Host is the host-side work the verbs trigger. The caller implements it with
// the units Manager and the repair catalog; channel validates every argument
// before a method is called, so an implementation receives only names and
// paths of the grammar (scope "system" or "user"; a unit of this host's init
// system; a path in an allowed directory named after the unit). Each method
// returns a JSON-encodable result, or an error; an error that implements
// RefusalCode() string is reported as a refusal (exit 3) with that code, any
// other as a failure (exit 1).
//
// An implementation must still restrict what the grammar cannot know: a user
// unit path below the login user's own home, and repair-step environment
// names to those the step declares.
type Host interface {
	// OS is "linux" or "darwin"; it selects which unit identities are valid.
	OS() string
	UnitInstall(ctx context.Context, scope, unit, path string, content []byte) (any, error)
	UnitRemove(ctx context.Context, scope, unit, path string) (any, error)
	UnitStart(ctx context.Context, scope, unit string) (any, error)
	UnitStop(ctx context.Context, scope, unit string) (any, error)
	UnitRestart(ctx context.Context, scope, unit string) (any, error)
	UnitShow(ctx context.Context, scope string, units []string) (any, error)
	UnitLogs(ctx context.Context, scope, unit string, lines int) (any, error)
	UnitEnv(ctx context.Context, scope, unit string) (any, error)
	UnitList(ctx context.Context, scope string) (any, error)
	PortOwner(ctx context.Context, port int) (any, error)
	RepairStep(ctx context.Context, step string, env map[string]string) (any, error)
	Version(ctx context.Context) (any, error)
}

// ResultDocument is what the remote program prints after a verb ran.
type ResultDocument struct {
	Kind     string          `json:"kind"`
	Protocol int             `json:"protocol"`
	Verb     Verb            `json:"verb"`
	Result   json.RawMessage `json:"result"`
}

// RefusalDocument is what the remote program prints when it refuses.
type RefusalDocument struct {
	Kind     string `json:"kind"`
	Protocol int    `json:"protocol"`
	Verb     Verb   `json:"verb,omitempty"`
	Code     string `json:"code"`
	Message  string `json:"message"`
}

// ErrorDocument is what the remote program prints when the host action failed.
type ErrorDocument struct {
	Kind     string `json:"kind"`
	Protocol int    `json:"protocol"`
	Verb     Verb   `json:"verb"`
	Message  string `json:"message"`
}

// Main is the whole of `stado host channel`: with arguments it serves them
// as one verb call (ServeArgv); without, it serves the forced command's
// SSH_ORIGINAL_COMMAND (Serve), and with neither it refuses — a forced
// command never opens a login shell. It returns the exit code.
func Main(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdin io.Reader, stdout, stderr io.Writer, host Host) int {
	if len(args) > 0 {
		return ServeArgv(ctx, args, stdin, stdout, stderr, host)
	}
	original, _ := lookupEnv("SSH_ORIGINAL_COMMAND")
	return Serve(ctx, original, stdin, stdout, stderr, host)
}

// Serve parses original (an SSH_ORIGINAL_COMMAND) with ParseCommand and runs
// it against host, printing exactly one JSON document on stdout and a short
// line on stderr when it did not succeed. Anything outside the grammar is
// refused with exit 3 before any Host method is called. It never starts a
// process itself.
func Serve(ctx context.Context, original string, stdin io.Reader, stdout, stderr io.Writer, host Host) int {
	cmd, err := ParseCommand(original)
	return serve(ctx, cmd, err, stdin, stdout, stderr, host)
}

// ServeArgv is Serve for argv given directly (verb first).
func ServeArgv(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer, host Host) int {
	cmd, err := ParseArgv(argv)
	return serve(ctx, cmd, err, stdin, stdout, stderr, host)
}

func serve(ctx context.Context, cmd Command, err error, stdin io.Reader, stdout, stderr io.Writer, host Host) int {
	if err == nil {
		err = cmd.CheckOS(host.OS())
	}
	var content []byte
	if err == nil && cmd.Verb == VerbUnitInstall {
		content, err = readContent(stdin)
	}
	if err != nil {
		return printRefusal(stdout, stderr, cmd.Verb, err)
	}
	result, err := dispatch(ctx, cmd, content, host)
	if err != nil {
		var coded refusal.Coded
		if errors.As(err, &coded) {
			return printRefusal(stdout, stderr, cmd.Verb, &Refusal{Code: coded.RefusalCode(), Message: err.Error()})
		}
		writeDoc(stdout, ErrorDocument{Kind: KindError, Protocol: ProtocolVersion, Verb: cmd.Verb, Message: err.Error()})
		fmt.Fprintf(stderr, "stado host channel: %s: %s\n", cmd.Verb, oneLine(err.Error()))
		return ExitFailure
	}
	raw, err := json.Marshal(result)
	if err != nil {
		writeDoc(stdout, ErrorDocument{Kind: KindError, Protocol: ProtocolVersion, Verb: cmd.Verb, Message: "encode result: " + err.Error()})
		fmt.Fprintf(stderr, "stado host channel: %s: encode result: %s\n", cmd.Verb, err)
		return ExitFailure
	}
	writeDoc(stdout, ResultDocument{Kind: KindResult, Protocol: ProtocolVersion, Verb: cmd.Verb, Result: raw})
	return ExitOK
}

func readContent(stdin io.Reader) ([]byte, error) {
	if stdin == nil {
		return nil, refusef(CodeInvalidContent, "unit-install reads the unit file on stdin, and stdin is empty")
	}
	content, err := io.ReadAll(io.LimitReader(stdin, MaxUnitBytes+1))
	if err != nil {
		return nil, refusef(CodeInvalidContent, "read unit content from stdin: %v", err)
	}
	switch {
	case len(content) > MaxUnitBytes:
		return nil, refusef(CodeContentTooLarge, "unit content exceeds %d bytes", MaxUnitBytes)
	case len(content) == 0:
		return nil, refusef(CodeInvalidContent, "unit-install reads the unit file on stdin, and stdin is empty")
	}
	return content, nil
}

func dispatch(ctx context.Context, c Command, content []byte, h Host) (any, error) {
	switch c.Verb {
	case VerbUnitInstall:
		return h.UnitInstall(ctx, c.Scope, c.Unit(), c.Path, content)
	case VerbUnitRemove:
		return h.UnitRemove(ctx, c.Scope, c.Unit(), c.Path)
	case VerbUnitStart:
		return h.UnitStart(ctx, c.Scope, c.Unit())
	case VerbUnitStop:
		return h.UnitStop(ctx, c.Scope, c.Unit())
	case VerbUnitRestart:
		return h.UnitRestart(ctx, c.Scope, c.Unit())
	case VerbUnitShow:
		return h.UnitShow(ctx, c.Scope, append([]string(nil), c.Units...))
	case VerbUnitLogs:
		return h.UnitLogs(ctx, c.Scope, c.Unit(), c.Lines)
	case VerbUnitEnv:
		return h.UnitEnv(ctx, c.Scope, c.Unit())
	case VerbUnitList:
		return h.UnitList(ctx, c.Scope)
	case VerbPortOwner:
		return h.PortOwner(ctx, c.Port)
	case VerbRepairStep:
		return h.RepairStep(ctx, c.Step, c.EnvMap())
	case VerbVersion:
		return h.Version(ctx)
	}
	return nil, fmt.Errorf("verb %q has no dispatch", c.Verb) // unreachable: parseWords closes the set
}

func printRefusal(stdout, stderr io.Writer, verb Verb, err error) int {
	var r *Refusal
	if !errors.As(err, &r) {
		r = &Refusal{Code: CodeInvalidArguments, Message: err.Error()}
	}
	writeDoc(stdout, RefusalDocument{Kind: KindRefusal, Protocol: ProtocolVersion, Verb: verb, Code: string(r.Code), Message: r.Message})
	fmt.Fprintf(stderr, "stado host channel: refused (%s): %s\n", r.Code, oneLine(r.Message))
	return ExitRefused
}

func writeDoc(w io.Writer, doc any) {
	b, err := json.Marshal(doc)
	if err != nil { // the document types hold only strings and raw JSON
		b = []byte(`{"kind":"` + KindError + `","message":"encode document"}`)
	}
	_, _ = w.Write(append(b, '\n'))
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

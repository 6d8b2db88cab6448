package channel

import (
	"fmt"

	"github.com/wisent/stado/refusal"
)

// Refusal codes of the remote program's grammar, from the one code set in
// package refusal. They appear in the refusal document and in the caller's
// --json output.
const (
	CodeEmptyCommand       = refusal.EmptyCommand       // no verb at all
	CodeForbiddenCharacter = refusal.ForbiddenCharacter // a byte outside the quoting grammar
	CodeUnbalancedQuote    = refusal.UnbalancedQuote    // a single quote never closed
	CodePathTraversal      = refusal.PathTraversal      // a ".." segment in a word
	CodeTooLong            = refusal.TooLong            // the command or a word exceeds its bound
	CodeUnknownVerb        = refusal.UnknownVerb        // a verb outside the closed set
	CodeInvalidArguments   = refusal.InvalidArguments   // wrong number of arguments
	CodeInvalidScope       = refusal.InvalidScope       // scope not system or user
	CodeInvalidUnit        = refusal.InvalidUnit        // not a systemd unit name or launchd label
	CodeInvalidPath        = refusal.InvalidPath        // unit path outside the allowed directories
	CodeInvalidLines       = refusal.InvalidLines       // log window outside 1..MaxLogLines
	CodeInvalidPort        = refusal.InvalidPort        // port outside 1..65535
	CodeInvalidStep        = refusal.InvalidStep        // repair step name outside its grammar
	CodeInvalidEnv         = refusal.InvalidEnv         // KEY=VALUE pair outside its grammar
	CodeInvalidContent     = refusal.InvalidContent     // unit-install stdin empty or unreadable
	CodeContentTooLarge    = refusal.ContentTooLarge    // unit-install stdin above MaxUnitBytes
)

// Refusal is the remote program (or the host behind it) declining a call:
// the one refusal type of package refusal, so a code survives the wire and
// every wrap unchanged.
type Refusal = refusal.Error

func refusef(code refusal.Code, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Message: fmt.Sprintf(format, args...)}
}

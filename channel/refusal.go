package channel

import "fmt"

// Refusal codes of the remote program's grammar. They are stable: they
// appear in the JSON refusal document and in the caller's --json output.
const (
	CodeEmptyCommand       = "empty_command"       // no verb at all
	CodeForbiddenCharacter = "forbidden_character" // a byte outside the quoting grammar
	CodeUnbalancedQuote    = "unbalanced_quote"    // a single quote never closed
	CodePathTraversal      = "path_traversal"      // a ".." segment in a word
	CodeTooLong            = "too_long"            // the command or a word exceeds its bound
	CodeUnknownVerb        = "unknown_verb"        // a verb outside the closed set
	CodeInvalidArguments   = "invalid_arguments"   // wrong number of arguments
	CodeInvalidScope       = "invalid_scope"       // scope not system or user
	CodeInvalidUnit        = "invalid_unit"        // not a systemd unit name or launchd label
	CodeInvalidPath        = "invalid_path"        // unit path outside the allowed directories
	CodeInvalidLines       = "invalid_lines"       // log window outside 1..MaxLogLines
	CodeInvalidPort        = "invalid_port"        // port outside 1..65535
	CodeInvalidStep        = "invalid_step"        // repair step name outside its grammar
	CodeInvalidEnv         = "invalid_env"         // KEY=VALUE pair outside its grammar
	CodeInvalidContent     = "invalid_content"     // unit-install stdin empty
	CodeContentTooLarge    = "content_too_large"   // unit-install stdin above MaxUnitBytes
)

// Refusal is the remote program declining a command. It is a result, not a
// crash: Code is one of the Code constants (or a code the Host chose), and
// Message names the offending word or field.
type Refusal struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (r *Refusal) Error() string { return r.Message }

// RefusalCode lets the CLI's exit-code table map a refusal to exit 3 with
// its machine code.
func (r *Refusal) RefusalCode() string { return r.Code }

func refusef(code, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Message: fmt.Sprintf(format, args...)}
}

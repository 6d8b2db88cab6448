// Package refusal owns the one refusal type of stado and its one set of
// machine codes. A refusal is a result, not a crash: the command, verb or
// step declined with a stable code that --json output, the host channel's
// documents, the beacon and the recovery register all carry.
//
// refusal imports only the standard library, so every package (registry,
// units, channel, repair, the write half, cli) can use it without pulling
// anything else in. Wrapping keeps a refusal's code end to end: CodeOf finds
// it through any chain of %w wraps.
package refusal

import (
	"errors"
	"fmt"
)

// Code is a stable machine code. Only the constants below are codes; a code
// read from a document is checked with Known.
type Code string

// The codes. Grouped by where they arise; each is documented in
// docs/exit-codes.md.
const (
	// Documents, declarations and the store.
	Validation            Code = "validation"             // a document or field is invalid
	Conflict              Code = "conflict"               // compare-and-swap lost
	NotFound              Code = "not_found"              // no such target, service, unit or step
	Ambiguous             Code = "ambiguous"              // a name matches more than one thing
	AlreadyDeclared       Code = "already_declared"       // adopt of a declared unit
	DeclarationIncomplete Code = "declaration_incomplete" // a path-only declaration cannot be rendered
	RecoveryUnit          Code = "recovery_unit"          // the host process is managed by the recovery step
	TargetNotEmpty        Code = "target_not_empty"       // a target still declares services
	StoreUnwritable       Code = "store_unwritable"       // the store refused the write
	Usage                 Code = "usage"                  // the command line is wrong
	DropInConflict        Code = "dropin_conflict"        // a host drop-in repeats the declaration's commands and cannot be set aside
	DrainFailed           Code = "drain_failed"           // retire/remove: the product's drain step failed, so its unit was not stopped

	// The host channel's grammar and the host's own checks.
	EmptyCommand       Code = "empty_command"
	ForbiddenCharacter Code = "forbidden_character"
	UnbalancedQuote    Code = "unbalanced_quote"
	PathTraversal      Code = "path_traversal"
	TooLong            Code = "too_long"
	UnknownVerb        Code = "unknown_verb"
	InvalidArguments   Code = "invalid_arguments"
	InvalidScope       Code = "invalid_scope"
	InvalidUnit        Code = "invalid_unit"
	InvalidPath        Code = "invalid_path"
	InvalidLines       Code = "invalid_lines"
	InvalidPort        Code = "invalid_port"
	InvalidStep        Code = "invalid_step"
	InvalidEnv         Code = "invalid_env"
	InvalidContent     Code = "invalid_content"
	ContentTooLarge    Code = "content_too_large"
	InvalidDuration    Code = "invalid_duration"
	ProtocolMismatch   Code = "protocol_mismatch" // the two ends speak different channel protocols
	OSMismatch         Code = "os_mismatch"       // the registry names another OS than the host runs

	// Stages of a call that failed before the host answered.
	HostKeyMismatch Code = "host_key_mismatch"
	HostKeyUnknown  Code = "host_key_unknown"
	HostKeyRevoked  Code = "host_key_revoked"

	// Confirming a unit after a start.
	Failing Code = "failing"

	// Serving a directory port (service serving --wait, ensure's last read).
	NotServing       Code = "not_serving"       // the unit's process exited, or it is not loaded or not started
	ServingElsewhere Code = "serving_elsewhere" // the unit listens on other ports, not its own
	ServingTimeout   Code = "serving_timeout"   // the wait's timeout passed before the unit listened

	// Repair steps and restarts.
	UnknownHost     Code = "unknown_host"
	StepUnknown     Code = "repair_step_unknown"
	InputMissing    Code = "repair_input_missing"
	StepUnsupported Code = "repair_step_unsupported"
	StepFailed      Code = "repair_step_failed"
	StepTimeout     Code = "repair_step_timeout"
	WrongHost       Code = "wrong_host"
	RestartFailed   Code = "restart_failed"
	NoManager       Code = "restart_unavailable"
	UserManagerDown Code = "user_manager_down" // a user's own service manager is not running

	// The read half's findings, reported by doctor and health.
	NoBeacon              Code = "no_beacon"
	StaleBeacon           Code = "stale_beacon"
	UnreadableBeacon      Code = "unreadable_beacon"
	UndeclaredHost        Code = "undeclared_host"
	Undeclared            Code = "undeclared"
	Missing               Code = "missing"
	Masked                Code = "masked" // a declared systemd unit is masked
	Inactive              Code = "inactive"
	Failed                Code = "failed"
	NeedsAttention        Code = "needs_attention"
	AnsweringUnsuccessful Code = "answering_unsuccessful"
	AnsweringStood        Code = "answering_stood"
	RegisterUnreadable    Code = "register_unreadable"
	ListenFailed          Code = "listen_failed"
	HostRefusal           Code = "host_refusal"

	// The resolver.
	CallerNotAllowed Code = "caller_not_allowed"
	Unreadable       Code = "unreadable"
	Held             Code = "held"

	// The autonomy cycle's plan and enforcer (docs/autonomy.md).
	Unreachable   Code = "unreachable"    // the verify sweep could not reach the host
	NoEvidence    Code = "no_evidence"    // stale or absent beacon, and verify could not read the unit
	Inconclusive  Code = "inconclusive"   // the beacon and verify disagree, or only the beacon answered
	CrashLoop     Code = "crash_loop"     // the supervisor keeps restarting the declared bytes and each run fails
	NotAttempted  Code = "not_attempted"  // the cycle stopped before this action
	NotAuthorized Code = "not_authorized" // enforce without the registry's authorization, or past its caps
	LeaseHeld     Code = "lease_held"     // another enforcer holds the store's lease
	Capped        Code = "capped"         // service converge: the blast-radius caps leave this retire to a later converge

	// The desktop page, before any work (docs/desktop.md).
	TokenRequired     Code = "token_required"      // the access token is missing or wrong
	CSRFRefused       Code = "csrf_refused"        // a state-changing request without the page's CSRF token, or from another origin
	HostHeaderRefused Code = "host_header_refused" // a Host header that is not a loopback address

	// The release flow (docs/release.md).
	ReleaseUnsigned      Code = "release_unsigned"        // a manifest without a signature, or one that is not minisign
	ReleaseUntrusted     Code = "release_untrusted"       // no key pinned on the host verifies the manifest
	ReleaseMismatch      Code = "release_mismatch"        // the manifest names another product, version, OS or architecture
	ReleaseTampered      Code = "release_tampered"        // a stored chunk's bytes do not have its digest
	ReleaseDigest        Code = "release_digest_mismatch" // the assembled bytes do not have the manifest's digest or size
	ReleaseDowngrade     Code = "release_downgrade"       // older than the active version, and the registry does not pin it
	ReleaseImageCorrupt  Code = "release_image_corrupt"   // an installed image directory no longer holds its digest
	ReleaseNotProven     Code = "release_not_proven"      // the restart did not prove a fresh pid on the activated image; the backup was restored
	ReleaseRestoreFailed Code = "release_restore_failed"  // the new image failed and the backup could not be proven either
	ReleaseNoKeys        Code = "release_no_keys"         // the host pins no release key

	// The store itself (docs/etcd.md).
	PackingUnread Code = "packing_unread" // packing asked on while some host's stado would not read packed values
)

var known = map[Code]bool{}

func init() {
	for _, c := range []Code{
		Validation, Conflict, NotFound, Ambiguous, AlreadyDeclared, DeclarationIncomplete, RecoveryUnit,
		TargetNotEmpty, StoreUnwritable, Usage, DropInConflict, DrainFailed,
		EmptyCommand, ForbiddenCharacter, UnbalancedQuote, PathTraversal, TooLong, UnknownVerb,
		InvalidArguments, InvalidScope, InvalidUnit, InvalidPath, InvalidLines, InvalidPort, InvalidStep,
		InvalidEnv, InvalidContent, ContentTooLarge, InvalidDuration, ProtocolMismatch, OSMismatch,
		HostKeyMismatch, HostKeyUnknown, HostKeyRevoked, Failing,
		NotServing, ServingElsewhere, ServingTimeout,
		UnknownHost, StepUnknown, InputMissing, StepUnsupported, StepFailed, StepTimeout, WrongHost,
		RestartFailed, NoManager, UserManagerDown,
		NoBeacon, StaleBeacon, UnreadableBeacon, UndeclaredHost, Undeclared, Missing, Masked, Inactive, Failed,
		NeedsAttention, AnsweringUnsuccessful, AnsweringStood, RegisterUnreadable, ListenFailed, HostRefusal,
		CallerNotAllowed, Unreadable, Held,
		Unreachable, NoEvidence, Inconclusive, CrashLoop, NotAttempted, NotAuthorized, LeaseHeld, Capped,
		TokenRequired, CSRFRefused, HostHeaderRefused,
		ReleaseUnsigned, ReleaseUntrusted, ReleaseMismatch, ReleaseTampered, ReleaseDigest, ReleaseDowngrade,
		ReleaseImageCorrupt, ReleaseNotProven, ReleaseRestoreFailed, ReleaseNoKeys,
		PackingUnread,
	} {
		known[c] = true
	}
}

// Known reports whether c is one of the codes above.
func Known(c Code) bool { return known[c] }

// Coded is any error that carries a refusal code. *Error implements it;
// typed errors of other packages (units.NotLoadedError, the host-key errors)
// implement it to be reported as refusals with their code.
type Coded interface {
	error
	RefusalCode() Code
}

// Error is the refusal: a code, a short lowercase message without a trailing
// period, an optional hint (the known fix) and optional structured details
// for --json, with an optional cause.
type Error struct {
	Code    Code
	Message string
	Hint    string
	Details any
	Err     error
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// RefusalCode implements Coded.
func (e *Error) RefusalCode() Code { return e.Code }

// New returns a refusal with a formatted message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Sentinel is an error value callers test with errors.Is (a store's "not
// found", a failed compare-and-swap) that is also a refusal with a code, so
// whatever wraps it is reported with that code without a table that knows
// the packages it comes from.
type Sentinel struct {
	code Code
	msg  string
}

// NewSentinel returns a sentinel refusal with code and message.
func NewSentinel(code Code, msg string) *Sentinel { return &Sentinel{code: code, msg: msg} }

func (s *Sentinel) Error() string { return s.msg }

// RefusalCode implements Coded.
func (s *Sentinel) RefusalCode() Code { return s.code }

// CodeOf returns the code of the first refusal in err's chain.
func CodeOf(err error) (Code, bool) {
	var c Coded
	if errors.As(err, &c) {
		return c.RefusalCode(), true
	}
	return "", false
}

// Is reports whether err's chain holds a refusal with code c.
func Is(err error, c Code) bool {
	got, ok := CodeOf(err)
	return ok && got == c
}

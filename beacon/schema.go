package beacon

import (
	"encoding/json"
	"time"
)

// Kind and FormatVersion identify a beacon document (docs/beacon.md).
const (
	Kind          = "stado.beacon"
	FormatVersion = 1
)

// Unit verdicts as a beacon reports them, plus the read side's unknown.
const (
	StateActive   = "active"
	StateInactive = "inactive"
	StateFailed   = "failed"
	StateFailing  = "failing"
	StateMissing  = "missing"
	// StateMasked: systemd reports the unit masked (linked to /dev/null),
	// so nothing starts it until it is unmasked.
	StateMasked = "masked"
	// StateUnknown is never published: the read side says it when the
	// host's beacon is absent or older than its staleness bound.
	StateUnknown = "unknown"
)

// Beacon is one host's report of one pass.
type Beacon struct {
	Kind    string `json:"kind"`
	Version int    `json:"version"`
	// Host is the registry target name the process runs as.
	Host string `json:"host"`
	// Identity tells apart two machines claiming one target name, such as
	// a cloned image that kept its id files.
	Identity Identity `json:"identity"`
	// Pass counts the passes of this process, from 1.
	Pass int64     `json:"pass"`
	At   time.Time `json:"at"`
	// IntervalSeconds is the pass interval the host applies.
	IntervalSeconds float64 `json:"interval_seconds"`
	// StaleAfterSeconds is the age after which a reader must not trust it.
	StaleAfterSeconds float64 `json:"stale_after_seconds"`
	StadoVersion      string  `json:"stado_version"`
	// StoreReads names the value encodings this host's stado reads beyond
	// the ones every stado reads (store.Reads): an operator turns packing
	// on once every host names it.
	StoreReads []string `json:"store_reads,omitempty"`
	// Units holds one report per declared service of this host.
	Units []UnitReport `json:"units"`
	// Undeclared lists loaded service units no declaration covers.
	Undeclared []UnitReport `json:"undeclared,omitempty"`
	// PeerRecoveries reports standings this host observed on other hosts.
	PeerRecoveries []PeerRecovery `json:"peer_recoveries,omitempty"`
	// Refusals lists everything the pass could not do, with its cause.
	Refusals []Refusal `json:"refusals,omitempty"`
	// Releases is this host's release images, read from its release state
	// file each pass (releases.go); absent when the host process reads none.
	Releases *Releases `json:"releases,omitempty"`
}

// Identity names the machine behind a beacon.
type Identity struct {
	Hostname  string `json:"hostname"`
	MachineID string `json:"machine_id,omitempty"`
	BootID    string `json:"boot_id,omitempty"`
	// PID is the host process's pid.
	PID int `json:"pid"`
	// Started is when the host process started.
	Started time.Time `json:"started"`
}

// UnitReport is one unit's verdict in a beacon.
type UnitReport struct {
	// Service is the declaration's name; empty for undeclared units.
	Service string `json:"service,omitempty"`
	Unit    string `json:"unit"`
	State   string `json:"state"`
	// Sub is the init system's own finer state (systemd SubState).
	Sub      string `json:"sub,omitempty"`
	PID      int    `json:"pid,omitempty"`
	LastExit *int   `json:"last_exit,omitempty"`
	// Starts is how many times the supervisor started the unit.
	Starts int `json:"starts,omitempty"`
	// Sentence explains a failing verdict in words.
	Sentence string `json:"sentence,omitempty"`
	// LastStderr is the last line the unit wrote, for failed/failing units.
	LastStderr string `json:"last_stderr,omitempty"`
	// Answering is the answering probe's block; absent when the catalog
	// declares no question for the service.
	Answering *Answering `json:"answering,omitempty"`
	// Protocol is the newest reading of the service's protocol executable;
	// absent when the declaration names none.
	Protocol *Protocol `json:"protocol,omitempty"`
	// File is the declared unit's file against what its declaration
	// renders on this host (what ensure would install); absent for
	// undeclared units and from host processes that do not compare
	// (earlier versions): a reader then knows nothing of drift.
	File *FileCheck `json:"file,omitempty"`
}

// FileCheck is one declared unit's file as the host process compared it
// this pass, with units.CompareInstalled (ensure's rendering).
type FileCheck struct {
	// Path is the unit file's path on the host.
	Path string `json:"path"`
	// Drift is true when the file is absent or its bytes are not what
	// ensure would write; false when they are, or when Uncompared.
	Drift bool `json:"drift"`
	// Absent is true when there is no file at Path.
	Absent bool `json:"absent,omitempty"`
	// Uncompared is true when the comparison could not be made (the
	// declaration renders nothing, the file cannot be read): Drift then
	// says nothing, and Reason says why.
	Uncompared bool `json:"uncompared,omitempty"`
	// Reason says the drift, or why there is no comparison, in a few
	// words; empty when the bytes match.
	Reason string `json:"reason,omitempty"`
}

// Protocol states.
const (
	ProtocolPending    = "pending"    // the first reading has not finished yet
	ProtocolRead       = "read"       // the executable answered
	ProtocolUnreadable = "unreadable" // an operation failed; see Op and Cause
)

// Protocol is what a service's protocol executable (service protocol 1)
// said at its newest reading: status and ready for a service, fingerprint
// for a probe.
type Protocol struct {
	State   string     `json:"state"`
	At      *time.Time `json:"at,omitempty"`
	Running *bool      `json:"running,omitempty"`
	Ready   *bool      `json:"ready,omitempty"`
	Healthy *bool      `json:"healthy,omitempty"`
	// Op and Cause name the operation that could not be read, and why.
	Op    string `json:"op,omitempty"`
	Cause string `json:"cause,omitempty"`
}

// CodeBeaconTooLarge is the refusal a host publishes in place of its
// reports when they would make its beacon larger than MaxBytes.
const CodeBeaconTooLarge = "beacon_too_large"

// Refusal is something a pass could not do.
type Refusal struct {
	Code    string `json:"code"`
	Subject string `json:"subject,omitempty"`
	Message string `json:"message"`
}

// Answering probe states.
const (
	AnswerAsked      = "asked"
	AnswerWaiting    = "waiting"
	AnswerStood      = "stood"
	AnswerFinished   = "finished"
	AnswerUnreadable = "unreadable"
)

// Answering is the block a pass reports for one service's question.
type Answering struct {
	State    string    `json:"state"`
	Question *Question `json:"question,omitempty"`
	// Since is when the pending question was sent.
	Since         *time.Time `json:"since,omitempty"`
	WaitedSeconds float64    `json:"waited_seconds,omitempty"`
	BoundSeconds  float64    `json:"bound_seconds,omitempty"`
	// Finished is this pass's finished probe (state finished), or the
	// newest finished probe while waiting.
	Finished *Finished `json:"finished,omitempty"`
	// Unreadable says why no question could be asked.
	Unreadable string `json:"unreadable,omitempty"`
	// Recovery is the recovery attempt of the standing episode, if any.
	Recovery json.RawMessage `json:"recovery,omitempty"`
	// AlreadyAttempted is set when a standing reading finds the episode's
	// recovery already done.
	AlreadyAttempted bool `json:"already_attempted,omitempty"`
	// RecordingRefusal names the register append that failed.
	RecordingRefusal *FileRefusal `json:"recording_refusal,omitempty"`
}

// Question is the request the probe sends.
type Question struct {
	Method   string          `json:"method"`
	Path     string          `json:"path"`
	Body     json.RawMessage `json:"body,omitempty"`
	Endpoint string          `json:"endpoint"`
	Repair   []string        `json:"repair"`
}

// Finished is the end of one probe: an answer or the transport's refusal.
type Finished struct {
	Answered *Answered `json:"answered,omitempty"`
	Refused  *Refused  `json:"refused,omitempty"`
}

// Answered is an HTTP answer, successful or not.
type Answered struct {
	Status     int       `json:"status"`
	Successful bool      `json:"successful"`
	ElapsedMS  int64     `json:"elapsed_ms"`
	At         time.Time `json:"at"`
	// Detail is the response body (bounded) when the answer is not 2xx.
	Detail string `json:"detail,omitempty"`
}

// Refused is the transport's own cause for a probe that got no answer.
type Refused struct {
	Cause string    `json:"cause"`
	At    time.Time `json:"at"`
}

// FileRefusal names a file operation that failed and why.
type FileRefusal struct {
	Op    string `json:"op"`
	File  string `json:"file"`
	Cause string `json:"cause"`
}

// PeerRecovery is one service on another host that this host's clients
// saw standing.
type PeerRecovery struct {
	Service          string          `json:"service"`
	Host             string          `json:"host"`
	Since            *time.Time      `json:"since,omitempty"`
	WaitedSeconds    float64         `json:"waited_seconds,omitempty"`
	BoundSeconds     float64         `json:"bound_seconds,omitempty"`
	Held             int             `json:"held,omitempty"`
	Oldest           json.RawMessage `json:"oldest,omitempty"`
	Recovery         json.RawMessage `json:"recovery,omitempty"`
	AlreadyRecovered bool            `json:"already_recovered,omitempty"`
	NotRecovered     string          `json:"not_recovered,omitempty"`
	Unreadable       string          `json:"unreadable,omitempty"`
	RecordingRefusal *FileRefusal    `json:"recording_refusal,omitempty"`
}

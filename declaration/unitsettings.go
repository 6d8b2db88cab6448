package declaration

import "reflect"

// UnitSettings are the settings of a unit beyond what it runs: where and as
// whom, its restart policy, its dependencies, its limits and how it is
// stopped. Each is rendered for the init system that has the concept (the
// systemd key or launchd key named on each field); a field the target's
// init system lacks is refused by validation (validate_unit.go). Zero values
// render nothing of their own, so a declaration that sets none of them
// renders as before.
type UnitSettings struct {
	// StadoDefaults nil or true renders stado's defaults for what is left
	// unset: the fixed PATH under env, the description "stado service
	// NAME", RestartSec 2 / ThrottleInterval 2, no start limit, WantedBy the
	// scope's default target, launchd RunAtLoad and log files under
	// ~/.stado/logs. false renders only what the declaration states, which
	// is what adopt records so that a unit renders back as it was written.
	StadoDefaults *bool `yaml:"stado_defaults,omitempty" json:"stado_defaults,omitempty"`
	// Description is systemd Description=.
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	// WorkingDirectory is systemd WorkingDirectory=, launchd WorkingDirectory.
	WorkingDirectory string `yaml:"working_directory,omitempty" json:"working_directory,omitempty"`
	// User and Group: systemd User=/Group=, launchd UserName/GroupName.
	User  string `yaml:"user,omitempty" json:"user,omitempty"`
	Group string `yaml:"group,omitempty" json:"group,omitempty"`
	// UMask is octal ("0022"): systemd UMask=, launchd Umask (an integer).
	UMask string `yaml:"umask,omitempty" json:"umask,omitempty"`
	// StdoutPath and StderrPath are files the program's output is appended
	// to: systemd StandardOutput=append:PATH, launchd StandardOutPath and
	// StandardErrorPath.
	StdoutPath string `yaml:"stdout_path,omitempty" json:"stdout_path,omitempty"`
	StderrPath string `yaml:"stderr_path,omitempty" json:"stderr_path,omitempty"`
	// Restart is systemd's Restart= word (no, always, on-success,
	// on-failure, on-abnormal, on-abort, on-watchdog); empty means
	// keep_alive decides (always or no). On launchd on-failure is KeepAlive
	// {SuccessfulExit: false}, on-success {SuccessfulExit: true} and
	// on-abort {Crashed: true}.
	Restart string `yaml:"restart,omitempty" json:"restart,omitempty"`
	// RestartSec is a systemd time span ("5", "500ms", "1min 30s"): systemd
	// RestartSec=, launchd ThrottleInterval (whole seconds).
	RestartSec string `yaml:"restart_sec,omitempty" json:"restart_sec,omitempty"`
	// StartLimitIntervalSec (a time span) and StartLimitBurst are systemd's
	// start limit ([Unit] StartLimitIntervalSec=, StartLimitBurst=).
	StartLimitIntervalSec string `yaml:"start_limit_interval_sec,omitempty" json:"start_limit_interval_sec,omitempty"`
	StartLimitBurst       *int   `yaml:"start_limit_burst,omitempty" json:"start_limit_burst,omitempty"`
	// Type is systemd Type= (simple, exec, forking, oneshot, dbus, notify,
	// notify-reload, idle); PIDFile is PIDFile=.
	Type    string `yaml:"type,omitempty" json:"type,omitempty"`
	PIDFile string `yaml:"pid_file,omitempty" json:"pid_file,omitempty"`
	// WatchdogSec is systemd WatchdogSec= (a time span): the service must
	// send WATCHDOG=1 within it or systemd kills it as hung (and Restart=
	// starts it again). A service sends it over the notify protocol, so it
	// usually comes with type notify. launchd has no watchdog.
	WatchdogSec string `yaml:"watchdog_sec,omitempty" json:"watchdog_sec,omitempty"`
	// ExpandEnv says the init system expands $NAME and ${NAME} in args from
	// the unit's environment ("$$" is then a literal '$'), as systemd does
	// in ExecStart=; false renders every '$' literally. systemd only.
	ExpandEnv bool `yaml:"expand_env,omitempty" json:"expand_env,omitempty"`
	// ExecStartPrefix is systemd's prefix of ExecStart= as written: '-'
	// (a failing exit is not a failure) and/or one of '+', '!', '!!'
	// (privileges), such as "-" or "!!".
	ExecStartPrefix string `yaml:"exec_start_prefix,omitempty" json:"exec_start_prefix,omitempty"`
	// ExecStartPre, ExecStartPost, ExecReload, ExecStop and ExecStopPost
	// hold systemd command lines as written, prefixes included.
	ExecStartPre  []string `yaml:"exec_start_pre,omitempty" json:"exec_start_pre,omitempty"`
	ExecStartPost []string `yaml:"exec_start_post,omitempty" json:"exec_start_post,omitempty"`
	ExecReload    []string `yaml:"exec_reload,omitempty" json:"exec_reload,omitempty"`
	ExecStop      []string `yaml:"exec_stop,omitempty" json:"exec_stop,omitempty"`
	ExecStopPost  []string `yaml:"exec_stop_post,omitempty" json:"exec_stop_post,omitempty"`
	// EnvironmentFiles are systemd EnvironmentFile= paths; a leading '-'
	// makes a file optional.
	EnvironmentFiles []string `yaml:"environment_files,omitempty" json:"environment_files,omitempty"`
	// After, Before, Wants and Requires are systemd's ordering and
	// requirement dependencies: unit names in the order written.
	After    []string `yaml:"after,omitempty" json:"after,omitempty"`
	Before   []string `yaml:"before,omitempty" json:"before,omitempty"`
	Wants    []string `yaml:"wants,omitempty" json:"wants,omitempty"`
	Requires []string `yaml:"requires,omitempty" json:"requires,omitempty"`
	// WantedBy and RequiredBy are the [Install] targets. With stado
	// defaults off and both empty the unit has no [Install] section.
	WantedBy   []string `yaml:"wanted_by,omitempty" json:"wanted_by,omitempty"`
	RequiredBy []string `yaml:"required_by,omitempty" json:"required_by,omitempty"`
	// Limits are resource limits by systemd's name without "Limit" (nofile,
	// nproc, core, memlock, ...): systemd LimitNOFILE=SOFT:HARD, launchd
	// SoftResourceLimits and HardResourceLimits.
	Limits map[string]Limit `yaml:"limits,omitempty" json:"limits,omitempty"`
	// Nice is systemd Nice=, launchd Nice (-20..19).
	Nice *int `yaml:"nice,omitempty" json:"nice,omitempty"`
	// ProcessType is launchd ProcessType (Background, Standard, Adaptive,
	// Interactive).
	ProcessType string `yaml:"process_type,omitempty" json:"process_type,omitempty"`
	// IOSchedulingClass is systemd IOSchedulingClass= (realtime,
	// best-effort, idle); on launchd, idle is LowPriorityIO true.
	// IOSchedulingPriority is IOSchedulingPriority= (0..7).
	IOSchedulingClass    string `yaml:"io_scheduling_class,omitempty" json:"io_scheduling_class,omitempty"`
	IOSchedulingPriority *int   `yaml:"io_scheduling_priority,omitempty" json:"io_scheduling_priority,omitempty"`
	// KillMode is systemd KillMode= (control-group, mixed, process, none).
	KillMode string `yaml:"kill_mode,omitempty" json:"kill_mode,omitempty"`
	// Delegate is systemd Delegate=: the service manages its own cgroup
	// subtree, so its children keep their cgroups across a restart.
	Delegate *bool `yaml:"delegate,omitempty" json:"delegate,omitempty"`
	// TimeoutStopSec is systemd TimeoutStopSec= (a time span); on launchd
	// ExitTimeOut (whole seconds).
	TimeoutStopSec string `yaml:"timeout_stop_sec,omitempty" json:"timeout_stop_sec,omitempty"`
	// AbandonProcessGroup is launchd AbandonProcessGroup: stopping the job
	// leaves the other processes of its group running.
	AbandonProcessGroup bool `yaml:"abandon_process_group,omitempty" json:"abandon_process_group,omitempty"`
	// SystemdKeys are systemd assignments kept verbatim, in order, rendered
	// after the keys of the fields above.
	SystemdKeys []UnitKey `yaml:"systemd_keys,omitempty" json:"systemd_keys,omitempty"`
	// LaunchdKeys are launchd keys kept verbatim: each value is the key's
	// property-list value as XML ("<true/>", "<array>...</array>").
	LaunchdKeys map[string]string `yaml:"launchd_keys,omitempty" json:"launchd_keys,omitempty"`
}

// Limit is one resource limit: each side a decimal number (systemd also
// takes a K, M, G, T, P or E suffix) or "infinity". systemd sets both sides;
// launchd may set either.
type Limit struct {
	Soft string `yaml:"soft,omitempty" json:"soft,omitempty"`
	Hard string `yaml:"hard,omitempty" json:"hard,omitempty"`
}

// UnitKey is one systemd assignment kept verbatim: Section is Unit, Service
// or Install, Key the directive and Value exactly as systemd reads it.
type UnitKey struct {
	Section string `yaml:"section" json:"section"`
	Key     string `yaml:"key" json:"key"`
	Value   string `yaml:"value" json:"value"`
}

// UsesStadoDefaults reports whether stado's defaults fill what the
// declaration leaves unset (StadoDefaults nil or true).
func (u UnitSettings) UsesStadoDefaults() bool { return u.StadoDefaults == nil || *u.StadoDefaults }

// SystemdKeyNames are the systemd directives the typed fields of
// UnitSettings (and program, args, env) render; a kept key may not be one
// of them, so each setting has one place in a declaration.
var SystemdKeyNames = map[string]string{
	"Description": "description", "WorkingDirectory": "working_directory", "User": "user", "Group": "group",
	"UMask": "umask", "Restart": "restart", "RestartSec": "restart_sec",
	"StartLimitIntervalSec": "start_limit_interval_sec", "StartLimitBurst": "start_limit_burst",
	"Type": "type", "PIDFile": "pid_file", "WatchdogSec": "watchdog_sec", "ExecStart": "program",
	"ExecStartPre": "exec_start_pre", "ExecStartPost": "exec_start_post", "ExecReload": "exec_reload",
	"ExecStop": "exec_stop", "ExecStopPost": "exec_stop_post", "EnvironmentFile": "environment_files",
	"Environment": "env", "After": "after", "Before": "before", "Wants": "wants", "Requires": "requires",
	"WantedBy": "wanted_by", "RequiredBy": "required_by", "Nice": "nice",
	"IOSchedulingClass": "io_scheduling_class", "IOSchedulingPriority": "io_scheduling_priority",
	"KillMode": "kill_mode", "Delegate": "delegate", "TimeoutStopSec": "timeout_stop_sec",
}

// LaunchdKeyNames are the launchd keys the typed fields render.
var LaunchdKeyNames = map[string]string{
	"Label": "unit", "Program": "program", "ProgramArguments": "program", "EnvironmentVariables": "env",
	"KeepAlive": "keep_alive", "WorkingDirectory": "working_directory", "UserName": "user",
	"GroupName": "group", "Umask": "umask", "StandardOutPath": "stdout_path",
	"StandardErrorPath": "stderr_path", "ThrottleInterval": "restart_sec", "Nice": "nice",
	"ProcessType": "process_type", "LowPriorityIO": "io_scheduling_class",
	"SoftResourceLimits": "limits", "HardResourceLimits": "limits", "ExitTimeOut": "timeout_stop_sec",
	"AbandonProcessGroup": "abandon_process_group",
}

// LimitNames maps a limit's name in a declaration to systemd's directive
// and launchd's resource-limit key ("" when launchd has none).
var LimitNames = map[string][2]string{
	"cpu": {"LimitCPU", "CPU"}, "fsize": {"LimitFSIZE", "FileSize"}, "data": {"LimitDATA", "Data"},
	"stack": {"LimitSTACK", "Stack"}, "core": {"LimitCORE", "Core"}, "rss": {"LimitRSS", "ResidentSetSize"},
	"nofile": {"LimitNOFILE", "NumberOfFiles"}, "as": {"LimitAS", ""}, "nproc": {"LimitNPROC", "NumberOfProcesses"},
	"memlock": {"LimitMEMLOCK", "MemoryLock"}, "locks": {"LimitLOCKS", ""}, "sigpending": {"LimitSIGPENDING", ""},
	"msgqueue": {"LimitMSGQUEUE", ""}, "nice": {"LimitNICE", ""}, "rtprio": {"LimitRTPRIO", ""}, "rttime": {"LimitRTTIME", ""},
}

// Under returns u with every setting it leaves unset taken from base: a
// field at its zero value gets base's, and a map (limits, launchd keys)
// gets base's entries for the keys u does not set. What u sets always
// wins, so a declaration may override a product's setting but never loses
// one by leaving it out. A plain boolean (expand_env,
// abandon_process_group) cannot say false explicitly, so base's true
// stays. The result shares nothing with u or base.
func (u UnitSettings) Under(base UnitSettings) UnitSettings {
	out := u.Clone()
	b := base.Clone()
	ov, bv := reflect.ValueOf(&out).Elem(), reflect.ValueOf(b)
	for i := range ov.NumField() {
		f, g := ov.Field(i), bv.Field(i)
		switch {
		case g.IsZero():
		case f.IsZero():
			f.Set(g)
		case f.Kind() == reflect.Map:
			iter := g.MapRange()
			for iter.Next() {
				if !f.MapIndex(iter.Key()).IsValid() {
					f.SetMapIndex(iter.Key(), iter.Value())
				}
			}
		}
	}
	return out
}

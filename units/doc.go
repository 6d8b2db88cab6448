// Package units turns a service declaration into the unit its init system
// runs, reads existing units back into declarations, and drives the init
// system on the host it runs on.
//
// It owns five things:
//
//   - rendering: a declaration.Service to a systemd unit (RenderSystemd) or a
//     launchd property list (RenderLaunchd), pure and byte-deterministic;
//   - parsing: a systemd unit with its drop-ins (ParseSystemd) or a property
//     list (ParsePlist) to a declaration, complete or incomplete with the
//     exact reason it cannot be represented;
//   - the Manager: install, remove, start, stop, restart, show and logs on
//     this host, over D-Bus for systemd and over launchctl for launchd,
//     for the system scope or a user's own manager (NewUserSystemd on the
//     manager's private socket, launchd's gui/<uid>; UserManagers keeps one
//     per user for the host process; docs/scopes.md);
//   - the Verdict: one vocabulary (active, inactive, missing, failed,
//     failing) for both init systems, including the crash-loop sentence;
//   - port owners: the PortReader of each init system, /proc and cgroups
//     under systemd (ProcPorts), lsof and the job's process tree under
//     launchd (LsofPorts, its parsers tested on recorded Mac outputs).
//
// units imports declaration (the service it renders or adopts, its unit
// grammar, and ValidateService, which checks a declaration before it is
// rendered and after it is parsed), registry (a target's SSH user, whose
// manager a user-scope unit belongs to, and ErrInvalid, which its field
// errors unwrap to), store (ErrNotFound, which a unit the manager has not
// loaded unwraps to), refusal (the codes of its refusals), safefile
// (atomic unit file writes) and catalog (the unit settings of the product a
// declaration names, which Render merges under the declaration's) and
// nothing else of stado. It must not import
// channel, beacon or repair: the read half (beacon) imports units, and the
// SSH channel wraps the local commands built on it, never the other way.
package units

// Package repair owns what a host does when a service stops answering: the
// answering probes asked on every beacon pass and their episodes, which
// repair steps and restart a standing question gets, the peer recovery of
// another host's standing service, and the alerts of incomplete
// declarations. It decides what to do; hosts do it.
//
// The pass runner of package beacon never calls repair by name: an
// *Answerer is a beacon.Contributor that `stado host run` hands to it.
// Steps and restarts reach a host only through a channel.Host (Reach): this
// machine's end (channel/local, whose StepRunner runs every step payload)
// for a host's own services, the SSH client's Host for a peer, and the
// target's Host for `stado repair --apply` — one code path (Reach.Recover,
// Reach.RunSteps) whichever host it is. HostProcess builds the answering and
// peer contributors of one host process from its store; StepPlan is what
// `stado repair` shows and, applied, runs.
//
// Alerts: the host process is the one place a target's command alert
// channels run, and only for its own target (alert.OnOwningHost: its own
// recoveries and incomplete declarations). A peer recovery alerts the
// serving host's channels alert.Elsewhere: webhooks are posted, command
// channels are recorded as not run.
//
// repair imports channel (the Host interface it acts through, and the
// Connector that reaches peers, which cli builds over the SSH client and
// package hostprocess hands to HostProcess, so repair never imports
// channel/sshclient),
// channel/local (this host's own end, built by HostProcess), register (the
// recovery record it appends and reads back), alert (the alerts of each
// attempt), beacon (the contributor interface and the blocks it fills),
// resolver (the waiting list peers are judged from), catalog, store, units,
// refusal and registry. It must not import cli, hostprocess, fleet,
// autonomy or desktop; nothing but cli (`stado repair`) and hostprocess
// (the host process's contributors) imports it, and no package imports it
// to alert or to read the register.
package repair

package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/channel"
)

func serviceReadCommands(env *Env) []*ucli.Command {
	return []*ucli.Command{
		newServiceListCommand(env),
		newServiceStatusCommand(env),
		newServiceRecoveriesCommand(env),
	}
}

func staleFlag() ucli.Flag {
	return &ucli.DurationFlag{Name: "stale-after", Usage: "distrust beacons older than this (default: each beacon's own bound, 3 × its interval)"}
}

// listOptions are the flags of service list.
type listOptions struct {
	Host       string
	Undeclared bool
	StaleAfter time.Duration
}

func newServiceListCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "list",
		Usage: "list declared services joined with the latest host beacons (no SSH)",
		UsageText: "stado service list [--host HOST] [--undeclared] [--stale-after DURATION] [--json]\n\n" +
			"A host whose beacon is older than its staleness bound reads unknown, never active.\n\n" +
			"example:\n   stado service list --host host2 --json",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "host", Usage: "only this host"},
			&ucli.BoolFlag{Name: "undeclared", Usage: "list loaded units that no declaration covers"},
			staleFlag(),
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return usagef("service list takes no arguments")
			}
			return runServiceList(c.Context, env, listOptions{Host: c.String("host"), Undeclared: c.Bool("undeclared"), StaleAfter: c.Duration("stale-after")})
		},
	}, true)
}

func loadView(ctx context.Context, env *Env, stale time.Duration) (*beacon.View, error) {
	st, err := openStore(ctx, env)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return beacon.LoadView(ctx, st, env.Now(), stale)
}

func runServiceList(ctx context.Context, env *Env, o listOptions) error {
	v, err := loadView(ctx, env, o.StaleAfter)
	if err != nil {
		return err
	}
	if o.Host != "" {
		if _, ok := v.Document.Target(o.Host); !ok && v.Beacons[o.Host] == nil {
			return refuse("not_found", "no host %q in the registry or the beacons", o.Host)
		}
	}
	var rows []beacon.Row
	kind := "stado.service.list"
	if o.Undeclared {
		rows, kind = v.Undeclared(o.Host), "stado.service.undeclared"
	} else {
		rows = v.Rows(o.Host)
	}
	if env.JSON {
		if rows == nil {
			rows = []beacon.Row{}
		}
		return printJSON(env, map[string]any{"kind": kind, "registry_revision": v.Meta.Revision, "at": v.Now.UTC(), "services": rows})
	}
	table := make([][]string, 0, len(rows))
	for _, r := range rows {
		table = append(table, []string{r.Host, r.Service, r.Unit, r.State, pidText(r.PID), rowDetail(r)})
	}
	header := []string{"HOST", "SERVICE", "UNIT", "STATE", "PID", "DETAIL"}
	if o.Undeclared {
		header[1] = "-"
	}
	printTable(env.Stdout, terminalWidth(env), header, table)
	return nil
}

func pidText(pid int) string {
	if pid == 0 {
		return "-"
	}
	return strconv.Itoa(pid)
}

// rowDetail says the one thing an operator should read next to the state.
func rowDetail(r beacon.Row) string {
	var parts []string
	if r.State == beacon.StateUnknown && r.Beacon.Reason != "" {
		parts = append(parts, r.Beacon.Reason)
	}
	if r.Incomplete {
		parts = append(parts, "declaration_incomplete")
	}
	if r.Sentence != "" {
		parts = append(parts, r.Sentence)
	} else if r.LastExit != nil && r.State == beacon.StateFailed {
		parts = append(parts, fmt.Sprintf("last exit %d", *r.LastExit))
	}
	if r.LastStderr != "" {
		parts = append(parts, "stderr: "+r.LastStderr)
	}
	if a := r.Answering; a != nil {
		parts = append(parts, answeringSummary(a))
	}
	return strings.Join(parts, "; ")
}

// answeringSummary is the one-line form of an answering block.
func answeringSummary(a *beacon.Answering) string {
	switch a.State {
	case beacon.AnswerUnreadable:
		return "answering unreadable: " + a.Unreadable
	case beacon.AnswerStood:
		s := fmt.Sprintf("answering stood %.0fs (bound %.0fs)", a.WaitedSeconds, a.BoundSeconds)
		if a.AlreadyAttempted {
			s += ", already_attempted"
		} else if len(a.Recovery) == 0 {
			s += ", no recovery recorded"
		}
		if a.RecordingRefusal != nil {
			s += ", recording_refusal: " + a.RecordingRefusal.Op + " " + a.RecordingRefusal.File + ": " + a.RecordingRefusal.Cause
		}
		return s
	case beacon.AnswerWaiting:
		return fmt.Sprintf("answering waiting %.0fs", a.WaitedSeconds)
	case beacon.AnswerFinished:
		if f := a.Finished; f != nil && f.Answered != nil {
			if f.Answered.Successful {
				return fmt.Sprintf("answered %d in %dms", f.Answered.Status, f.Answered.ElapsedMS)
			}
			return fmt.Sprintf("answered %d, not successful: %s", f.Answered.Status, f.Answered.Detail)
		} else if f != nil && f.Refused != nil {
			return "answering refused: " + f.Refused.Cause
		}
	}
	return "answering " + a.State
}

// statusOptions are the flags of service status.
type statusOptions struct {
	Name       string
	Host       string
	Lines      int
	StaleAfter time.Duration
	Dialer     *channel.Dialer
}

func newServiceStatusCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "status",
		Usage: "show one declared service's verdict from the beacons; --lines also reads its log over SSH",
		UsageText: "stado service status NAME [--host HOST] [--lines N] [--json]\n\n" +
			"Without --lines no connection is opened: the verdict, last exit and last stderr line come from the beacon.\n\n" +
			"example:\n   stado service status brama --host host2 --json",
		Flags: append([]ucli.Flag{
			&ucli.StringFlag{Name: "host", Usage: "the host (default: every host declaring it)"},
			&ucli.IntFlag{Name: "lines", Usage: "also read this many log lines over the host channel"},
			staleFlag(),
		}, sshFlags()...),
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return usagef("service status takes one NAME")
			}
			return runServiceStatus(c.Context, env, statusOptions{Name: c.Args().First(), Host: c.String("host"), Lines: c.Int("lines"), StaleAfter: c.Duration("stale-after"), Dialer: dialerFrom(c)})
		},
	}, true)
}

// statusEntry is one host's status of the service.
type statusEntry struct {
	beacon.Row
	Logs     []string `json:"logs,omitempty"`
	LogsRead string   `json:"logs_refusal,omitempty"`
	LogsHint string   `json:"logs_command,omitempty"`
}

func runServiceStatus(ctx context.Context, env *Env, o statusOptions) error {
	if o.Lines < 0 || o.Lines > 10000 {
		return usagef("--lines must be between 1 and 10000")
	}
	v, err := loadView(ctx, env, o.StaleAfter)
	if err != nil {
		return err
	}
	var entries []statusEntry
	for _, r := range v.Rows(o.Host) {
		if r.Service != o.Name && r.Unit != o.Name {
			continue
		}
		e := statusEntry{Row: r}
		e.LogsHint = fmt.Sprintf("stado service logs %s --host %s --lines 100", r.Service, r.Host)
		if o.Lines > 0 {
			lines, err := statusLogs(ctx, v, r, o)
			if err != nil {
				e.LogsRead = err.Error()
			} else {
				e.Logs = lines
			}
		}
		entries = append(entries, e)
	}
	if len(entries) == 0 {
		where := "any host"
		if o.Host != "" {
			where = o.Host
		}
		return &Refusal{Code: "not_found", Message: fmt.Sprintf("%s is not a registry-managed service on %s", o.Name, where),
			Hint: "stado service list --undeclared shows loaded units no declaration covers"}
	}
	if env.JSON {
		return printJSON(env, map[string]any{"kind": "stado.service.status", "service": o.Name, "hosts": entries})
	}
	for i, e := range entries {
		if i > 0 {
			fmt.Fprintln(env.Stdout)
		}
		printStatusText(env, e, o.Lines)
	}
	return nil
}

// statusLogs reads the --lines window of one row's unit.
func statusLogs(ctx context.Context, v *beacon.View, r beacon.Row, o statusOptions) ([]string, error) {
	t, ok := v.Document.Target(r.Host)
	if !ok {
		return nil, fmt.Errorf("no target %q in the registry", r.Host)
	}
	s, ok := t.Service(r.Service)
	if !ok {
		return nil, fmt.Errorf("no service %q on %s", r.Service, r.Host)
	}
	return readServiceLogs(ctx, o.Dialer, *t, *s, o.Lines)
}

func printStatusText(env *Env, e statusEntry, lines int) {
	w := env.Stdout
	fmt.Fprintf(w, "%s on %s (%s): %s\n", e.Service, e.Host, e.Unit, e.State)
	if e.State == beacon.StateUnknown {
		fmt.Fprintf(w, "  beacon: %s\n", e.Beacon.Reason)
	} else if e.Beacon.At != nil {
		fmt.Fprintf(w, "  beacon: pass %d, %.0fs old\n", e.Beacon.Pass, e.Beacon.AgeSeconds)
	}
	if e.PID != 0 {
		fmt.Fprintf(w, "  pid: %d\n", e.PID)
	}
	if e.Incomplete {
		fmt.Fprintln(w, "  declaration_incomplete: the declaration has no program; it cannot be reinstalled")
	}
	if e.Sentence != "" {
		fmt.Fprintf(w, "  %s\n", e.Sentence)
	}
	if e.LastExit != nil && (e.State == beacon.StateFailed || e.State == beacon.StateFailing) {
		fmt.Fprintf(w, "  last exit: %d\n", *e.LastExit)
	}
	if e.LastStderr != "" {
		fmt.Fprintf(w, "  last stderr: %s\n", e.LastStderr)
	}
	if a := e.Answering; a != nil {
		fmt.Fprintf(w, "  answering: %s\n", answeringSummary(a))
		if q := a.Question; q != nil {
			fmt.Fprintf(w, "    question: %s %s at %s, repair %v\n", q.Method, q.Path, q.Endpoint, q.Repair)
		}
		if len(a.Recovery) > 0 {
			fmt.Fprintf(w, "    recovery: %s\n", string(a.Recovery))
		}
	}
	switch {
	case lines > 0 && e.LogsRead != "":
		fmt.Fprintf(w, "  logs: could not be read: %s\n", e.LogsRead)
	case lines > 0:
		fmt.Fprintf(w, "  last %d log line(s):\n", len(e.Logs))
		for _, l := range e.Logs {
			fmt.Fprintf(w, "    %s\n", l)
		}
	case e.State == beacon.StateFailed || e.State == beacon.StateFailing:
		fmt.Fprintf(w, "  read its log: %s\n", e.LogsHint)
	}
}

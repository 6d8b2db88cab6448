package beacon

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coreos/go-systemd/v22/daemon"
)

// Notifier tells the service manager running the host process how its
// passes fare, over systemd's notify protocol (sd_notify(3), through
// go-systemd's daemon package): READY=1 once the first pass has ended,
// WATCHDOG=1 while the pass loop is alive, STATUS= with the last pass. The
// runner (Run) calls it only from its own loop, at the end of a pass and
// while it waits for the next one — never while a pass runs — so a pass
// that never ends (a store holding every read, a D-Bus call that never
// returns) stops the petting and systemd, after WatchdogSec=, kills and
// restarts the process. A nil *Notifier sends nothing. Not safe for
// concurrent use: one runner owns it.
type Notifier struct {
	// Watchdog is the interval systemd expects WATCHDOG=1 within
	// (WatchdogSec=, handed over as WATCHDOG_USEC); 0: no watchdog, so
	// nothing but READY=1 and STATUS= is sent.
	Watchdog time.Duration

	send   func(state string) error
	ready  bool
	failed bool // the last send failed (logged once until one succeeds)
}

// SystemdNotifier returns the notifier of this process as systemd started
// it: nil when there is no NOTIFY_SOCKET (not a Type=notify service, or
// not under systemd at all), and the watchdog interval from WATCHDOG_USEC
// when WATCHDOG_PID names this process (daemon.SdWatchdogEnabled). A
// malformed WATCHDOG_USEC is returned as an error beside a notifier
// without a watchdog. It reads the environment and leaves it as it is:
// children see NOTIFY_SOCKET, which systemd's NotifyAccess=main (the
// default of Type=notify) makes them unable to use, and WATCHDOG_PID,
// which does not name them.
func SystemdNotifier() (*Notifier, error) {
	if os.Getenv("NOTIFY_SOCKET") == "" {
		return nil, nil
	}
	n := &Notifier{send: func(state string) error {
		_, err := daemon.SdNotify(false, state)
		return err
	}}
	every, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		return n, fmt.Errorf("read the systemd watchdog: %w", err)
	}
	n.Watchdog = every
	return n, nil
}

// petEvery is how often the idle loop pets the watchdog: half its
// interval, as sd_watchdog_enabled(3) advises; 0 without a watchdog.
func (n *Notifier) petEvery() time.Duration {
	if n == nil || n.Watchdog <= 0 {
		return 0
	}
	return n.Watchdog / 2
}

// idle pets the watchdog while the loop waits between passes (and just
// before it starts one, so a pass has the whole WatchdogSec to end). Before
// the first pass has ended the process is not ready and sends nothing.
func (n *Notifier) idle(log *slog.Logger) {
	if n == nil || !n.ready || n.Watchdog <= 0 {
		return
	}
	n.notify(log, daemon.SdNotifyWatchdog)
}

// passEnded reports a pass that ended, published (err nil) or with its
// beacon's refusal kept for the next one: READY=1 the first time, WATCHDOG=1
// when there is a watchdog, and STATUS= naming the pass and its outcome.
func (n *Notifier) passEnded(log *slog.Logger, b *Beacon, err error) {
	if n == nil {
		return
	}
	var lines []string
	if !n.ready {
		lines = append(lines, daemon.SdNotifyReady)
		n.ready = true
	}
	if n.Watchdog > 0 {
		lines = append(lines, daemon.SdNotifyWatchdog)
	}
	lines = append(lines, "STATUS="+passStatus(b, err))
	n.notify(log, strings.Join(lines, "\n"))
}

// stopping says the loop is ending (STOPPING=1), so systemd neither waits
// for another WATCHDOG=1 nor reads the exit as a hang.
func (n *Notifier) stopping(log *slog.Logger) {
	if n == nil {
		return
	}
	n.notify(log, daemon.SdNotifyStopping+"\nSTATUS=stopping")
}

func (n *Notifier) notify(log *slog.Logger, state string) {
	err := n.send(state)
	switch {
	case err != nil && !n.failed:
		log.Warn("notify systemd", "err", err)
	case err == nil && n.failed:
		log.Info("notify systemd: delivered again")
	}
	n.failed = err != nil
}

// maxStatus bounds STATUS= to what `systemctl status` shows on a line.
const maxStatus = 200

// passStatus is the one line STATUS= carries about a pass.
func passStatus(b *Beacon, err error) string {
	var s string
	switch {
	case b == nil:
		s = fmt.Sprintf("pass ended without a beacon: %v", err)
	case err != nil:
		s = fmt.Sprintf("pass %d at %s: beacon not published (kept as a refusal for the next): %v", b.Pass, b.At.Format(time.TimeOnly), err)
	default:
		s = fmt.Sprintf("pass %d at %s: beacon published, %d units, %d refusals", b.Pass, b.At.Format(time.TimeOnly), len(b.Units), len(b.Refusals))
	}
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > maxStatus {
		cut := maxStatus
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

package testbed

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// TestShellQuoteRoundTripsThroughARealShell hands quoted words to /bin/sh and
// checks that the shell gives back exactly the original arguments.
func TestShellQuoteRoundTripsThroughARealShell(t *testing.T) {
	cases := []struct {
		name string
		argv []string
	}{
		// plain words stay plain
		{"plain", []string{"systemctl", "is-active", "ssh.service"}},
		// an embedded single quote is the case a naive quoter breaks on
		{"single quote", []string{"it's", "'", "''", "a'b'c"}},
		// expansions and command substitution must not run
		{"expansions", []string{"$HOME", "${PATH}", "`id`", "$(id)", "!x"}},
		// globs and separators stay literal
		{"globs and separators", []string{"*", "?", "[a]", ";", "&&", "|", ">", "<", "#"}},
		// whitespace, newlines and an empty argument keep their shape
		{"whitespace", []string{"a b", " lead", "trail ", "tab\there", "line1\nline2", ""}},
		// a leading dash is an argument, not an option of the shell
		{"dashes", []string{"-c", "--", "-"}},
		// backslashes and double quotes are literal inside single quotes
		{"backslashes", []string{`\`, `\\n`, `"q"`, `\'`}},
		// non-ASCII text passes through
		{"utf-8", []string{"zażółć", "日本"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmdline, err := remoteCommand(append([]string{"printf", `%s\0`}, c.argv...))
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("/bin/sh", "-c", cmdline).Output()
			if err != nil {
				t.Fatalf("sh -c %q: %v", cmdline, err)
			}
			got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
			if len(c.argv) == 0 {
				got = nil
			}
			if len(got) != len(c.argv) {
				t.Fatalf("shell gave %q, want %q", got, c.argv)
			}
			for i := range got {
				if got[i] != c.argv[i] {
					t.Errorf("argument %d: shell gave %q, want %q", i, got[i], c.argv[i])
				}
			}
		})
	}
}

// TestRemoteCommandRefusesWhatNoShellWordCarries covers the arguments that
// cannot be sent at all.
func TestRemoteCommandRefusesWhatNoShellWordCarries(t *testing.T) {
	// a NUL byte would silently cut the remote command short
	if _, err := remoteCommand([]string{"echo", "a\x00b"}); err == nil {
		t.Error("NUL byte accepted")
	}
	// no argv would open an interactive login shell
	if _, err := remoteCommand(nil); err == nil {
		t.Error("empty argv accepted")
	}
	// sanity: the quoted form of a quote is the classic escape
	if got := ShellQuote("a'b"); !bytes.Equal([]byte(got), []byte(`'a'\''b'`)) {
		t.Errorf("ShellQuote(a'b) = %s", got)
	}
}

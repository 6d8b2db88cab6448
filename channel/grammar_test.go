package channel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/wisent/stado/refusal"
)

func TestParseCommandAcceptsEveryVerbWithValidArguments(t *testing.T) {
	tests := []struct {
		name     string
		original string
		want     Command
	}{
		// a system unit installed into /etc/systemd/system under its own name
		{"install system unit", "unit-install system brama.service /etc/systemd/system/brama.service",
			Command{Verb: VerbUnitInstall, Scope: "system", Units: []string{"brama.service"}, Path: "/etc/systemd/system/brama.service"}},
		// a user unit below a home directory
		{"install user unit", "unit-install user web@1.service /home/op/.config/systemd/user/web@1.service",
			Command{Verb: VerbUnitInstall, Scope: "user", Units: []string{"web@1.service"}, Path: "/home/op/.config/systemd/user/web@1.service"}},
		// a launch daemon plist named after its label
		{"install launch daemon", "unit-install system com.wisent.stado /Library/LaunchDaemons/com.wisent.stado.plist",
			Command{Verb: VerbUnitInstall, Scope: "system", Units: []string{"com.wisent.stado"}, Path: "/Library/LaunchDaemons/com.wisent.stado.plist"}},
		// a launch agent in a user's Library
		{"remove launch agent", "unit-remove user com.wisent.brama-grant-sync /Users/op/Library/LaunchAgents/com.wisent.brama-grant-sync.plist",
			Command{Verb: VerbUnitRemove, Scope: "user", Units: []string{"com.wisent.brama-grant-sync"}, Path: "/Users/op/Library/LaunchAgents/com.wisent.brama-grant-sync.plist"}},
		// the program prefix a client sends is dropped
		{"program prefix", "/usr/local/bin/stado host channel unit-start system brama.service",
			Command{Verb: VerbUnitStart, Scope: "system", Units: []string{"brama.service"}}},
		// a bare program name is dropped too
		{"bare program prefix", "stado host channel version", Command{Verb: VerbVersion}},
		// quoted plain words mean the same as unquoted ones
		{"quoted words", "'unit-stop' 'system' 'brama.service'",
			Command{Verb: VerbUnitStop, Scope: "system", Units: []string{"brama.service"}}},
		// runs of spaces separate words, leading and trailing ones are ignored
		{"extra spaces", "  unit-restart   user  a.timer ", Command{Verb: VerbUnitRestart, Scope: "user", Units: []string{"a.timer"}}},
		// unit-show takes several units
		{"show several", "unit-show system a.service b.socket c.mount",
			Command{Verb: VerbUnitShow, Scope: "system", Units: []string{"a.service", "b.socket", "c.mount"}}},
		// the log window at its upper bound
		{"logs max lines", "unit-logs system a.service 10000", Command{Verb: VerbUnitLogs, Scope: "system", Units: []string{"a.service"}, Lines: 10000}},
		// the log window at its lower bound
		{"logs one line", "unit-logs user com.x.y 1", Command{Verb: VerbUnitLogs, Scope: "user", Units: []string{"com.x.y"}, Lines: 1}},
		{"env", "unit-env system a.service", Command{Verb: VerbUnitEnv, Scope: "system", Units: []string{"a.service"}}},
		{"list", "unit-list user", Command{Verb: VerbUnitList, Scope: "user"}},
		{"port lower bound", "port-owner 1", Command{Verb: VerbPortOwner, Port: 1}},
		{"port upper bound", "port-owner 65535", Command{Verb: VerbPortOwner, Port: 65535}},
		// a repair step without environment
		{"repair step bare", "repair-step audit-lock", Command{Verb: VerbRepairStep, Step: "audit-lock"}},
		// environment values may hold spaces and operators inside quotes: they are data
		{"repair step env", "repair-step crypto SKARBIEC_READY_WITHIN_SECONDS=30 'NOTE=a b;c' EMPTY=",
			Command{Verb: VerbRepairStep, Step: "crypto", Env: []EnvVar{{"SKARBIEC_READY_WITHIN_SECONDS", "30"}, {"NOTE", "a b;c"}, {"EMPTY", ""}}}},
		// a word may join plain and quoted segments
		{"joined segments", "repair-step crypto A='x y'z", Command{Verb: VerbRepairStep, Step: "crypto", Env: []EnvVar{{"A", "x yz"}}}},
		// a user unit acted on in the target's declared launchd domain
		{"restart in a gui domain", "unit-restart user com.x.agent launchd-domain=gui/501",
			Command{Verb: VerbUnitRestart, Scope: "user", Units: []string{"com.x.agent"}, Domain: "gui/501"}},
		{"stop in a user domain", "unit-stop user com.x.agent launchd-domain=user/501",
			Command{Verb: VerbUnitStop, Scope: "user", Units: []string{"com.x.agent"}, Domain: "user/501"}},
		{"start in the system domain", "unit-start user com.x.agent launchd-domain=system",
			Command{Verb: VerbUnitStart, Scope: "user", Units: []string{"com.x.agent"}, Domain: "system"}},
		// remove: the domain after the path, or without one
		{"remove with path and domain", "unit-remove user com.x.agent /Users/op/Library/LaunchAgents/com.x.agent.plist launchd-domain=gui/501",
			Command{Verb: VerbUnitRemove, Scope: "user", Units: []string{"com.x.agent"}, Path: "/Users/op/Library/LaunchAgents/com.x.agent.plist", Domain: "gui/501"}},
		{"remove with a domain only", "unit-remove user com.x.agent launchd-domain=gui/502",
			Command{Verb: VerbUnitRemove, Scope: "user", Units: []string{"com.x.agent"}, Domain: "gui/502"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseCommand(tt.original)
			if err != nil {
				t.Fatalf("ParseCommand(%q): %v", tt.original, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ParseCommand(%q)\n got %#v\nwant %#v", tt.original, got, tt.want)
			}
			// round trip: quoting the words gives back the same command
			q, err := Quote(got.Argv())
			if err != nil {
				t.Fatalf("Quote(%q): %v", got.Argv(), err)
			}
			again, err := ParseCommand(q)
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("round trip through %q: %#v, %v", q, again, err)
			}
			// and argv given directly parses the same
			direct, err := ParseArgv(got.Argv())
			if err != nil || !reflect.DeepEqual(direct, got) {
				t.Fatalf("ParseArgv(%q): %#v, %v", got.Argv(), direct, err)
			}
		})
	}
}

// refusedCommands is shared by the grammar table and the "runs nothing" test.
var refusedCommands = []struct {
	name     string
	original string
	code     refusal.Code
}{
	// a forced command opened without a command is not a login shell
	{"empty", "", CodeEmptyCommand},
	{"only spaces", "   ", CodeEmptyCommand},
	// the program prefix alone names no verb
	{"prefix only", "stado host channel", CodeEmptyCommand},
	// an ordinary program is not a verb
	{"id", "id", CodeUnknownVerb},
	// a shell is not a verb, with or without quoting
	{"sh -c", "sh -c 'touch /tmp/marker'", CodeUnknownVerb},
	{"bash", "bash", CodeUnknownVerb},
	// a command separator after a valid verb
	{"semicolon", "version; id", CodeForbiddenCharacter},
	{"semicolon spaced", "unit-start system a.service ; id", CodeForbiddenCharacter},
	{"pipe", "version | sh", CodeForbiddenCharacter},
	{"and", "version && id", CodeForbiddenCharacter},
	{"background", "version &", CodeForbiddenCharacter},
	// command substitution in both spellings
	{"dollar paren", "unit-show system $(id).service", CodeForbiddenCharacter},
	{"dollar var", "unit-show system $HOME", CodeForbiddenCharacter},
	{"backquote", "unit-show system `id`.service", CodeForbiddenCharacter},
	{"subshell", "(id)", CodeForbiddenCharacter},
	// redirections
	{"redirect out", "version > /tmp/x", CodeForbiddenCharacter},
	{"redirect in", "version < /etc/passwd", CodeForbiddenCharacter},
	// globs
	{"star", "unit-show system *.service", CodeForbiddenCharacter},
	{"question", "unit-show system a?.service", CodeForbiddenCharacter},
	// newline, tab, NUL anywhere, even inside quotes
	{"newline", "version\nid", CodeForbiddenCharacter},
	{"newline quoted", "repair-step crypto 'A=x\ny'", CodeForbiddenCharacter},
	{"nul", "version\x00", CodeForbiddenCharacter},
	{"tab separator", "unit-list\tsystem", CodeForbiddenCharacter},
	// double quotes and backslashes are not part of the grammar
	{"double quote", `unit-list "system"`, CodeForbiddenCharacter},
	{"backslash", `unit-list sys\tem`, CodeForbiddenCharacter},
	{"tilde", "unit-install user a.service ~/.config/systemd/user/a.service", CodeForbiddenCharacter},
	{"non-ascii unquoted", "unit-list systém", CodeForbiddenCharacter},
	{"invalid utf-8", "unit-list '\xff'", CodeForbiddenCharacter},
	// a quote opened and never closed
	{"unbalanced", "unit-list 'system", CodeUnbalancedQuote},
	{"unbalanced late", "unit-show system a.service 'b", CodeUnbalancedQuote},
	// path traversal, quoted or not
	{"dotdot", "unit-install system a.service /etc/systemd/system/../../root/a.service", CodePathTraversal},
	{"dotdot quoted", "unit-remove system a.service '/etc/systemd/system/../a.service'", CodePathTraversal},
	{"dotdot env", "repair-step crypto DIR=../etc", CodePathTraversal},
	// verbs outside the closed set
	{"unknown verb", "unit-delete system a.service", CodeUnknownVerb},
	{"verb case", "VERSION", CodeUnknownVerb},
	// argument counts
	{"version extra", "version now", CodeInvalidArguments},
	{"start missing unit", "unit-start system", CodeInvalidArguments},
	{"start too many", "unit-start system a.service b.service", CodeInvalidArguments},
	{"install missing unit", "unit-install system", CodeInvalidArguments},
	{"show no units", "unit-show system", CodeInvalidArguments},
	{"show too many", "unit-show system" + strings.Repeat(" a.service", MaxShowUnits+1), CodeInvalidArguments},
	{"logs missing lines", "unit-logs system a.service", CodeInvalidArguments},
	// scope outside its set
	{"bad scope", "unit-start global a.service", CodeInvalidScope},
	// unit names outside the grammar
	{"no suffix", "unit-start system brama", CodeInvalidUnit},
	{"leading dash", "unit-start system -a.service", CodeInvalidUnit},
	{"leading dash option", "unit-start system --now", CodeInvalidUnit},
	{"trailing dot", "unit-start system a.service.", CodeInvalidUnit},
	{"single component", "unit-start system com", CodeInvalidUnit},
	{"quoted space in unit", "unit-start system 'a b.service'", CodeInvalidUnit},
	{"quoted operator in unit", "unit-start system 'a;id.service'", CodeInvalidUnit},
	{"slash in unit", "unit-start system a/b.service", CodeInvalidUnit},
	{"too long unit", "unit-start system " + strings.Repeat("a", 250) + ".service", CodeInvalidUnit},
	// bad log windows
	{"zero lines", "unit-logs system a.service 0", CodeInvalidLines},
	{"too many lines", "unit-logs system a.service 10001", CodeInvalidLines},
	{"negative lines", "unit-logs system a.service -5", CodeInvalidLines},
	{"leading zero lines", "unit-logs system a.service 010", CodeInvalidLines},
	{"word lines", "unit-logs system a.service all", CodeInvalidLines},
	// bad ports
	{"zero port", "port-owner 0", CodeInvalidPort},
	{"big port", "port-owner 65536", CodeInvalidPort},
	{"hex port", "port-owner 0x50", CodeInvalidPort},
	// paths outside the allowed directories or not named after the unit
	{"path elsewhere", "unit-install system a.service /etc/a.service", CodeInvalidPath},
	{"path wrong base", "unit-install system a.service /etc/systemd/system/b.service", CodeInvalidPath},
	{"path nested", "unit-install system a.service /etc/systemd/system/x/a.service", CodeInvalidPath},
	{"path relative", "unit-install system a.service etc/systemd/system/a.service", CodeInvalidPath},
	{"path unclean", "unit-install system a.service /etc/systemd//system/a.service", CodeInvalidPath},
	{"path dot segment", "unit-install system a.service /etc/systemd/./system/a.service", CodeInvalidPath},
	{"path scope mismatch", "unit-install user a.service /etc/systemd/system/a.service", CodeInvalidPath},
	{"user path no home", "unit-install user a.service /.config/systemd/user/a.service", CodeInvalidPath},
	{"plist without suffix", "unit-install system com.x.y /Library/LaunchDaemons/com.x.y", CodeInvalidPath},
	{"path quoted space", "unit-install user a.service '/home/a b/.config/systemd/user/a.service'", CodeInvalidPath},
	// repair step names and environment
	{"step upper", "repair-step Crypto", CodeInvalidStep},
	{"step path", "repair-step /bin/sh", CodeInvalidStep},
	{"step missing", "repair-step", CodeInvalidArguments},
	{"env not pair", "repair-step crypto VALUE", CodeInvalidEnv},
	{"env name with a digit first", "repair-step crypto 1PATH=/x", CodeInvalidEnv},
	{"env loader", "repair-step crypto LD_PRELOAD=/tmp/x.so", CodeInvalidEnv},
	{"env path", "repair-step crypto PATH=/tmp", CodeInvalidEnv},
	{"env twice", "repair-step crypto A=1 A=2", CodeInvalidEnv},
	// launchd domains: only the registry's grammar, only for a user unit,
	// only on the unit verbs that act, at most once, last
	{"domain not in the grammar", "unit-restart user com.x.agent launchd-domain=login/501", CodeInvalidScope},
	{"domain gui without uid", "unit-restart user com.x.agent launchd-domain=gui/", CodeInvalidScope},
	{"domain gui with a name", "unit-stop user com.x.agent launchd-domain=gui/me", CodeInvalidScope},
	{"domain empty", "unit-stop user com.x.agent launchd-domain=", CodeInvalidScope},
	{"domain for a system unit", "unit-restart system com.x.daemon launchd-domain=gui/501", CodeInvalidScope},
	{"domain traversal", "unit-restart user com.x.agent launchd-domain=gui/../0", CodePathTraversal},
	{"domain twice", "unit-restart user com.x.agent launchd-domain=gui/501 launchd-domain=gui/502", CodeInvalidArguments},
	{"domain before the path", "unit-remove user com.x.agent launchd-domain=gui/501 /Users/op/Library/LaunchAgents/com.x.agent.plist", CodeInvalidArguments},
	{"domain on a read verb", "unit-logs user com.x.agent 10 launchd-domain=gui/501", CodeInvalidArguments},
	{"bare domain word", "unit-restart user com.x.agent gui/501", CodeInvalidArguments},
	// bounds of the whole line
	{"too many words", "unit-show system" + strings.Repeat(" a.service", MaxWords), CodeTooLong},
	{"too long", "version " + strings.Repeat("a", MaxCommandBytes), CodeTooLong},
}

func TestParseCommandRefusesEverythingOutsideTheGrammar(t *testing.T) {
	for _, tt := range refusedCommands {
		t.Run(tt.name, func(t *testing.T) {
			cmd, err := ParseCommand(tt.original)
			var r *Refusal
			if !errors.As(err, &r) {
				t.Fatalf("ParseCommand(%q) = %#v, %v; want a refusal %s", tt.original, cmd, err, tt.code)
			}
			if r.Code != tt.code {
				t.Fatalf("ParseCommand(%q) refused with %s (%s); want %s", tt.original, r.Code, r.Message, tt.code)
			}
			if r.Message == "" {
				t.Fatal("refusal has no message")
			}
		})
	}
}

func TestServeOfARefusedCommandRunsNothingAndPrintsOneRefusal(t *testing.T) {
	for _, tt := range refusedCommands {
		t.Run(tt.name, func(t *testing.T) {
			host := &recordingHost{}
			var stdout, stderr bytes.Buffer
			code := Serve(context.Background(), tt.original, strings.NewReader("[Unit]\n"), &stdout, &stderr, host)
			if code != ExitRefused {
				t.Fatalf("exit %d, want %d; stdout %s", code, ExitRefused, stdout.String())
			}
			if calls := host.Calls(); len(calls) != 0 {
				t.Fatalf("a refused command reached the host: %+v", calls)
			}
			doc := decodeOne[RefusalDocument](t, stdout.Bytes())
			if doc.Kind != KindRefusal || doc.Code != string(tt.code) || doc.Protocol != ProtocolVersion {
				t.Fatalf("refusal document %+v, want kind %s code %s", doc, KindRefusal, tt.code)
			}
		})
	}
}

// decodeOne decodes stdout as exactly one JSON document.
func decodeOne[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one document: %q", b)
	}
	return v
}

func TestServeCallsTheHostOnceWithTheValidatedArguments(t *testing.T) {
	tests := []struct {
		name     string
		original string
		stdin    string
		want     hostCall
	}{
		// the unit content is read from stdin and handed over whole
		{"install", "unit-install system a.service /etc/systemd/system/a.service", "[Unit]\nDescription=a\n",
			hostCall{Method: "UnitInstall", Scope: "system", Units: []string{"a.service"}, Path: "/etc/systemd/system/a.service", Content: "[Unit]\nDescription=a\n"}},
		{"remove", "unit-remove system a.service /etc/systemd/system/a.service", "",
			hostCall{Method: "UnitRemove", Scope: "system", Units: []string{"a.service"}, Path: "/etc/systemd/system/a.service"}},
		{"start", "unit-start user a.service", "", hostCall{Method: "UnitStart", Scope: "user", Units: []string{"a.service"}}},
		{"stop", "unit-stop system a.service", "", hostCall{Method: "UnitStop", Scope: "system", Units: []string{"a.service"}}},
		{"restart", "unit-restart system a.service", "", hostCall{Method: "UnitRestart", Scope: "system", Units: []string{"a.service"}}},
		{"show", "unit-show system a.service b.service", "", hostCall{Method: "UnitShow", Scope: "system", Units: []string{"a.service", "b.service"}}},
		{"logs", "unit-logs system a.service 200", "", hostCall{Method: "UnitLogs", Scope: "system", Units: []string{"a.service"}, Lines: 200}},
		{"env", "unit-env system a.service", "", hostCall{Method: "UnitEnv", Scope: "system", Units: []string{"a.service"}}},
		{"list", "unit-list system", "", hostCall{Method: "UnitList", Scope: "system"}},
		{"port", "port-owner 8080", "", hostCall{Method: "PortOwner", Port: 8080}},
		{"repair", "repair-step crypto SKARBIEC_READY_WITHIN_SECONDS=30", "",
			hostCall{Method: "RepairStep", Step: "crypto", Env: map[string]string{"SKARBIEC_READY_WITHIN_SECONDS": "30"}}},
		{"version", "version", "", hostCall{Method: "Version"}},
		{"unit-file", "unit-file user a.service", "", hostCall{Method: "UnitFile", Scope: "user", Units: []string{"a.service"}}},
		{"remove without a path", "unit-remove system a.service", "", hostCall{Method: "UnitRemove", Scope: "system", Units: []string{"a.service"}}},
		// the declaration travels on stdin and must agree with the words
		{"ensure", "ensure system a.service plan", `{"os":"linux","service":{"name":"a","unit":"a.service","program":"/bin/a"},"settle":1000000000,"wait":0,"mode":"plan"}`,
			hostCall{Method: "Ensure", Scope: "system", Units: []string{"a.service"}, Content: "plan"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host := &recordingHost{}
			var stdout, stderr bytes.Buffer
			code := Serve(context.Background(), tt.original, strings.NewReader(tt.stdin), &stdout, &stderr, host)
			if code != ExitOK {
				t.Fatalf("exit %d; stdout %s stderr %s", code, stdout.String(), stderr.String())
			}
			calls := host.Calls()
			if len(calls) != 1 || !reflect.DeepEqual(calls[0], tt.want) {
				t.Fatalf("host calls %+v, want exactly %+v", calls, tt.want)
			}
			doc := decodeOne[ResultDocument](t, stdout.Bytes())
			if doc.Kind != KindResult || string(doc.Verb) != strings.Fields(tt.original)[0] {
				t.Fatalf("result document %+v", doc)
			}
			if stderr.Len() != 0 {
				t.Fatalf("stderr on success: %q", stderr.String())
			}
		})
	}
}

func TestServeRefusesAnEnsureRequestThatDisagreesWithItsWords(t *testing.T) {
	for _, tc := range []struct {
		name, original, stdin string
		code                  refusal.Code
	}{
		// another unit in the document than on the line
		{"unit", "ensure system a.service apply", `{"service":{"name":"b","unit":"b.service","program":"/bin/b"},"mode":"apply"}`, refusal.InvalidUnit},
		// another scope
		{"scope", "ensure system a.service apply", `{"service":{"name":"a","unit":"a.service","scope":"user","program":"/bin/a"},"mode":"apply"}`, refusal.InvalidScope},
		// another mode
		{"mode", "ensure system a.service apply", `{"service":{"name":"a","unit":"a.service","program":"/bin/a"},"mode":"plan"}`, refusal.InvalidArguments},
		// a settle beyond its bound
		{"settle", "ensure system a.service apply", `{"service":{"name":"a","unit":"a.service","program":"/bin/a"},"mode":"apply","settle":999999999999999}`, refusal.InvalidDuration},
		// a field the request does not have
		{"unknown field", "ensure system a.service apply", `{"service":{"name":"a","unit":"a.service"},"mode":"apply","shell":"sh"}`, refusal.InvalidContent},
		// a unit path outside the unit directories
		{"path", "ensure system a.service apply", `{"service":{"name":"a","unit":"a.service","unit_path":"/tmp/a.service","program":"/bin/a"},"mode":"apply"}`, refusal.InvalidPath},
		// a serving read of no port, or of one past 65535
		{"serving port 0", "ensure system a.service apply", `{"service":{"name":"a","unit":"a.service","program":"/bin/a"},"mode":"apply","serving":{"port":0}}`, refusal.InvalidPort},
		{"serving port 70000", "ensure system a.service apply", `{"service":{"name":"a","unit":"a.service","program":"/bin/a"},"mode":"apply","serving":{"port":70000,"address":"127.0.0.1"}}`, refusal.InvalidPort},
		// nothing on stdin
		{"empty", "ensure system a.service apply", "", refusal.InvalidContent},
		// a mode that is neither
		{"bad mode", "ensure system a.service now", "{}", refusal.InvalidArguments},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := &recordingHost{}
			var stdout, stderr bytes.Buffer
			code := Serve(context.Background(), tc.original, strings.NewReader(tc.stdin), &stdout, &stderr, host)
			if code != ExitRefused || len(host.Calls()) != 0 {
				t.Fatalf("exit %d, calls %+v", code, host.Calls())
			}
			if doc := decodeOne[RefusalDocument](t, stdout.Bytes()); doc.Code != string(tc.code) {
				t.Fatalf("code %s, want %s: %s", doc.Code, tc.code, doc.Message)
			}
		})
	}
}

func TestServeRefusesUnitInstallContentOutsideItsBounds(t *testing.T) {
	tests := []struct {
		name  string
		stdin string
		code  refusal.Code
	}{
		// nothing on stdin: nothing to install
		{"empty", "", CodeInvalidContent},
		// one byte above the bound
		{"too large", strings.Repeat("x", MaxUnitBytes+1), CodeContentTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host := &recordingHost{}
			var stdout, stderr bytes.Buffer
			code := Serve(context.Background(), "unit-install system a.service /etc/systemd/system/a.service", strings.NewReader(tt.stdin), &stdout, &stderr, host)
			if code != ExitRefused || len(host.Calls()) != 0 {
				t.Fatalf("exit %d, calls %+v", code, host.Calls())
			}
			if doc := decodeOne[RefusalDocument](t, stdout.Bytes()); doc.Code != string(tt.code) {
				t.Fatalf("code %s, want %s", doc.Code, tt.code)
			}
		})
	}
}

func TestServeRefusesUnitsOfTheOtherInitSystem(t *testing.T) {
	tests := []struct {
		name     string
		os       string
		original string
		code     refusal.Code
	}{
		// a launchd label on a systemd host
		{"label on linux", "linux", "unit-start system com.wisent.stado", CodeInvalidUnit},
		// a suffix systemd does not know, which only a label grammar accepts
		{"device on linux", "linux", "unit-start system a.device", CodeInvalidUnit},
		// a systemd instance unit on a launchd host ('@' is no label character)
		{"unit on darwin", "darwin", "unit-start system web@1.service", CodeInvalidUnit},
		// a plist path on linux even though the label is also a valid unit name
		{"plist path on linux", "linux", "unit-install system a.service /Library/LaunchDaemons/a.service.plist", CodeInvalidPath},
		// a systemd path on darwin, with a unit name that is also a label
		{"systemd path on darwin", "darwin", "unit-remove system com.x.service /etc/systemd/system/com.x.service", CodeInvalidPath},
		// a launchd domain on a systemd host
		{"launchd domain on linux", "linux", "unit-restart user a.service launchd-domain=gui/501", CodeInvalidScope},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host := &recordingHost{os: tt.os}
			var stdout, stderr bytes.Buffer
			code := Serve(context.Background(), tt.original, strings.NewReader("x"), &stdout, &stderr, host)
			if code != ExitRefused || len(host.Calls()) != 0 {
				t.Fatalf("exit %d, calls %+v", code, host.Calls())
			}
			if doc := decodeOne[RefusalDocument](t, stdout.Bytes()); doc.Code != string(tt.code) {
				t.Fatalf("code %s (%s), want %s", doc.Code, doc.Message, tt.code)
			}
		})
	}
}

func TestServeReportsAHostFailureAsOneErrorDocumentWithExit1(t *testing.T) {
	host := &recordingHost{err: errHostBroken}
	var stdout, stderr bytes.Buffer
	code := Serve(context.Background(), "unit-restart system a.service", nil, &stdout, &stderr, host)
	if code != ExitFailure {
		t.Fatalf("exit %d, want %d", code, ExitFailure)
	}
	doc := decodeOne[ErrorDocument](t, stdout.Bytes())
	if doc.Kind != KindError || doc.Message != errHostBroken.Error() || doc.Verb != VerbUnitRestart {
		t.Fatalf("error document %+v", doc)
	}
	if !strings.Contains(stderr.String(), errHostBroken.Error()) {
		t.Fatalf("stderr %q does not carry the cause", stderr.String())
	}
}

func TestServeReportsAHostRefusalWithItsCode(t *testing.T) {
	host := &recordingHost{err: notLoaded{"a.service"}}
	var stdout, stderr bytes.Buffer
	code := Serve(context.Background(), "unit-show system a.service", nil, &stdout, &stderr, host)
	if code != ExitRefused {
		t.Fatalf("exit %d, want %d", code, ExitRefused)
	}
	if doc := decodeOne[RefusalDocument](t, stdout.Bytes()); doc.Code != "not_found" || doc.Verb != VerbUnitShow {
		t.Fatalf("refusal document %+v", doc)
	}
}

func TestMainServesArgvOrTheOriginalCommandAndNeverALoginShell(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	tests := []struct {
		name   string
		args   []string
		env    map[string]string
		exit   int
		method string
	}{
		// run directly with a verb
		{"argv", []string{"unit-list", "system"}, nil, ExitOK, "UnitList"},
		// run as the forced command: the client's request is in the environment
		{"forced", nil, map[string]string{"SSH_ORIGINAL_COMMAND": "unit-start system a.service"}, ExitOK, "UnitStart"},
		// a forced command opened for a login: nothing to run
		{"login", nil, nil, ExitRefused, ""},
		// argv is held to the same word rules as a quoted line
		{"argv traversal", []string{"unit-remove", "system", "a.service", "/etc/systemd/system/../a.service"}, nil, ExitRefused, ""},
		{"argv newline", []string{"repair-step", "crypto", "A=1\nB=2"}, nil, ExitRefused, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host := &recordingHost{}
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), tt.args, env(tt.env), nil, &stdout, &stderr, host)
			if code != tt.exit {
				t.Fatalf("exit %d, want %d: %s", code, tt.exit, stdout.String())
			}
			calls := host.Calls()
			if tt.method == "" && len(calls) != 0 || tt.method != "" && (len(calls) != 1 || calls[0].Method != tt.method) {
				t.Fatalf("calls %+v, want %q", calls, tt.method)
			}
		})
	}
}

func TestQuoteRefusesWordsTheGrammarCannotCarry(t *testing.T) {
	tests := []struct {
		name string
		argv []string
	}{
		// nothing to send
		{"empty argv", nil},
		// a single quote cannot be written inside single quotes
		{"single quote", []string{"repair-step", "crypto", "A=it's"}},
		// control bytes are refused on both sides
		{"newline", []string{"version\n"}},
		{"nul", []string{"a\x00b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if q, err := Quote(tt.argv); err == nil {
				t.Fatalf("Quote(%q) = %q, want a refusal", tt.argv, q)
			}
		})
	}
}

func TestQuoteRoundTripsEveryAcceptedArgv(t *testing.T) {
	argvs := [][]string{
		{"version"},
		{"unit-show", "system", "a.service", "b@x.service"},
		{"repair-step", "crypto", "A=", "B=x y", "C=;|&$`()<>*?", "D=naïve", "E=\"\\"},
		{"unit-install", "user", "com.x.y", "/Users/o/Library/LaunchAgents/com.x.y.plist"},
		{"/usr/local/bin/stado", "host", "channel", "unit-logs", "system", "a.service", "50"},
	}
	for _, argv := range argvs {
		q, err := Quote(argv)
		if err != nil {
			t.Fatalf("Quote(%q): %v", argv, err)
		}
		words, err := splitWords(q)
		if err != nil || !reflect.DeepEqual(words, argv) {
			t.Fatalf("splitWords(Quote(%q)) = %q, %v via %q", argv, words, err, q)
		}
		if _, err := ParseCommand(q); err != nil {
			t.Fatalf("ParseCommand(%q): %v", q, err)
		}
	}
}

func TestServeRefusesDataAfterTheRequestDocument(t *testing.T) {
	const ensure = `{"os":"linux","service":{"name":"a","unit":"a.service","program":"/bin/a"},"mode":"apply"}`
	const verify = `{"os":"linux","services":[{"service":{"name":"a","unit":"a.service","program":"/bin/a"}}]}`
	for _, tc := range []struct {
		name, original, stdin string
		// named is what the refusal quotes of the trailing data; empty
		// when the body is accepted
		named string
	}{
		// a second ensure document, as a smuggled second request would be
		{"ensure, second document", "ensure system a.service apply", ensure + "\n" + ensure, `"{\"os\":\"linux\",\"service`},
		// a second document with no separator
		{"ensure, glued document", "ensure system a.service apply", ensure + `{"mode":"plan"}`, `"{\"mode\":\"plan\"}"`},
		// one stray byte
		{"ensure, stray byte", "ensure system a.service apply", ensure + " x", `"x"`},
		// a NUL is not whitespace
		{"ensure, NUL", "ensure system a.service apply", ensure + "\x00", `"\x00"`},
		// a vertical tab is whitespace to Go, not to JSON
		{"ensure, vertical tab", "ensure system a.service apply", ensure + "\v", `"\v"`},
		// a scalar after the document
		{"ensure, number", "ensure system a.service apply", ensure + "\n1\n", `"1\n"`},
		// verify reads its request the same way
		{"verify, second document", "verify", verify + verify, `"{\"os\":\"linux\",\"service`},
		{"verify, stray bracket", "verify", verify + "\n]", `"]"`},
		// JSON whitespace after the document is not data
		{"ensure, trailing whitespace", "ensure system a.service apply", ensure + " \t\r\n\n", ""},
		{"verify, trailing newline", "verify", verify + "\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := &recordingHost{}
			var stdout, stderr bytes.Buffer
			code := Serve(context.Background(), tc.original, strings.NewReader(tc.stdin), &stdout, &stderr, host)
			if tc.named == "" {
				if code != ExitOK || len(host.Calls()) != 1 {
					t.Fatalf("exit %d, calls %+v: %s", code, host.Calls(), stdout.String())
				}
				return
			}
			if code != ExitRefused || len(host.Calls()) != 0 {
				t.Fatalf("exit %d, calls %+v; want a refusal before the host is called", code, host.Calls())
			}
			doc := decodeOne[RefusalDocument](t, stdout.Bytes())
			if doc.Code != string(refusal.InvalidContent) {
				t.Fatalf("code %s, want %s: %s", doc.Code, refusal.InvalidContent, doc.Message)
			}
			if !strings.Contains(doc.Message, "after its document") || !strings.Contains(doc.Message, tc.named) {
				t.Fatalf("refusal %q does not name the trailing data %s", doc.Message, tc.named)
			}
		})
	}
}

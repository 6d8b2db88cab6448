package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/channel/channeltest"
	"github.com/wisent/stado/fleet"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// writeStore holds a registry document in a fresh file store and returns
// its directory.
func writeStore(t *testing.T, doc string) string {
	t.Helper()
	dir := t.TempDir()
	st, err := store.OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d, err := registry.Parse([]byte(doc), "fixture.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := registry.Push(context.Background(), st, d, 0, "fixture"); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A closed loopback port: nothing is listening, so any connection fails at
// once. The write commands under test must refuse before dialing anyway.
const fixtureDoc = `version: 1
targets:
  - name: host1
    os: linux
    ssh: {address: 127.0.0.1, port: 1}
    services:
      - name: api
        unit: api.service
        program: /usr/local/bin/api
        args: [--listen, "127.0.0.1:8080"]
        env: {API_TOKEN: s3cret-value}
      - name: legacy
        unit: legacy.service
        unit_path: /etc/systemd/system/legacy.service
        incomplete_reason: legacy.service has 2 ExecStart= lines
  - name: host2
    os: linux
    ssh: {address: 127.0.0.1, port: 1}
`

func decodeJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("not one JSON document: %v\n%s", err, s)
	}
	return m
}

func TestServiceRemoveWithdrawsTheDeclarationAndARepeatIsNotFound(t *testing.T) {
	dir := writeStore(t, fixtureDoc)
	code, out, errOut := runRegistryCLI(t, dir, "service", "remove", "api", "--host", "host1", "--reason", "api moved", "--json")
	if code != ExitOK {
		t.Fatalf("first remove: exit %d: %s", code, errOut)
	}
	doc := decodeJSON(t, out)
	if doc["kind"] != "stado.service.remove" || doc["registry_revision"].(float64) != 2 {
		t.Errorf("first remove printed %v", doc)
	}
	// the masked env never carries the value
	if strings.Contains(out, "s3cret") {
		t.Errorf("remove printed a secret value: %s", out)
	}
	st, _ := store.OpenFileStore(dir)
	d, meta, err := registry.Load(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Reason != "api moved" {
		t.Errorf("revision reason %q, want the --reason text", meta.Reason)
	}
	if tg, _ := d.Target("host1"); len(tg.Services) != 1 || tg.Services[0].Name != "legacy" {
		t.Errorf("host1 services after remove: %+v", tg.Services)
	}
	code, out, errOut = runRegistryCLI(t, dir, "service", "remove", "api", "--host", "host1", "--json")
	if code != ExitRefused {
		t.Fatalf("second remove: exit %d, want %d (stderr %s)", code, ExitRefused, errOut)
	}
	if e := decodeJSON(t, errOut); e["code"] != "not_found" || !strings.Contains(e["message"].(string), "not a registry-managed service on host1") {
		t.Errorf("second remove error %v", e)
	}
	if out != "" {
		t.Errorf("a refused remove printed on stdout: %q", out)
	}
	if got := storeRevision(t, dir); got != 2 {
		t.Errorf("revision after the refused remove %d, want 2 (nothing written)", got)
	}
}

func TestServiceRemoveDryRunChangesNothing(t *testing.T) {
	dir := writeStore(t, fixtureDoc)
	code, out, errOut := runRegistryCLI(t, dir, "service", "remove", "api", "--host", "host1", "--dry-run")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "would withdraw declaration api from host1") {
		t.Errorf("dry run printed %q", out)
	}
	if got := storeRevision(t, dir); got != 1 {
		t.Errorf("revision %d after a dry run, want 1", got)
	}
}

func TestWriteCommandsRefuseBeforeConnecting(t *testing.T) {
	dir := writeStore(t, fixtureDoc)
	for _, tc := range []struct {
		name string
		args []string
		code string
		msg  string
	}{
		// a path-only declaration cannot be rendered
		{"ensure incomplete", []string{"service", "ensure", "legacy", "--host", "host1"}, "declaration_incomplete", "declares no program"},
		// neither declared on host2 nor a catalog product
		{"ensure unknown", []string{"service", "ensure", "api", "--host", "host2"}, "not_found", "neither declared on host2 nor a catalog product"},
		// a target the registry does not have
		{"ensure unknown host", []string{"service", "ensure", "api", "--host", "host9"}, "not_found", `no target "host9"`},
		// logs of an exact unit name that no declaration covers
		{"logs undeclared", []string{"service", "logs", "sshd.service", "--host", "host1"}, "not_found", "sshd.service is not a registry-managed service on host1"},
		// restart on a host that does not declare it
		{"restart undeclared host", []string{"service", "restart", "api", "--host", "host2"}, "not_found", "api is not a registry-managed service on host2"},
		// retire needs a declaration
		{"retire undeclared", []string{"service", "retire", "other.service", "--host", "host1"}, "not_found", "not a registry-managed service on host1"},
		// converge needs a placement to converge to
		{"converge undeclared", []string{"service", "converge", "other"}, "not_found", "there is no placement to converge to"},
		// env needs a declaration
		{"env undeclared", []string{"service", "env", "other", "--host", "host1"}, "not_found", "not a registry-managed service on host1"},
		// adopt of a unit that is declared already
		{"adopt declared", []string{"service", "adopt", "api.service", "--host", "host1"}, "already_declared", "already declared on host1"},
		// the recovery list is neither adopted nor ensured
		{"ensure ensure-recovery", []string{"service", "ensure", "stado-host-recovery-probe-none", "--host", "host2"}, "not_found", "neither declared"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runRegistryCLI(t, dir, append(tc.args, "--json")...)
			if code != ExitRefused {
				t.Fatalf("exit %d, want %d: %s", code, ExitRefused, errOut)
			}
			e := decodeJSON(t, errOut)
			if e["code"] != tc.code || !strings.Contains(e["message"].(string), tc.msg) {
				t.Errorf("error %v, want code %s and %q", e, tc.code, tc.msg)
			}
		})
	}
}

func TestEnsureRefusalNamesHostAndStageInJSON(t *testing.T) {
	dir := writeStore(t, fixtureDoc)
	code, out, _ := runRegistryCLI(t, dir, "service", "ensure", "legacy", "--host", "host1", "--json")
	if code != ExitRefused {
		t.Fatalf("exit %d", code)
	}
	var doc struct {
		Kind    string                `json:"kind"`
		Results []fleet.EnsureOutcome `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Kind != "stado.service.ensure" || len(doc.Results) != 1 {
		t.Fatalf("document %s", out)
	}
	e := doc.Results[0].Error
	if e == nil || e.Host != "host1" || e.Stage != fleet.StagePlan || e.Code != "declaration_incomplete" {
		t.Errorf("host error %+v", e)
	}
}

func TestConnectFailureNamesHostAndStage(t *testing.T) {
	dir := writeStore(t, fixtureDoc)
	home := t.TempDir()
	kh := filepath.Join(home, "known_hosts")
	code, out, errOut := runRegistryCLI(t, dir, "service", "restart", "api", "--json", "--known-hosts", kh,
		"--ssh-config", os.DevNull, "--identity", channeltest.WriteKey(t))
	if code != ExitFailure {
		t.Fatalf("exit %d, want %d: %s", code, ExitFailure, errOut)
	}
	var doc struct {
		Results []fleet.RestartOutcome `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Results) != 1 || doc.Results[0].OK || doc.Results[0].Error == nil {
		t.Fatalf("results %s", out)
	}
	if e := doc.Results[0].Error; e.Host != "host1" || e.Stage != string(channel.StageConnect) || !strings.Contains(e.Message, "connect") {
		t.Errorf("host error %+v", e)
	}
	if !strings.Contains(errOut, "host1: connect") {
		t.Errorf("stderr does not name host and stage: %s", errOut)
	}
}

func TestServiceShowMasksEnvironmentUnlessAsked(t *testing.T) {
	dir := writeStore(t, fixtureDoc)
	code, out, errOut := runRegistryCLI(t, dir, "service", "show", "api", "--json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(out, "s3cret") || !strings.Contains(out, fleet.Mask) {
		t.Errorf("show without --show-values: %s", out)
	}
	code, out, _ = runRegistryCLI(t, dir, "service", "show", "api", "--show-values")
	if code != ExitOK || !strings.Contains(out, "API_TOKEN=s3cret-value") {
		t.Errorf("show --show-values: exit %d: %s", code, out)
	}
	// a catalog product with no declaration still shows its entry
	code, out, _ = runRegistryCLI(t, dir, "service", "show", "brama", "--json")
	if code != ExitOK || decodeJSON(t, out)["catalog"] == nil {
		t.Errorf("show brama: exit %d: %s", code, out)
	}
	code, _, _ = runRegistryCLI(t, dir, "service", "show", "nothing-like-it")
	if code != ExitRefused {
		t.Errorf("show of an unknown name: exit %d, want %d", code, ExitRefused)
	}
}

// runChannel runs `stado host channel ARGS...` in-process.
func runChannel(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := NewEnv(strings.NewReader(stdin), &out, &errb)
	home := t.TempDir()
	env.Getenv = func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}
	code := Run(context.Background(), env, append([]string{"stado", "host", "channel"}, args...))
	return code, out.String(), errb.String()
}

func TestHostChannelPrintsOneDocumentPerCall(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		exit int
		kind string
		code string
	}{
		// the one verb that touches nothing
		{"version", []string{"version"}, 0, channel.KindResult, ""},
		// a command the channel does not know
		{"id", []string{"id"}, 3, channel.KindRefusal, "unknown_verb"},
		// a shell is not a verb
		{"sh", []string{"sh", "-c", "touch /tmp/x"}, 3, channel.KindRefusal, "unknown_verb"},
		// a unit name outside the grammar
		{"bad unit", []string{"unit-restart", "system", "a;id.service"}, 3, channel.KindRefusal, "invalid_unit"},
		// a path that climbs
		{"traversal", []string{"unit-remove", "system", "x.service", "/etc/systemd/system/../x.service"}, 3, channel.KindRefusal, "path_traversal"},
		// a flag is not passed to the CLI, it is a word the grammar refuses
		{"flag word", []string{"--store", "file:///tmp", "version"}, 3, channel.KindRefusal, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, _ := runChannel(t, "", tc.args...)
			if code != tc.exit {
				t.Fatalf("exit %d, want %d: %s", code, tc.exit, out)
			}
			if strings.Count(strings.TrimSpace(out), "\n") != 0 {
				t.Errorf("more than one line on stdout: %q", out)
			}
			doc := decodeJSON(t, out)
			if doc["kind"] != tc.kind || (tc.code != "" && doc["code"] != tc.code) {
				t.Errorf("document %v, want kind %s code %s", doc, tc.kind, tc.code)
			}
		})
	}
}

func TestHostChannelServesTheForcedCommand(t *testing.T) {
	t.Setenv("SSH_ORIGINAL_COMMAND", "/usr/local/bin/stado host channel version")
	code, out, errOut := runChannel(t, "")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Kind   string                `json:"kind"`
		Result channel.VersionResult `json:"result"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Result.Protocol != channel.ProtocolVersion || doc.Result.Home == "" {
		t.Errorf("version document %s (%v)", out, err)
	}
	t.Setenv("SSH_ORIGINAL_COMMAND", "version; id")
	if code, out, errOut = runChannel(t, ""); code != 3 || decodeJSON(t, out)["code"] != "forbidden_character" {
		t.Errorf("version; id: exit %d: %s", code, out)
	}
	if !strings.Contains(errOut, "forbidden_character") {
		t.Errorf("stderr does not carry the refusal: %q", errOut)
	}
	t.Setenv("SSH_ORIGINAL_COMMAND", "")
	if code, out, _ = runChannel(t, ""); code != 3 || decodeJSON(t, out)["code"] != "empty_command" {
		t.Errorf("a login without a command: exit %d: %s", code, out)
	}
}

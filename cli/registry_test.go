package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// runRegistryCLI runs stado in-process against the file store in dir and
// returns the exit code, stdout and stderr.
func runRegistryCLI(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := NewEnv(strings.NewReader(""), &out, &errb)
	env.Getenv = func(k string) string {
		if k == "HOME" {
			return dir
		}
		return ""
	}
	code := Run(context.Background(), env, append([]string{"stado", "--store", "file://" + dir}, args...))
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func storeRevision(t *testing.T, dir string) int64 {
	t.Helper()
	st, err := store.OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, m, err := registry.Load(context.Background(), st)
	if errors.Is(err, store.ErrNotFound) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return m.Revision
}

const fleetFile = "../examples/fleet.yaml"

func TestRegistryPushWritesRevisionAndPrintsSummary(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runRegistryCLI(t, dir, "registry", "push", fleetFile, "--reason", "first fleet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"pushed registry revision 1", "targets added:", "host1, host2, host3", "host1/brama", "directory added:"} {
		if !strings.Contains(out, want) {
			t.Errorf("push output lacks %q:\n%s", want, out)
		}
	}
}

// TestRegistryPushOfAnUnchangedDocumentWritesNothingAndSaysNoChange: the
// same document pushed again keeps the revision, in text and in --json, exit 0.
func TestRegistryPushOfAnUnchangedDocumentWritesNothingAndSaysNoChange(t *testing.T) {
	dir := t.TempDir()
	if code, _, errs := runRegistryCLI(t, dir, "registry", "push", fleetFile); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	code, out, errs := runRegistryCLI(t, dir, "registry", "push", fleetFile)
	if code != 0 || !strings.Contains(out, "no change") || storeRevision(t, dir) != 1 {
		t.Fatalf("exit %d, output %q %s, store at %d; want no change at 1", code, out, errs, storeRevision(t, dir))
	}
	code, out, _ = runRegistryCLI(t, dir, "registry", "push", "--json", fleetFile)
	var res registry.Pushed
	if code != 0 {
		t.Fatalf("exit %d, output %q", code, out)
	}
	decodeDoc(t, out, "stado.registry.push", &res)
	if !res.Unchanged || res.Revision != 1 || res.Meta != nil || storeRevision(t, dir) != 1 {
		t.Fatalf("second push = %+v, store at %d", res, storeRevision(t, dir))
	}
}

func TestRegistryPushAgainstStaleRevisionIsRefusedAsConflict(t *testing.T) {
	dir := t.TempDir()
	runRegistryCLI(t, dir, "registry", "push", fleetFile)
	code, _, errs := runRegistryCLI(t, dir, "registry", "push", fleetFile, "--expect-revision", "0", "--json")
	var doc struct{ Code string }
	if code != ExitRefused || json.Unmarshal([]byte(errs), &doc) != nil || doc.Code != "conflict" {
		t.Fatalf("exit %d, stderr %s; want a conflict refusal", code, errs)
	}
	if code, _, errs := runRegistryCLI(t, dir, "registry", "push", "--expect-revision", "1", fleetFile); code != 0 {
		t.Fatalf("push expecting the current revision: exit %d %s", code, errs)
	}
}

func TestRegistryPushDryRunWritesNothing(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runRegistryCLI(t, dir, "registry", "push", fleetFile, "--dry-run")
	if code != 0 || !strings.Contains(out, "dry run") || !strings.Contains(out, "targets added") {
		t.Fatalf("exit %d out %q err %q", code, out, errs)
	}
	if rev := storeRevision(t, dir); rev != 0 {
		t.Fatalf("dry run wrote revision %d", rev)
	}
}

func TestRegistryPullReturnsWhatWasPushedAtEachRevision(t *testing.T) {
	dir := t.TempDir()
	runRegistryCLI(t, dir, "registry", "push", fleetFile, "--reason", "one")
	code, yamlOut, _ := runRegistryCLI(t, dir, "registry", "pull")
	if code != 0 {
		t.Fatal("pull failed")
	}
	d, err := registry.Parse([]byte(yamlOut), "pulled")
	if err != nil || len(d.Targets) != 3 {
		t.Fatalf("pulled yaml: %v", err)
	}
	d.Targets = d.Targets[:2]
	d.Directory = d.Directory[:2]
	d.Directory[0].Callers = nil
	two, _ := registry.Marshal(d, registry.FormatJSON)
	if code, _, errs := runRegistryCLI(t, dir, "registry", "push", writeFile(t, "two.json", string(two)), "--expect-revision", "1"); code != 0 {
		t.Fatalf("push two: %s", errs)
	}
	_, jsonOut, _ := runRegistryCLI(t, dir, "registry", "pull", "--format", "json", "--revision", "1")
	old, err := registry.Parse([]byte(jsonOut), "rev1")
	if err != nil || len(old.Targets) != 3 || registry.DetectFormat([]byte(jsonOut)) != registry.FormatJSON {
		t.Fatalf("pull --revision 1 --format json: %v\n%s", err, jsonOut)
	}
	_, out, _ := runRegistryCLI(t, dir, "registry", "pull", "--json")
	var res registryPullResult
	if decodeDoc(t, out, "stado.registry.pull", &res); res.Revision != 2 || len(res.Document.Targets) != 2 {
		t.Fatalf("pull --json = %s", out)
	}
	if code, _, errs := runRegistryCLI(t, dir, "registry", "pull", "--revision", "99"); code != ExitRefused || !strings.Contains(errs, "not retained") {
		t.Fatalf("pull of unknown revision: exit %d %s", code, errs)
	}
}

func TestRegistryShowFlagsIncompleteDeclarations(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("STADO_WRITER", "alice@ws")
	runRegistryCLI(t, dir, "registry", "push", "../registry/testdata/good/incomplete.yaml", "--reason", "adopted legacy")
	code, out, errs := runRegistryCLI(t, dir, "registry", "show")
	if code != 0 {
		t.Fatal(errs)
	}
	for _, want := range []string{"registry revision 1", "alice@ws", "adopted legacy", "legacy", "declaration_incomplete", "worker"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	_, out, _ = runRegistryCLI(t, dir, "registry", "show", "--json")
	var res registry.Shown
	decodeDoc(t, out, "stado.registry.show", &res)
	status, incomplete := map[string]string{}, 0
	for _, s := range res.Targets[0].Services {
		status[s.Name] = s.Status
		if s.Status == registry.StatusIncomplete {
			incomplete++
		}
	}
	if status["legacy"] != "declaration_incomplete" || status["worker"] != "declared" || res.Incomplete != incomplete {
		t.Fatalf("show --json = %+v", res)
	}
}

func TestRegistryShowOfEmptyStoreIsRefusedNotFound(t *testing.T) {
	code, _, errs := runRegistryCLI(t, t.TempDir(), "registry", "show", "--json")
	var doc struct{ Code string }
	if code != ExitRefused || json.Unmarshal([]byte(errs), &doc) != nil || doc.Code != "not_found" {
		t.Fatalf("exit %d stderr %s", code, errs)
	}
}

func TestRegistryHistoryListsRevisionsNewestFirst(t *testing.T) {
	dir := t.TempDir()
	runRegistryCLI(t, dir, "registry", "push", fleetFile, "--reason", "first")
	// the second revision must change something: an equal document writes none
	_, yamlOut, _ := runRegistryCLI(t, dir, "registry", "pull")
	d, err := registry.Parse([]byte(yamlOut), "pulled")
	if err != nil {
		t.Fatal(err)
	}
	d.Targets, d.Directory = d.Targets[:2], d.Directory[:2]
	d.Directory[0].Callers = nil
	two, _ := registry.Marshal(d, registry.FormatJSON)
	if code, _, errs := runRegistryCLI(t, dir, "registry", "push", writeFile(t, "two.json", string(two)), "--reason", "second"); code != 0 {
		t.Fatalf("push two: %s", errs)
	}
	code, out, _ := runRegistryCLI(t, dir, "registry", "history", "--json")
	var res registry.Revisions
	if code != 0 {
		t.Fatalf("exit %d %s", code, out)
	}
	decodeDoc(t, out, "stado.registry.history", &res)
	if len(res.Revisions) != 2 || res.Revisions[0].Reason != "second" || res.Revisions[1].Revision != 1 {
		t.Fatalf("history = %+v", res)
	}
	_, text, _ := runRegistryCLI(t, dir, "registry", "history")
	if strings.Index(text, "second") > strings.Index(text, "first") {
		t.Fatalf("history text not newest first:\n%s", text)
	}
}

func TestRegistryValidateReportsValidAndInvalidFiles(t *testing.T) {
	dir := t.TempDir()
	// Cases: a good file, a bad one, a missing one, no argument.
	code, out, _ := runRegistryCLI(t, dir, "registry", "validate", "../registry/testdata/good/incomplete.yaml")
	if code != 0 || !strings.Contains(out, "valid") || !strings.Contains(out, "host1/legacy: declaration_incomplete") {
		t.Fatalf("good: exit %d %s", code, out)
	}
	// a declaration overriding the agent's kill_mode is valid, with a
	// warning naming the field path and the product
	code, out, _ = runRegistryCLI(t, dir, "registry", "validate", "../registry/testdata/good/agent-kill-mode.yaml")
	if code != 0 || !strings.Contains(out, "warning product_setting_overridden: targets[0].services[0].kill_mode") || !strings.Contains(out, "product oarbank-agent") {
		t.Fatalf("override: exit %d %s", code, out)
	}
	code, _, errs := runRegistryCLI(t, dir, "registry", "validate", "../registry/testdata/bad/os_unknown.yaml")
	if code != ExitRefused || !strings.Contains(errs, "targets[0].os: must be linux or darwin") || !strings.Contains(errs, "os_unknown.yaml") {
		t.Fatalf("bad: exit %d %s", code, errs)
	}
	if code, _, _ := runRegistryCLI(t, dir, "registry", "validate", filepath.Join(dir, "absent.yaml")); code != ExitFailure {
		t.Fatalf("missing file: exit %d, want %d", code, ExitFailure)
	}
	if code, _, _ := runRegistryCLI(t, dir, "registry", "validate"); code != ExitUsage {
		t.Fatalf("no file: exit %d, want %d", code, ExitUsage)
	}
}

// buildStado builds the stado binary once per test into a temp dir.
func buildStado(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "stado")
	cmd := exec.Command("go", "build", "-o", bin, "../cmd/stado")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// cliIncrement adds one to service_resolver.refresh_seconds through the
// built binary: pull --json, then push --expect-revision, again on conflict.
func cliIncrement(ctx context.Context, bin, store, work string) error {
	for attempt := 0; attempt < 500; attempt++ {
		pull := exec.CommandContext(ctx, bin, "registry", "pull", "--store", store, "--json")
		out, err := pull.Output()
		if err != nil {
			return fmt.Errorf("pull: %v", err)
		}
		var res registryPullResult
		if err := json.Unmarshal(out, &res); err != nil {
			return fmt.Errorf("pull output: %v", err)
		}
		res.Document.ServiceResolver.RefreshSeconds++
		data, err := registry.Marshal(res.Document, registry.FormatJSON)
		if err != nil {
			return err
		}
		file := filepath.Join(work, "next.json")
		if err := os.WriteFile(file, data, 0o600); err != nil {
			return err
		}
		push := exec.CommandContext(ctx, bin, "registry", "push", file, "--store", store,
			"--expect-revision", fmt.Sprint(res.Revision), "--reason", "increment", "--json")
		var stderr bytes.Buffer
		push.Stderr = &stderr
		err = push.Run()
		if err == nil {
			return nil
		}
		var doc struct{ Code string }
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == ExitRefused && json.Unmarshal(stderr.Bytes(), &doc) == nil && doc.Code == "conflict" {
			continue
		}
		return fmt.Errorf("push: %v: %s", err, stderr.String())
	}
	return errors.New("gave up after 500 conflicts")
}

func TestFourStadoProcessesIncrementingThroughTheCLILoseNoUpdate(t *testing.T) {
	bin := buildStado(t)
	dir := t.TempDir()
	store := "file://" + dir
	seed := writeFile(t, "seed.yaml", "version: 1\nservice_resolver:\n  refresh_seconds: 1\n")
	if out, err := exec.Command(bin, "registry", "push", seed, "--store", store).CombinedOutput(); err != nil {
		t.Fatalf("seed push: %v %s", err, out)
	}
	const workers, each = 4, 15
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		work := t.TempDir()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := cliIncrement(ctx, bin, store, work); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "registry", "pull", "--store", store, "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var res registryPullResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	if got := res.Document.ServiceResolver.RefreshSeconds; got != 1+workers*each {
		t.Fatalf("counter = %d, want %d", got, 1+workers*each)
	}
}

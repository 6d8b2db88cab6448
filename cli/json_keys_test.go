package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/release"
)

// checkNoDuplicateKeys decodes every JSON document in s (one, or JSON lines)
// and refuses an object that names a key twice: the class of input the
// registry itself refuses must never come out of stado.
func checkNoDuplicateKeys(s string) error {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	for {
		err := walkValue(dec, "$")
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func walkValue(dec *json.Decoder, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '{':
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			k := kt.(string)
			if seen[k] {
				return fmt.Errorf("%s: key %q appears twice", path, k)
			}
			seen[k] = true
			if err := walkValue(dec, path+"."+k); err != nil {
				return err
			}
		}
	case '[':
		for i := 0; dec.More(); i++ {
			if err := walkValue(dec, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

func TestTheDuplicateKeyCheckRefusesARepeatedKey(t *testing.T) {
	if err := checkNoDuplicateKeys(`{"kind":"a","x":{"y":1,"y":2}}`); err == nil || !strings.Contains(err.Error(), `$.x: key "y"`) {
		t.Fatalf("nested duplicate not refused: %v", err)
	}
	if err := checkNoDuplicateKeys("{\"kind\":\"a\"}\n{\"kind\":\"a\",\"kind\":\"b\"}\n"); err == nil {
		t.Fatal("a duplicate in the second JSON line was not refused")
	}
	if err := checkNoDuplicateKeys(`{"a":[{"k":1},{"k":2}]}`); err != nil {
		t.Fatalf("one key per object refused: %v", err)
	}
}

// jsonInvocations runs every reporting command once with --json against a
// fixture store whose hosts listen nowhere (so host-bound commands fail fast
// and report their failure as JSON too). Each entry is the arguments after
// the command's path.
var jsonInvocations = map[string][]string{
	"stado version":                  nil,
	"stado registry push":            {"@doc"},
	"stado registry show":            nil,
	"stado registry history":         nil,
	"stado registry validate":        {"@doc"},
	"stado registry doctor":          nil,
	"stado catalog show":             nil,
	"stado catalog validate":         {"@catalog"},
	"stado catalog push":             {"--file", "@catalog", "--reason", "test"},
	"stado host unit show":           {"nosuch-stado-test.service"},
	"stado host unit parse":          {"@unit"},
	"stado host unit logs":           {"nosuch-stado-test.service"},
	"stado host health":              nil,
	"stado host unlock-store":        nil,
	"stado host bootstrap":           {"host1", "--version", "1.0.0", "--key", "@doc"},
	"stado store migrate":            {"--to", "file://@newstore"},
	"stado store packing":            nil,
	"stado service list":             nil,
	"stado service status":           {"api"},
	"stado service recoveries":       nil,
	"stado service show":             {"api"},
	"stado service ensure":           {"api", "--host", "host1"},
	"stado service adopt":            {"api.service", "--host", "host1", "--name", "api2", "--reason", "test"},
	"stado service retire":           {"api", "--host", "host1", "--reason", "test", "--dry-run"},
	"stado service converge":         {"api", "--reason", "test", "--dry-run"},
	"stado service remove":           {"api", "--host", "host1", "--reason", "test", "--dry-run"},
	"stado service restart":          {"api", "--host", "host1", "--dry-run"},
	"stado service logs":             {"api", "--host", "host1"},
	"stado service env":              {"api", "--host", "host1"},
	"stado service unit show":        {"api", "--host", "host1"},
	"stado service unit logs":        {"api", "--host", "host1"},
	"stado service verify":           {"api"},
	"stado service serving":          {"api", "--host", "host1"},
	"stado resolver resolve":         {"api", "--caller", "host1"},
	"stado repair":                   {"api", "--host", "host1"},
	"stado optimize run":             {"--mode", "report"},
	"stado optimize status":          nil,
	"stado desktop":                  {"--listen", "not-an-address"},
	"stado release key generate":     {"--out", "@keydir"},
	"stado release publish":          {"brama", "1.0", "@doc", "--os", "linux", "--arch", "amd64", "--key", "@signkey"},
	"stado release prune":            {"--keep", "1"},
	"stado release version set":      {"brama", "1.0", "--reason", "test"},
	"stado release version show":     nil,
	"stado release version converge": {"--all", "--dry-run"},
}

const jsonKeysUnit = `[Unit]
Description=api

[Service]
ExecStart=/usr/local/bin/api --listen 127.0.0.1:8080

[Install]
WantedBy=multi-user.target
`

const jsonKeysCatalog = `version: 1
products:
  - name: tilde
    unit: tilde.service
    program: /usr/local/bin/tilde
`

func TestEveryCommandsJSONNamesEachKeyOnce(t *testing.T) {
	env := NewEnv(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	app := NewApp(env)
	var leaves []string
	walk("stado", app.Commands, func(path string, c *ucli.Command) {
		if len(c.Subcommands) == 0 && !reportingExempt[path] {
			leaves = append(leaves, path)
		}
	})
	for _, path := range leaves {
		if _, ok := jsonInvocations[path]; !ok {
			t.Errorf("%s: reports with --json but has no invocation in jsonInvocations", path)
		}
	}
	work := t.TempDir()
	files := map[string]string{
		"@doc":      filepath.Join(work, "fleet.yaml"),
		"@unit":     filepath.Join(work, "api.service"),
		"@catalog":  filepath.Join(work, "catalog.yaml"),
		"@newstore": filepath.Join(work, "newstore"),
		"@keydir":   filepath.Join(work, "keys"),
	}
	if _, key, err := release.GenerateKey(filepath.Join(work, "signing"), "k", ""); err != nil {
		t.Fatal(err)
	} else {
		files["@signkey"] = key
	}
	for name, body := range map[string]string{"@doc": fixtureDoc, "@unit": jsonKeysUnit, "@catalog": jsonKeysCatalog} {
		if err := os.WriteFile(files[name], []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	printed := 0
	for _, path := range leaves {
		args, ok := jsonInvocations[path]
		if !ok {
			continue
		}
		t.Run(strings.ReplaceAll(strings.TrimPrefix(path, "stado "), " ", "_"), func(t *testing.T) {
			dir := writeStore(t, fixtureDoc)
			argv := append([]string{}, strings.Fields(strings.TrimPrefix(path, "stado "))...)
			for _, a := range args {
				for k, v := range files {
					a = strings.ReplaceAll(a, k, v)
				}
				argv = append(argv, a)
			}
			argv = append(argv, "--json")
			code, out, errOut := runRegistryCLI(t, dir, argv...)
			if strings.TrimSpace(out) != "" {
				printed++
				if err := checkNoDuplicateKeys(out); err != nil {
					t.Errorf("exit %d, stdout: %v\n%s", code, err, out)
				}
			}
			if code != ExitOK && strings.HasPrefix(strings.TrimSpace(errOut), "{") {
				if err := checkNoDuplicateKeys(errOut); err != nil {
					t.Errorf("exit %d, stderr: %v\n%s", code, err, errOut)
				}
			}
		})
	}
	if printed < len(leaves)/2 {
		t.Errorf("only %d of %d commands printed a JSON document: the invocations test too little", printed, len(leaves))
	}
}

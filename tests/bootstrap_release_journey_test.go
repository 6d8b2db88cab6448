package tests

import (
	"context"
	"encoding/json"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/wisent/stado/release"
	"github.com/wisent/stado/store"
	"github.com/wisent/stado/tests/testbed"
)

// publishStado publishes the binary at bin as stado VERSION for this
// machine's os/arch (the testbed's hosts run on it) with a key generated
// here, and returns the public key file. The only lines that name the
// release core's key and publish API.
func publishStado(t *testing.T, storeURL, version, bin string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pubFile, keyFile, err := release.GenerateKey(dir, "journey-release", "")
	if err != nil {
		t.Fatal(err)
	}
	priv, err := release.LoadPrivateKey(keyFile, "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, storeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := release.Publish(ctx, st, release.PublishRequest{Product: "stado", Version: version, OS: runtime.GOOS, Arch: runtime.GOARCH,
		Data: data, Key: priv, Reason: "bootstrap journey", Now: time.Now()}); err != nil {
		t.Fatalf("publish stado %s: %v", version, err)
	}
	return pubFile
}

type bootstrapDoc struct {
	Kind          string `json:"kind"`
	Host          string `json:"host"`
	SHA256        string `json:"sha256"`
	AuthorizedKey string `json:"authorized_key"`
	Changed       bool   `json:"changed"`
	Steps         []struct {
		Name    string `json:"name"`
		Outcome string `json:"outcome"`
		Detail  string `json:"detail"`
	} `json:"steps"`
}

// Not parallel: WithoutStado takes stado off host3, which the parallel
// journeys use.
func TestBootstrapReleaseJourneyBootstrapsABareHostFromAPublishedImage(t *testing.T) {
	bed := testbed.Shared(t, 3)
	h := bed.Host(3)
	bin := testbed.BuildStado(t)
	bed.InstallStado(t, bin)
	storeURL := "file://" + bed.NewStore(t)
	c := newCLI(t, bed, storeURL)
	bootstrapBed(t, bed, h, c, storeURL)
	const version = "0.0.1-journey"
	pubFile := publishStado(t, storeURL, version, bin)
	chanKey := channelKey(t)

	bootstrapOnce := func() bootstrapDoc {
		t.Helper()
		out := c.mustRun(t, "host", "bootstrap", h.Name, "--version", version, "--key", pubFile,
			"--channel-key", chanKey+".pub", "--forced-command", "--json")
		var d bootstrapDoc
		if err := json.Unmarshal([]byte(out), &d); err != nil || d.Kind != "stado.host.bootstrap" {
			t.Fatalf("bootstrap printed %q: %v", out, err)
		}
		return d
	}
	first := bootstrapOnce()
	for _, s := range first.Steps {
		if s.Outcome != "changed" {
			t.Errorf("first bootstrap: step %s %s (%s)", s.Name, s.Outcome, s.Detail)
		}
	}
	checkBootstrapped(t, bed, h, c, first.SHA256)

	second := bootstrapOnce()
	if second.Changed {
		t.Error("the second bootstrap changed the host")
	}
	for _, s := range second.Steps {
		if s.Outcome != "unchanged" {
			t.Errorf("second bootstrap: step %s %s (%s)", s.Name, s.Outcome, s.Detail)
		}
	}
	checkChannelOnly(t, bed, h, chanKey)
}

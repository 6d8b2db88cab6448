package cli

import (
	"bytes"
	"strings"
	"testing"
)

// Whether a command may start a keeper is injected: the Env a test builds
// starts none (a test binary is no stado to run `host keeper`), and only
// Main, a real stado process, sets the start of its own executable's.
func TestOnlyARealProcessStartsAKeeper(t *testing.T) {
	env := NewEnv(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	if env.StartKeeper != nil {
		t.Fatal("NewEnv starts a keeper: a test's commands would start the test binary")
	}
	if startThisKeeper() == nil {
		t.Fatal("a process that can name its executable has no keeper start")
	}
}

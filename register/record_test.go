package register

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The register's line format is what hosts have already written
// (docs/answering.md): a row written before this package existed reads
// back, and encodes again to the very same bytes, field for field and in
// the same order. testdata/register.jsonl holds such rows: a full one (a
// peer's attempt with a failed step, a restart and an alert) and a bare one.
func TestRowsHostsAlreadyWroteReadBackAndEncodeToTheSameBytes(t *testing.T) {
	path := filepath.Join("testdata", "register.jsonl")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := (&File{Path: path}).Read()
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	if len(recs) != len(lines) || len(recs) != 2 {
		t.Fatalf("read %d rows of %d lines", len(recs), len(lines))
	}
	for i, r := range recs {
		got, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, lines[i]) {
			t.Errorf("row %d encodes as\n%s\nwant\n%s", i+1, got, lines[i])
		}
	}
	if recs[0].Steps[0].ExitCode == nil || *recs[0].Steps[0].ExitCode != 3 || recs[0].Restart.PID != 42 || recs[0].Declaration == nil {
		t.Errorf("full row read as %+v", recs[0])
	}
}

package printer

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestTableAlignsColumnsAndCutsOnlyTheLastToTheWidth(t *testing.T) {
	rows := [][]string{{"höst1", "a long detail that goes on"}, {"h2"}}
	var cut, whole bytes.Buffer
	printTable(&cut, 20, []string{"HOST", "DETAIL"}, rows)
	if want := "HOST   DETAIL\nhöst1  a long detai…\nh2\n"; cut.String() != want {
		t.Errorf("cut to 20:\n%q\nwant\n%q", cut.String(), want)
	}
	// without a width (a pipe or a file) nothing is cut
	printTable(&whole, 0, []string{"HOST", "DETAIL"}, rows)
	if !strings.Contains(whole.String(), "goes on") {
		t.Errorf("uncut:\n%s", whole.String())
	}
}

// ptrMarshaler encodes itself only through its address, as a slice
// element encoded whole does.
type ptrMarshaler struct{ N int }

func (p *ptrMarshaler) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]int{"through_pointer": p.N})
}

// A list is written row by row, and the bytes are the ones encoding the
// whole document and indenting it would print, kind first.
func TestStreamedDocumentsPrintWhatTheWholeEncodingWould(t *testing.T) {
	type row struct {
		Host  string         `json:"host"`
		PID   int            `json:"pid,omitempty"`
		Exit  *int           `json:"last_exit,omitempty"`
		Note  string         `json:"note,omitempty"`
		Tags  []string       `json:"tags"`
		Extra map[string]any `json:"extra,omitempty"`
	}
	type doc struct {
		Revision int64          `json:"registry_revision"`
		At       time.Time      `json:"at"`
		Rows     []row          `json:"services"`
		Empty    []row          `json:"empty"`
		None     []row          `json:"none"`
		Omitted  []row          `json:"omitted,omitempty"`
		Bytes    []byte         `json:"bytes"`
		Marshal  []ptrMarshaler `json:"marshal"`
		Plain    string
		hidden   int
		Skipped  int `json:"-"`
	}
	zero := 0
	full := doc{Revision: 7, At: time.Date(2026, 12, 3, 4, 5, 6, 7, time.UTC),
		Rows: []row{
			{Host: "h1", PID: 12, Exit: &zero, Tags: []string{"a", "<b>&"}, Extra: map[string]any{"z": []any{}, "a": map[string]any{"q": "\x1b[2J\n\u2028"}}},
			{Host: "h2", Note: `quote " back \ slash`, Tags: []string{}},
		},
		Empty: []row{}, Bytes: []byte("raw"), Marshal: []ptrMarshaler{{1}, {2}}, Plain: "p", hidden: 1, Skipped: 2}
	type embedded struct {
		row
		Kind2 string `json:"k2,string"`
	}
	for _, d := range []any{full, &full, doc{}, embedded{row: row{Host: "e"}}, map[string]int{"b": 1, "a": 2}, struct{}{}, nil} {
		var want bytes.Buffer
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) == "null" || string(b) == "{}" {
			want.WriteString("{\n  \"kind\": \"k\"\n}\n")
		} else {
			whole := append([]byte(`{"kind":"k",`), b[1:]...)
			if err := json.Indent(&want, whole, "", "  "); err != nil {
				t.Fatal(err)
			}
			want.WriteByte('\n')
		}
		var got bytes.Buffer
		if err := JSON(&got, "k", d); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("%T printed\n%s\nwant\n%s", d, got.String(), want.String())
		}
	}
}

// A list too large for one write is written in pieces, and a write error
// stops the document.
func TestStreamedListStopsAtTheFirstWriteError(t *testing.T) {
	rows := make([]map[string]string, 5000)
	for i := range rows {
		rows[i] = map[string]string{"host": strings.Repeat("h", 40)}
	}
	w := &failingWriter{}
	err := JSON(w, "k", struct {
		Rows []map[string]string `json:"rows"`
	}{rows})
	if err == nil || !strings.Contains(err.Error(), "stdout closed") {
		t.Fatalf("err = %v, want the write error", err)
	}
	if w.n != 1 {
		t.Errorf("%d writes after the first failed, want none", w.n-1)
	}
}

type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	w.n++
	return 0, errors.New("stdout closed")
}

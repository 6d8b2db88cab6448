package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Meta is the record each written revision of the registry carries beside
// its document: who wrote it, when and why, and the store's revision.
type Meta struct {
	// Revision is the store's revision of the registry object.
	Revision int64 `json:"revision,omitempty"`
	// Writer is who wrote it: $STADO_WRITER, or user@hostname.
	Writer string `json:"writer"`
	// Time is when the writer wrote it (UTC).
	Time time.Time `json:"time"`
	// Reason is the writer's own words for the change.
	Reason string `json:"reason,omitempty"`
}

// HistoryKey is the store key of registry revision rev: RegistryHistoryPrefix
// and the revision zero-padded to 20 digits, so keys sort by revision.
func HistoryKey(rev int64) string { return fmt.Sprintf("%s%020d", RegistryHistoryPrefix, rev) }

// EncodeEnvelope frames a registry document (doc, already JSON) with its
// meta the way RegistryKey and every history entry hold it:
// {"meta": {...}, "document": {...}} and a newline. The object at
// RegistryKey carries no meta.revision (it is not known before the
// compare-and-swap answers); history entries carry it. doc is written as
// it is, so a replayed revision keeps its document's bytes.
func EncodeEnvelope(m Meta, doc []byte) ([]byte, error) {
	mj, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(len(mj) + len(doc) + 32)
	b.WriteString(`{"meta":`)
	b.Write(mj)
	b.WriteString(`,"document":`)
	b.Write(doc)
	b.WriteString("}\n")
	return b.Bytes(), nil
}

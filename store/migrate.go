package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/wisent/stado/refusal"
)

// MigratedPrefixes are the parts of a store Migrate copies. Beacons are live
// data each host rewrites every pass (on etcd with a lease the copy could
// not carry), so they are left out.
var MigratedPrefixes = []string{"registry/", "catalog/", ReleasePrefix, AutonomyPrefix}

// Migration is what Migrate did.
type Migration struct {
	// Copied counts keys written to the target by part.
	Copied MigrationCounts `json:"copied"`
	// Replaced counts target keys force deleted first.
	Replaced int `json:"replaced"`
	// RegistryRevision maps the source's current registry revision to the
	// target's; both 0 when the source holds no registry.
	RegistryRevision struct {
		From int64 `json:"from"`
		To   int64 `json:"to"`
	} `json:"registry_revision"`
	// NotCopied names what Migrate leaves behind on purpose.
	NotCopied []string `json:"not_copied"`
}

// MigrationCounts counts the keys Migrate wrote, by part.
type MigrationCounts struct {
	Registry      int `json:"registry"`
	History       int `json:"history"`
	RegistryOther int `json:"registry_other"`
	Catalog       int `json:"catalog"`
	Releases      int `json:"releases"`
	Autonomy      int `json:"autonomy"`
}

// rawEnvelope is a stored registry revision whose document is kept as the
// bytes it was written with.
type rawEnvelope struct {
	Meta     Meta            `json:"meta"`
	Document json.RawMessage `json:"document"`
}

// Migrate copies every key under MigratedPrefixes of from into to.
// Everything is read (and the history decoded) before the first write, so an
// unreadable source writes nothing. The registry is replayed revision by
// revision: each revision becomes a compare-and-swap of RegistryKey and a
// history entry under the revision the target gave it, keeping writer,
// time, reason and the document's bytes.
//
// A target that already holds a key under MigratedPrefixes is refused with
// a *refusal.Error (code target_not_empty) unless force, which deletes
// those keys first. A failed write leaves the target partly written; the
// error says so and wraps the cause (a *ConflictError, an I/O failure).
func Migrate(ctx context.Context, from, to Store, force bool) (Migration, error) {
	res := Migration{NotCopied: []string{BeaconPrefix + " (hosts publish them again)"}}
	history, plain, err := readMigration(ctx, from, &res)
	if err != nil {
		return res, fmt.Errorf("read source store: %w", err)
	}
	var held []string
	for _, p := range MigratedPrefixes {
		objs, err := to.List(ctx, p)
		if err != nil {
			return res, fmt.Errorf("read target store: %w", err)
		}
		for _, o := range objs {
			held = append(held, o.Key)
		}
	}
	if len(held) > 0 && !force {
		return res, &refusal.Error{Code: refusal.TargetNotEmpty,
			Message: fmt.Sprintf("target store already holds %d keys under %s", len(held), strings.Join(MigratedPrefixes, ", ")),
			Hint:    "pass --force to delete them and copy the source in their place",
			Details: map[string]any{"keys": len(held), "first": held[:min(len(held), 10)]}}
	}
	for _, k := range held {
		if err := to.Delete(ctx, k); err != nil && !errors.Is(err, ErrNotFound) {
			return res, fmt.Errorf("clear target store (deleted %d of %d keys): %w", res.Replaced, len(held), err)
		}
		res.Replaced++
	}

	written := 0
	partial := func(err error) error {
		return fmt.Errorf("migrate stopped after %d of %d writes; run it again with --force once the cause is fixed: %w",
			written, len(plain)+2*len(history), err)
	}
	var rev int64
	for _, h := range history {
		m := h.Meta
		m.Revision = 0
		value, err := EncodeEnvelope(m, h.Document)
		if err != nil {
			return res, partial(err)
		}
		if rev, err = to.CompareAndSwap(ctx, RegistryKey, value, rev, PutOptions{}); err != nil {
			return res, partial(err)
		}
		written++
		m.Revision = rev
		entry, err := EncodeEnvelope(m, h.Document)
		if err == nil {
			_, err = to.Put(ctx, HistoryKey(rev), entry, PutOptions{})
		}
		if err != nil {
			return res, partial(err)
		}
		written++
		res.Copied.History++
	}
	if len(history) > 0 {
		res.Copied.Registry = 1
		res.RegistryRevision.To = rev
	}
	for _, o := range plain {
		if _, err := to.Put(ctx, o.Key, o.Value, PutOptions{}); err != nil {
			return res, partial(err)
		}
		written++
	}
	return res, nil
}

// readMigration reads what Migrate copies from st: the registry revisions
// to replay, oldest first, and every other key as it is. It counts them in res.
func readMigration(ctx context.Context, st Store, res *Migration) ([]rawEnvelope, []Object, error) {
	var (
		history []rawEnvelope
		current *Object
		plain   []Object
	)
	for _, p := range MigratedPrefixes {
		objs, err := st.List(ctx, p)
		if err != nil {
			return nil, nil, err
		}
		switch p {
		case "catalog/":
			res.Copied.Catalog = len(objs)
		case ReleasePrefix:
			res.Copied.Releases = len(objs)
		case AutonomyPrefix:
			res.Copied.Autonomy = len(objs)
		}
		for _, obj := range objs {
			switch {
			case obj.Key == RegistryKey:
				current = &obj
			case strings.HasPrefix(obj.Key, RegistryHistoryPrefix):
				env, err := decodeRawEnvelope(obj)
				if err != nil {
					return nil, nil, err
				}
				history = append(history, env)
			default:
				if p == "registry/" {
					res.Copied.RegistryOther++
				}
				plain = append(plain, obj)
			}
		}
	}
	sort.SliceStable(history, func(i, j int) bool { return history[i].Meta.Revision < history[j].Meta.Revision })
	if current != nil {
		res.RegistryRevision.From = current.Revision
		if len(history) == 0 || history[len(history)-1].Meta.Revision != current.Revision {
			// The current revision's history entry was never written (its
			// writer died in between): replay it from the document itself.
			env, err := decodeRawEnvelope(*current)
			if err != nil {
				return nil, nil, err
			}
			history = append(history, env)
		}
	}
	return history, plain, nil
}

// decodeRawEnvelope reads a stored registry revision keeping its document's
// bytes; the revision is the object's unless the envelope names one (a
// history entry does).
func decodeRawEnvelope(obj Object) (rawEnvelope, error) {
	var env rawEnvelope
	if err := json.Unmarshal(obj.Value, &env); err != nil || len(env.Document) == 0 {
		return env, fmt.Errorf("%s is not a registry envelope: %v", obj.Key, err)
	}
	if obj.Key == RegistryKey || env.Meta.Revision == 0 {
		env.Meta.Revision = obj.Revision
	}
	return env, nil
}

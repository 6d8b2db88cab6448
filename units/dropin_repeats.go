package units

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/wisent/stado/declaration"
)

// RepeatingDropIn is a drop-in on the host that, applied over stado's
// rendering of a declaration, would add a command the rendering already
// runs. It happens when adopt merged the drop-in into the declaration and
// ensure then writes the declaration into the unit's own file: systemd
// still applies the drop-in on top, so every command list it appends to
// (ExecStartPre=, ExecStop=, …) would carry its commands twice.
type RepeatingDropIn struct {
	Path string `json:"path"`
	// Keys are the directives whose commands the drop-in repeats.
	Keys []string `json:"keys"`
	// Held is true when the declaration already holds everything the
	// drop-in says: applied over the rendering it changes nothing but the
	// repeats, so setting it aside loses nothing.
	Held bool `json:"held"`
	// Differs names, when Held is false, the declaration's fields the
	// drop-in would change besides the repeats.
	Differs []string `json:"differs,omitempty"`
}

// execListKeys are the command lists a repeated assignment runs twice.
var execListKeys = []string{"ExecStartPre", "ExecStartPost", "ExecReload", "ExecStop", "ExecStopPost"}

// DropInsRepeating reads each drop-in over rendering (the unit file stado
// writes for unit) on its own and returns those that repeat a command of
// the rendering. A drop-in that only restates settings (the same User=, an
// After= already there) repeats nothing: systemd holds those as values and
// sets, so it is left out. A rendering or drop-in that cannot be read as a
// unit is left out too; systemd says what is wrong with it.
func DropInsRepeating(rendering []byte, unit string, dropins []DropIn) []RepeatingDropIn {
	if len(dropins) == 0 {
		return nil // most units: nothing to parse
	}
	base, err := ParseSystemdFiles(rendering, unit, nil)
	if err != nil {
		return nil
	}
	var out []RepeatingDropIn
	for _, d := range dropins {
		over, err := ParseSystemdFiles(rendering, unit, []DropIn{d})
		if err != nil {
			continue
		}
		keys := dropRepeats(&base.Service.UnitSettings, &over.Service.UnitSettings)
		if len(keys) == 0 {
			continue
		}
		differs := serviceDifferences(base.Service, over.Service)
		out = append(out, RepeatingDropIn{Path: d.Path, Keys: keys, Held: len(differs) == 0, Differs: differs})
	}
	return out
}

// dropRepeats finds the command lists where over is base's list followed
// only by commands base's list already holds, sets them back to base's, and
// names them. Kept Exec* keys (ExecCondition=, …) count the same way.
func dropRepeats(base, over *declaration.UnitSettings) []string {
	var keys []string
	lists := func(u *declaration.UnitSettings) []*[]string {
		return []*[]string{&u.ExecStartPre, &u.ExecStartPost, &u.ExecReload, &u.ExecStop, &u.ExecStopPost}
	}
	bl, ol := lists(base), lists(over)
	for i, key := range execListKeys {
		if repeatsOf(*bl[i], *ol[i]) {
			*ol[i] = slices.Clone(*bl[i])
			keys = append(keys, key)
		}
	}
	// Kept keys: an Exec* assignment the base holds, appended again.
	if n := len(base.SystemdKeys); len(over.SystemdKeys) > n && slices.Equal(base.SystemdKeys, over.SystemdKeys[:n]) {
		extra := over.SystemdKeys[n:]
		kept := extra[:0:0]
		for _, k := range extra {
			if strings.HasPrefix(k.Key, "Exec") && slices.Contains(base.SystemdKeys, k) {
				if !slices.Contains(keys, k.Key) {
					keys = append(keys, k.Key)
				}
				continue
			}
			kept = append(kept, k)
		}
		over.SystemdKeys = append(slices.Clone(base.SystemdKeys), kept...)
	}
	return keys
}

// repeatsOf reports whether over is base followed by one or more commands
// that base already holds.
func repeatsOf(base, over []string) bool {
	if len(over) <= len(base) || !slices.Equal(base, over[:len(base)]) {
		return false
	}
	for _, c := range over[len(base):] {
		if !slices.Contains(base, c) {
			return false
		}
	}
	return true
}

// serviceDifferences names the declaration fields (by their JSON names)
// where a and b differ once the lists systemd holds as sets are read as
// sets: dependencies, environment files and kept keys repeated verbatim.
func serviceDifferences(a, b declaration.Service) []string {
	a, b = setsNormalised(a), setsNormalised(b)
	var out []string
	av, bv := reflect.ValueOf(a), reflect.ValueOf(b)
	collectDifferences(av, bv, &out)
	return out
}

func collectDifferences(av, bv reflect.Value, out *[]string) {
	t := av.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			collectDifferences(av.Field(i), bv.Field(i), out)
			continue
		}
		if !reflect.DeepEqual(av.Field(i).Interface(), bv.Field(i).Interface()) {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" {
				name = f.Name
			}
			*out = append(*out, name)
		}
	}
}

func setsNormalised(s declaration.Service) declaration.Service {
	u := &s.UnitSettings
	for _, l := range []*[]string{&u.After, &u.Before, &u.Wants, &u.Requires, &u.WantedBy, &u.RequiredBy, &u.EnvironmentFiles} {
		*l = uniq(*l)
	}
	u.SystemdKeys = uniq(u.SystemdKeys)
	return s
}

// uniq keeps the first of each value, in order; nil stays nil.
func uniq[T comparable](in []T) []T {
	if in == nil {
		return nil
	}
	out := make([]T, 0, len(in))
	for _, v := range in {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// DropInsOf reads the drop-ins the init system applies to unit, in the
// order it applies them, and the file it loaded the unit from: "" when it
// holds none (systemd then reports no drop-ins either, although a drop-in
// directory may wait for the unit's file), or when the init system has no
// drop-ins (launchd) or cannot say where it loads units from.
func DropInsOf(ctx context.Context, m Manager, unit string) (fragment string, dropins []DropIn, err error) {
	loc, ok := m.(FileLocator)
	if !ok {
		return "", nil, nil
	}
	fragment, paths, err := loc.UnitFiles(ctx, unit)
	if err != nil {
		return "", nil, err
	}
	dropins, err = readDropInPaths(paths)
	if err != nil {
		return "", nil, fmt.Errorf("read the drop-ins of %s: %w", unit, err)
	}
	return fragment, dropins, nil
}

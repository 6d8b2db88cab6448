package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/declaration"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
)

// setAsideSuffix is added to a drop-in's name when ensure sets it aside;
// systemd reads only *.conf, so the file stays, unread.
const setAsideSuffix = ".stado-merged"

// conflictFix is what makes a refused drop-in go through. A host's
// refusal crosses the channel as its code and message, so the message
// carries it too.
const conflictFix = "adopt the unit again so the declaration holds the drop-in's settings, or remove the repeated lines from the drop-in"

// dropInsToSetAside finds the drop-ins systemd applies to s's unit that
// would repeat commands of content (the file ensure writes), which is what
// a drop-in adopt merged into the declaration does once the declaration is
// written into the unit's own file. Each one the declaration wholly holds
// is returned with how it will be set aside: one in the unit's own
// drop-in directory under the operator's configuration is renamed; any
// other (a template's or a name prefix's, which other units share, or a
// package's) is masked for this unit alone. A drop-in that also says what
// the declaration lacks, or that sits where systemd reads before the
// unit's own directory, is refused before anything is written. loaded
// reports whether systemd holds a file for the unit: when it holds none
// it reports no drop-ins either, and apply looks again after the install.
func (h *Host) dropInsToSetAside(ctx context.Context, m units.Manager, s registry.Service, content []byte) (aside []channel.SetAsideDropIn, loaded bool, err error) {
	if h.OS() != registry.OSLinux {
		return nil, true, nil
	}
	fragment, dropins, err := units.DropInsOf(ctx, m, s.Unit)
	if err != nil {
		return nil, false, err
	}
	own := filepath.Join(declaration.UnitDir(registry.OSLinux, s.EffectiveScope(), h.Home), s.Unit+".d")
	for _, r := range units.DropInsRepeating(content, s.Unit, dropins) {
		keys := strings.Join(r.Keys, ", ")
		switch {
		case !r.Held:
			return nil, false, &refusal.Error{Code: refusal.DropInConflict,
				Message: fmt.Sprintf("drop-in %s repeats commands of %s that the declaration of %s already runs, and also changes %s, which the declaration does not hold: %s",
					r.Path, keys, s.Name, strings.Join(r.Differs, ", "), conflictFix),
				Hint:    conflictFix,
				Details: r}
		case readBeforeOwnDir(r.Path):
			return nil, false, &refusal.Error{Code: refusal.DropInConflict,
				Message: fmt.Sprintf("drop-in %s repeats commands of %s that the declaration of %s already runs, and systemd reads its directory before %s, so stado can neither rename nor mask it: remove the repeated lines from the drop-in",
					r.Path, keys, s.Name, own),
				Hint:    "remove the repeated lines from the drop-in",
				Details: r}
		case filepath.Dir(r.Path) == own:
			to, err := freeName(r.Path)
			if err != nil {
				return nil, false, err
			}
			aside = append(aside, channel.SetAsideDropIn{Path: r.Path, How: channel.SetAsideRenamed, To: to, Keys: r.Keys})
		default:
			to := filepath.Join(own, filepath.Base(r.Path))
			if _, err := os.Lstat(to); !errors.Is(err, fs.ErrNotExist) {
				return nil, false, fmt.Errorf("mask drop-in %s for %s: %s is in the way", r.Path, s.Unit, to)
			}
			aside = append(aside, channel.SetAsideDropIn{Path: r.Path, How: channel.SetAsideMasked, To: to, Keys: r.Keys})
		}
	}
	return aside, fragment != "", nil
}

// readBeforeOwnDir reports whether path is in a directory systemd reads
// before the operator's unit directory (/etc/systemd/system, or
// ~/.config/systemd/user), where neither a rename under stado's rules nor a
// same-named mask reaches: the .control directories of set-property, the
// transient units, the early generators.
func readBeforeOwnDir(path string) bool {
	for _, d := range []string{"/systemd/system.control/", "/systemd/user.control/", "/systemd/transient/", "/systemd/generator.early/"} {
		if strings.Contains(path, d) {
			return true
		}
	}
	return false
}

// freeName is the first of path.stado-merged, path.stado-merged-2, … that
// does not exist.
func freeName(path string) (string, error) {
	for i := 1; i <= 100; i++ {
		to := path + setAsideSuffix
		if i > 1 {
			to += fmt.Sprintf("-%d", i)
		}
		_, err := os.Lstat(to)
		if errors.Is(err, fs.ErrNotExist) {
			return to, nil
		}
		if err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("set aside %s: 100 earlier set-aside copies are in the way", path)
}

// setAside sets each drop-in aside as its How says, replacing nothing: a
// rename is a link under the new name and then the old name removed; a
// mask is a new link to /dev/null. It returns the ones set aside, all of
// them unless the error says otherwise.
func setAside(list []channel.SetAsideDropIn) ([]channel.SetAsideDropIn, error) {
	for i, d := range list {
		if err := setAsideOne(d); err != nil {
			return list[:i], fmt.Errorf("set aside drop-in %s: %w", d.Path, err)
		}
	}
	return list, nil
}

func setAsideOne(d channel.SetAsideDropIn) error {
	if d.How == channel.SetAsideMasked {
		if err := os.MkdirAll(filepath.Dir(d.To), 0o755); err != nil {
			return err
		}
		return os.Symlink(os.DevNull, d.To)
	}
	if err := os.Link(d.Path, d.To); err != nil {
		return err
	}
	if err := os.Remove(d.Path); err != nil {
		_ = os.Remove(d.To)
		return err
	}
	return nil
}

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
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
)

// setAsideSuffix is added to a drop-in's name when ensure sets it aside;
// systemd reads only *.conf, so the file stays, unread.
const setAsideSuffix = ".stado-merged"

// dropInsToSetAside finds the drop-ins systemd applies to s's unit that
// would repeat commands of content (the file ensure writes), which is what
// a drop-in adopt merged into the declaration does once the declaration is
// written into the unit's own file. Each one the declaration wholly holds,
// in a directory the operator owns (/etc/systemd, the user's
// ~/.config/systemd), is returned to be set aside, with the name it will
// get. Any other is refused before anything is written: setting it aside
// would lose a setting, or it belongs to a package.
func (h *Host) dropInsToSetAside(ctx context.Context, m units.Manager, s registry.Service, content []byte) ([]channel.SetAsideDropIn, error) {
	if h.OS() != registry.OSLinux {
		return nil, nil
	}
	dropins, err := units.DropInsOf(ctx, m, s.Unit)
	if err != nil || len(dropins) == 0 {
		return nil, err
	}
	var out []channel.SetAsideDropIn
	taken := map[string]bool{}
	for _, r := range units.DropInsRepeating(content, s.Unit, dropins) {
		keys := strings.Join(r.Keys, ", ")
		if !r.Held {
			return nil, &refusal.Error{Code: refusal.DropInConflict,
				Message: fmt.Sprintf("drop-in %s repeats commands of %s that the declaration of %s already runs, and also changes %s, which the declaration does not hold",
					r.Path, keys, s.Name, strings.Join(r.Differs, ", ")),
				Hint:    "adopt the unit again so the declaration holds the drop-in's settings, or remove the repeated lines from the drop-in",
				Details: r}
		}
		if !h.operatorOwns(r.Path) {
			return nil, &refusal.Error{Code: refusal.DropInConflict,
				Message: fmt.Sprintf("drop-in %s repeats commands of %s that the declaration of %s already runs, and it belongs to a package or the runtime, so stado does not rename it",
					r.Path, keys, s.Name),
				Hint: fmt.Sprintf("mask it with a link of the same name to /dev/null: ln -s /dev/null %s",
					filepath.Join(h.configUnitDir(s), filepath.Base(filepath.Dir(r.Path)), filepath.Base(r.Path))),
				Details: r}
		}
		to, err := freeName(r.Path, taken)
		if err != nil {
			return nil, err
		}
		taken[to] = true
		out = append(out, channel.SetAsideDropIn{Path: r.Path, To: to, Keys: r.Keys})
	}
	return out, nil
}

// operatorOwns reports whether path is in a unit directory the host's
// operator writes (not a package's, not the runtime's).
func (h *Host) operatorOwns(path string) bool {
	if strings.HasPrefix(path, "/etc/systemd/") {
		return true
	}
	return h.Home != "" && strings.HasPrefix(path, filepath.Join(h.Home, ".config", "systemd")+"/")
}

// configUnitDir is where the operator's units of s's scope live.
func (h *Host) configUnitDir(s registry.Service) string {
	if s.EffectiveScope() == registry.ScopeUser && h.Home != "" {
		return filepath.Join(h.Home, ".config", "systemd", "user")
	}
	return "/etc/systemd/system"
}

// freeName is the first of path.stado-merged, path.stado-merged-2, … that
// neither exists nor is already taken.
func freeName(path string, taken map[string]bool) (string, error) {
	for i := 1; i <= 100; i++ {
		to := path + setAsideSuffix
		if i > 1 {
			to += fmt.Sprintf("-%d", i)
		}
		if taken[to] {
			continue
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

// setAside renames each drop-in to its new name without replacing anything
// there: a link under the new name, then the old name removed. It returns
// the ones set aside, all of them unless the error says otherwise.
func setAside(list []channel.SetAsideDropIn) ([]channel.SetAsideDropIn, error) {
	for i, d := range list {
		if err := os.Link(d.Path, d.To); err != nil {
			return list[:i], fmt.Errorf("set aside drop-in %s: %w", d.Path, err)
		}
		if err := os.Remove(d.Path); err != nil {
			_ = os.Remove(d.To)
			return list[:i], fmt.Errorf("set aside drop-in %s: %w", d.Path, err)
		}
	}
	return list, nil
}

package safefile

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// TempPrefix starts the name of every temporary file Write creates
// (".tmp~<name>~<random>"), so a directory listing can pass them over.
const TempPrefix = ".tmp~"

// Write replaces path with data so that a reader sees either the old file
// or the new one, never a part of either, and so that the new content
// survives a crash once Write returns nil. It writes a temporary file in
// the same directory, gives it perm, syncs and closes it, renames it over
// path and syncs the directory. The directory must exist. On error the
// temporary file is removed and path is left as it was; the error wraps
// the *fs.PathError or syscall error that caused it. Write takes no lock:
// two concurrent writers of one path both succeed and the last rename
// wins, so callers that read, modify and write hold a Lock around it.
func Write(path string, data []byte, perm fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, TempPrefix+filepath.Base(path)+"~*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err = d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

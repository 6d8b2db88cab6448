package release

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/safefile"
)

// RootEnv overrides where a host keeps its release files.
const RootEnv = "STADO_RELEASE_DIR"

// SystemRoot is where a host process running as root keeps its release
// files: pinned keys, images, the current links and the state file.
const SystemRoot = "/var/lib/stado/release"

// MaxStateBytes bounds the state file a reader accepts.
const MaxStateBytes = 1 << 20

// Root returns the release directory of this host: $STADO_RELEASE_DIR when
// set, SystemRoot for root, else ~/.stado/release under home.
func Root(getenv func(string) string, euid int, home string) string {
	if v := getenv(RootEnv); v != "" {
		return v
	}
	if euid == 0 {
		return SystemRoot
	}
	return filepath.Join(home, ".stado", "release")
}

// KeysDir holds the pinned public keys (*.pub, minisign format).
func KeysDir(root string) string { return filepath.Join(root, "keys") }

// ImagesDir holds one read-only directory per installed image.
func ImagesDir(root string) string { return filepath.Join(root, "images") }

// ImageDir is the immutable directory of the image with digest sha.
func ImageDir(root, sha string) string { return filepath.Join(ImagesDir(root), sha) }

// ImagePath is the program of product inside the image with digest sha.
func ImagePath(root, sha, product string) string { return filepath.Join(ImageDir(root, sha), product) }

// CurrentLink is the stable path a declaration's program names: a symlink
// to the active image's program, switched atomically on activation.
func CurrentLink(root, product string) string { return filepath.Join(root, "current", product) }

// StateFile is the host's release state (HostState), replaced atomically.
func StateFile(root string) string { return filepath.Join(root, "state.json") }

// ReadHostState reads root's state file. A missing file is an empty state;
// a file that cannot be read or is not a state document is refused naming it.
func ReadHostState(root string) (HostState, error) {
	path := StateFile(root)
	st := HostState{Kind: KindState, Products: map[string]ProductState{}}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, refusal.New(refusal.Unreadable, "release state %s: %v", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxStateBytes+1))
	if err != nil {
		return st, refusal.New(refusal.Unreadable, "release state %s: %v", path, err)
	}
	n := len(b)
	buf := b
	if n > MaxStateBytes {
		return st, refusal.New(refusal.Unreadable, "release state %s is larger than %d bytes", path, MaxStateBytes)
	}
	var got HostState
	if err := json.Unmarshal(buf[:n], &got); err != nil || got.Kind != KindState {
		if err == nil {
			err = fmt.Errorf("kind %q, want %q", got.Kind, KindState)
		}
		return st, refusal.New(refusal.Unreadable, "release state %s is not a release state document: %v", path, err)
	}
	if got.Products == nil {
		got.Products = map[string]ProductState{}
	}
	return got, nil
}

// WriteHostState replaces root's state file atomically (0644: the beacon
// publishes it anyway; it holds no secret).
func WriteHostState(root string, st HostState) error {
	st.Kind = KindState
	if st.Products == nil {
		st.Products = map[string]ProductState{}
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	return safefile.Write(StateFile(root), append(b, '\n'), 0o644)
}

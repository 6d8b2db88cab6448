package release

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"aead.dev/minisign"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/safefile"
)

// DefaultKeyName names a generated key pair: stado-release.pub and
// stado-release.key.
const DefaultKeyName = "stado-release"

// PasswordEnv holds the password of a release key; stado never takes it
// from a flag, so it shows in no process list and no shell history.
const PasswordEnv = "STADO_RELEASE_KEY_PASSWORD"

// maxKeyFileBytes bounds a key file a reader accepts (a minisign key file
// is about 250 bytes).
const maxKeyFileBytes = 4 << 10

// KeyID is a key's minisign id as minisign prints it: 16 uppercase hex
// digits.
func KeyID(id uint64) string { return fmt.Sprintf("%016X", id) }

// GenerateKey writes a new minisign key pair into dir: NAME.pub (0644, the
// public key hosts pin under KeysDir) and NAME.key (0600, the private key,
// encrypted with password unless it is empty — minisign's scrypt format,
// which costs about a second and 1 GiB of memory to open). Both files are
// minisign's own formats: the minisign tool verifies with the .pub and
// signs with the .key. It refuses (conflict) when either file exists: a
// key is never overwritten. It returns both paths.
func GenerateKey(dir, name, password string) (pubPath, keyPath string, err error) {
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." || strings.HasPrefix(name, ".") {
		return "", "", refusal.New(refusal.Validation, "key name %q: want a file name without '/' that does not start with '.'", name)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", fmt.Errorf("generate key: %w", err)
	}
	pubPath, keyPath = filepath.Join(dir, name+".pub"), filepath.Join(dir, name+".key")
	for _, p := range []string{pubPath, keyPath} {
		if _, err := os.Lstat(p); err == nil {
			return "", "", &refusal.Error{Code: refusal.Conflict, Message: fmt.Sprintf("%s exists; stado never overwrites a key", p),
				Hint: "choose another --name or --out, or move the old key away yourself"}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", "", fmt.Errorf("generate key: %w", err)
		}
	}
	pub, priv, err := minisign.GenerateKey(nil)
	if err != nil {
		return "", "", fmt.Errorf("generate key: %w", err)
	}
	var keyText []byte
	if password != "" {
		keyText, err = minisign.EncryptKey(password, priv)
	} else {
		keyText, err = priv.MarshalText()
	}
	if err != nil {
		return "", "", fmt.Errorf("generate key: %w", err)
	}
	pubText, _ := pub.MarshalText()
	// The private key first: a .pub without its .key is harmless, the
	// other way round a key no host would ever trust.
	if err := safefile.Write(keyPath, append(keyText, '\n'), 0o600); err != nil {
		return "", "", fmt.Errorf("generate key: %w", err)
	}
	if err := safefile.Write(pubPath, append(pubText, '\n'), 0o644); err != nil {
		return "", "", fmt.Errorf("generate key: %w", err)
	}
	return pubPath, keyPath, nil
}

// readSmall reads a key file of at most maxKeyFileBytes.
func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes+1))
	if err == nil && len(b) > maxKeyFileBytes {
		err = fmt.Errorf("larger than %d bytes", maxKeyFileBytes)
	}
	return b, err
}

// LoadPrivateKey reads a minisign private key file: an encrypted one
// (minisign -G, GenerateKey with a password) is opened with password, an
// unencrypted one (minisign -G -W) needs none. A missing or unreadable
// file is an unreadable refusal, a wrong password or a file that is no key
// a validation refusal, each naming the file.
func LoadPrivateKey(path, password string) (minisign.PrivateKey, error) {
	b, err := readSmall(path)
	if err != nil {
		return minisign.PrivateKey{}, refusal.New(refusal.Unreadable, "release key %s: %v", path, err)
	}
	var key minisign.PrivateKey
	if minisign.IsEncrypted(b) {
		if password == "" {
			return key, &refusal.Error{Code: refusal.Validation, Message: fmt.Sprintf("release key %s is encrypted and no password was given", path),
				Hint: "set " + PasswordEnv}
		}
		key, err = minisign.DecryptKey(password, b)
		if err != nil {
			return key, refusal.New(refusal.Validation, "release key %s: wrong password, or not a minisign private key", path)
		}
		return key, nil
	}
	if err := key.UnmarshalText(b); err != nil {
		return key, refusal.New(refusal.Validation, "release key %s is not a minisign private key: %v", path, err)
	}
	return key, nil
}

// LoadPublicKey reads one minisign public key file; a file that is not a
// key is a validation refusal naming it.
func LoadPublicKey(path string) (minisign.PublicKey, error) {
	b, err := readSmall(path)
	if err != nil {
		return minisign.PublicKey{}, refusal.New(refusal.Unreadable, "release public key %s: %v", path, err)
	}
	var key minisign.PublicKey
	if err := key.UnmarshalText(b); err != nil {
		return key, refusal.New(refusal.Validation, "release public key %s is not a minisign public key: %v", path, err)
	}
	return key, nil
}

// LoadPublicKeys reads every *.pub file of dir (minisign public keys), in
// name order; a file that is not a key is refused naming it. An empty or
// missing dir is a release_no_keys refusal. It touches the host's files
// only to read them.
func LoadPublicKeys(dir string) ([]minisign.PublicKey, error) {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, refusal.New(refusal.Unreadable, "release keys %s: %v", dir, err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".pub") && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return nil, &refusal.Error{Code: refusal.ReleaseNoKeys, Message: fmt.Sprintf("no release key is pinned in %s", dir),
			Hint: "copy the publisher's .pub file there (stado release key generate writes one)"}
	}
	keys := make([]minisign.PublicKey, 0, len(names))
	for _, n := range names {
		k, err := LoadPublicKey(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, nil
}

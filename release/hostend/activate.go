package hostend

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"aead.dev/minisign"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/release"
	"github.com/wisent/stado/safefile"
)

// ModePlan is the request mode that changes nothing.
const ModePlan = "plan"

// checked is what the checks of an activation found, before anything is
// written.
type checked struct {
	m         release.Manifest
	st        release.HostState
	prev      release.ProductState
	image     release.Image
	installed bool   // images/<sha> is there and holds its digest
	bytes     []byte // the verified bytes when they had to be fetched
	fetched   string
}

// Activate makes req's product version the active image on this host, in
// this order:
//
//  1. Check, writing nothing under images/, current/ or state.json: the
//     host pins keys (release_no_keys); the signed manifest of product,
//     version and this host's GOOS/GOARCH verifies against one of them and
//     names exactly that (release_unsigned, release_untrusted,
//     release_mismatch); it is not older than the active version unless
//     req.Pinned (release_downgrade); an installed image of its digest
//     still holds that digest (release_image_corrupt), else the bytes are
//     fetched and every chunk and the whole file verified
//     (release_tampered, release_digest_mismatch).
//  2. The same digest active, its link in place and (with a unit) the
//     unit's main pid running the image: OutcomeUnchanged, nothing written
//     and no restart.
//  3. Install the image (temp directory under images/, fsync, read-only,
//     rename to images/<sha>); an image already there is never rewritten.
//  4. Record the state before switching: the active image becomes the
//     exact backup.
//  5. Switch current/<product> atomically.
//  6. With a unit: restart it and prove, within req.Wait, a fresh nonzero
//     main pid whose executable is the new image, holding for the settle
//     time, then the serving read when req.Port is set, and for product
//     stado a beacon published by the new version.
//  7. A failed proof switches back to the backup, restarts and proves it,
//     records OutcomeRestored and refuses release_not_proven with the
//     failing image's evidence; a backup that cannot be proven either is
//     release_restore_failed. With no other image to come back to (a first
//     install, or the image already active did not run), the link goes
//     back to what it was (removed when there was none), OutcomeFailed is
//     recorded and the refusal is release_not_proven.
//  8. Without a unit: OutcomeInstalled.
//
// Plan mode makes the checks of 1 and 2 and answers OutcomeUnchanged or
// OutcomeWouldActivate. A refusal returned after step 3 carries the
// ActivateResult as its Details. Activations of one host are serialized by
// a lock file in Root.
func (h *Host) Activate(ctx context.Context, req release.ActivateRequest) (release.ActivateResult, error) {
	res := release.ActivateResult{Product: req.Product}
	wait, err := checkWait(req.Wait)
	if err != nil {
		return res, err
	}
	if err := checkProductPath(req.Product); err != nil {
		return res, err
	}
	if h.Root == "" {
		return res, refusal.New(refusal.InvalidPath, "this host has no release directory")
	}
	if req.Unit != "" && (h.Init == nil || h.Exe == nil) {
		return res, refusal.New(refusal.NoManager, "this host has no init system wired to restart %s", req.Unit)
	}
	if req.Port > 0 && req.Unit != "" && h.Serving == nil {
		return res, refusal.New(refusal.NoManager, "this host cannot read who serves port %d", req.Port)
	}
	if req.Product == ProductStado && req.Unit != "" && h.BeaconProof == nil {
		return res, refusal.New(refusal.NoManager, "this host cannot read its own beacon, which proves a stado activation")
	}
	keys, err := h.keys()
	if err != nil {
		return res, err
	}
	if len(keys) == 0 {
		return res, refusal.New(refusal.ReleaseNoKeys, "no release key is pinned in %s", release.KeysDir(h.Root))
	}
	if req.Mode != ModePlan {
		if err := os.MkdirAll(h.Root, 0o755); err != nil {
			return res, fmt.Errorf("create %s: %w", h.Root, err)
		}
		unlock, err := safefile.Lock(ctx, filepath.Join(h.Root, "activate.lock"))
		if err != nil {
			return res, fmt.Errorf("lock %s: %w", h.Root, err)
		}
		defer unlock()
	}
	c, err := h.check(ctx, req, keys, req.Mode == ModePlan)
	if err != nil {
		return res, err
	}
	res.Active, res.Backup, res.Fetched = c.prev.Active, c.prev.Backup, c.fetched
	unchanged, err := h.unchanged(ctx, req, c)
	if err != nil {
		return res, err
	}
	if unchanged {
		res.Outcome = release.OutcomeUnchanged
		return res, nil
	}
	if req.Mode == ModePlan {
		res.Outcome = release.OutcomeWouldActivate
		return res, nil
	}
	if !c.installed {
		if err := installImage(h.Root, c.image, c.bytes); err != nil {
			return res, err
		}
	}
	return h.activate(ctx, req, c, wait)
}

// checkProductPath refuses a product name that is not one path element:
// the name places files under the release directory.
func checkProductPath(p string) error {
	if p == "" || p == "." || p == ".." || strings.ContainsAny(p, "/\\\x00") {
		return refusal.New(refusal.Validation, "product %q is not a product name", p)
	}
	return nil
}

// check is step 1: everything that can refuse, before anything is written.
func (h *Host) check(ctx context.Context, req release.ActivateRequest, keys []minisign.PublicKey, plan bool) (checked, error) {
	var c checked
	if h.Source == nil {
		return c, refusal.New(refusal.NotFound, "this host names no store to read releases from")
	}
	s, err := h.Source.Signed(ctx, req.Product, req.Version, h.goos(), h.goarch())
	if err != nil {
		return c, err
	}
	m, err := h.verify(s, keys, req.Product, req.Version)
	if err != nil {
		return c, err
	}
	if m.Product != req.Product || m.Version != req.Version || m.OS != h.goos() || m.Arch != h.goarch() {
		return c, refusal.New(refusal.ReleaseMismatch, "the signed manifest names %s %s %s/%s, not %s %s %s/%s",
			m.Product, m.Version, m.OS, m.Arch, req.Product, req.Version, h.goos(), h.goarch())
	}
	if !validDigest(m.SHA256) {
		return c, refusal.New(refusal.ReleaseMismatch, "the signed manifest of %s %s names digest %q, which is not a sha256", m.Product, m.Version, m.SHA256)
	}
	c.m = m
	c.st, err = release.ReadHostState(h.Root)
	if err != nil {
		return c, err
	}
	c.prev = c.st.Products[req.Product]
	if a := c.prev.Active; a != nil && a.SHA256 != m.SHA256 && !req.Pinned && h.compare(m.Version, a.Version) < 0 {
		return c, &refusal.Error{Code: refusal.ReleaseDowngrade,
			Message: fmt.Sprintf("%s %s is older than the active %s and the registry does not pin it", req.Product, m.Version, a.Version),
			Hint:    "pin the version in the registry (release version set ... with pin) to go back to it"}
	}
	c.image = release.Image{Product: req.Product, Version: m.Version, SHA256: m.SHA256, Path: release.ImagePath(h.Root, m.SHA256, req.Product)}
	switch err := checkInstalled(c.image); {
	case err == nil:
		c.installed = true
		return c, nil
	case !errors.Is(err, fs.ErrNotExist):
		return c, err
	}
	b, from, err := h.Source.Fetch(ctx, m)
	if err != nil {
		return c, err
	}
	// The source checked the chunks; the whole is checked here again, as
	// what this host writes must be exactly what was signed.
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != m.SHA256 || int64(len(b)) != m.Size {
		return c, refusal.New(refusal.ReleaseDigest, "the bytes of %s %s are %d bytes with sha256 %s; the signed manifest says %d bytes with %s",
			req.Product, m.Version, len(b), hex.EncodeToString(sum[:]), m.Size, m.SHA256)
	}
	c.bytes, c.fetched = b, from
	return c, nil
}

func validDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// checkInstalled says whether im's directory is installed and still holds
// its digest: an fs.ErrNotExist error when there is no directory, a
// release_image_corrupt refusal when its file is missing or differs.
func checkInstalled(im release.Image) error {
	dir := filepath.Dir(im.Path)
	if _, err := os.Lstat(dir); err != nil {
		return err
	}
	got, err := fileDigest(im.Path)
	if err != nil {
		return refusal.New(refusal.ReleaseImageCorrupt, "image %s holds no readable %s: %v", dir, im.Product, err)
	}
	if got != im.SHA256 {
		return refusal.New(refusal.ReleaseImageCorrupt, "image %s no longer holds its digest: %s has sha256 %s; it is never rewritten", dir, im.Path, got)
	}
	return nil
}

func fileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	hsh := sha256.New()
	if _, err := io.Copy(hsh, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(hsh.Sum(nil)), nil
}

// unchanged is step 2: the digest active, the link on it and, with a
// unit, the unit's main pid running it.
func (h *Host) unchanged(ctx context.Context, req release.ActivateRequest, c checked) (bool, error) {
	a := c.prev.Active
	if a == nil || a.SHA256 != c.m.SHA256 || !c.installed {
		return false, nil
	}
	if target, err := os.Readlink(release.CurrentLink(h.Root, req.Product)); err != nil || target != c.image.Path {
		return false, nil
	}
	if req.Unit == "" {
		return true, nil
	}
	v, err := h.Init.Show(ctx, req.Scope, req.Unit)
	if err != nil {
		return false, err
	}
	if v.PID <= 0 {
		return false, nil
	}
	exe, err := h.Exe(ctx, req.Scope, req.Unit, v.PID)
	if err != nil {
		return false, nil
	}
	return sameFile(exe, c.image.Path), nil
}

// sameFile compares an executable path read from the host with an image
// path, both with symlinks resolved.
func sameFile(exe, image string) bool {
	return resolve(exe) == resolve(image)
}

func resolve(p string) string {
	p = strings.TrimSuffix(p, " (deleted)")
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// installImage is step 3: the bytes go to a temporary directory under
// images/, synced and made read-only, then renamed to images/<sha>. An
// image that appeared meanwhile is checked, never rewritten.
func installImage(root string, im release.Image, b []byte) (err error) {
	images := release.ImagesDir(root)
	if err := os.MkdirAll(images, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", images, err)
	}
	tmp, err := os.MkdirTemp(images, ".install-")
	if err != nil {
		return fmt.Errorf("create a directory under %s: %w", images, err)
	}
	defer func() {
		if err != nil {
			_ = os.Chmod(tmp, 0o755)
			_ = os.RemoveAll(tmp)
		}
	}()
	file := filepath.Join(tmp, im.Product)
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o700)
	if err != nil {
		return fmt.Errorf("install %s: %w", im.Path, err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("install %s: %w", im.Path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("install %s: %w", im.Path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("install %s: %w", im.Path, err)
	}
	if err := os.Chmod(file, 0o555); err != nil {
		return err
	}
	if err := syncDir(tmp); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o555); err != nil {
		return err
	}
	dir := release.ImageDir(root, im.SHA256)
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Lstat(dir); serr == nil {
			if cerr := checkInstalled(im); cerr != nil {
				return cerr
			}
			_ = os.Chmod(tmp, 0o755)
			_ = os.RemoveAll(tmp)
			return nil
		}
		return fmt.Errorf("install %s: %w", dir, err)
	}
	return syncDir(images)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// switchLink is step 5: current/<product> names target, replaced by a
// rename so a reader sees the old link or the new one.
func switchLink(root, product, target string) error {
	link := release.CurrentLink(root, product)
	dir := filepath.Dir(link)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	tmp := filepath.Join(dir, "."+product+".switch")
	_ = os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return fmt.Errorf("switch %s: %w", link, err)
	}
	if err := os.Rename(tmp, link); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("switch %s: %w", link, err)
	}
	return syncDir(dir)
}

// removeLink takes current/<product> away (a first install that failed).
func removeLink(root, product string) error {
	link := release.CurrentLink(root, product)
	if err := os.Remove(link); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", link, err)
	}
	return syncDir(filepath.Dir(link))
}

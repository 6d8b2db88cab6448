package release

import (
	"fmt"
	"io"
	"os"

	"github.com/wisent/stado/refusal"
)

// ReadImage reads the file at path to publish. A file over MaxImageBytes
// is refused with content_too_large before any byte is read; one that grows
// past the bound while it is read is read one byte beyond it, which Publish
// refuses. Other errors are the file system's, naming path.
func ReadImage(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > MaxImageBytes {
		return nil, refusal.New(refusal.ContentTooLarge, "%s is %d bytes, the limit of a release is %d", path, fi.Size(), int64(MaxImageBytes))
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxImageBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, nil
}

package store

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidKey: a store key breaks the key grammar (see ValidateKey).
var ErrInvalidKey = errors.New("invalid store key")

// MaxKeyLength bounds a key so that every backend can hold it (the file
// backend keeps one file per key, and file names are at most 255 bytes).
const MaxKeyLength = 160

// ValidateKey checks a store key: non-empty, at most MaxKeyLength bytes,
// slash-separated non-empty segments, no "." or ".." anywhere a path could
// climb, no NUL. Every backend refuses a bad key with an error wrapping
// ErrInvalidKey before touching storage.
func ValidateKey(key string) error {
	bad := func(why string) error { return fmt.Errorf("key %q: %s: %w", key, why, ErrInvalidKey) }
	switch {
	case key == "":
		return bad("empty")
	case len(key) > MaxKeyLength:
		return bad(fmt.Sprintf("longer than %d bytes", MaxKeyLength))
	case strings.ContainsRune(key, 0):
		return bad("contains NUL")
	case strings.Contains(key, ".."):
		return bad("contains '..'")
	}
	for _, seg := range strings.Split(key, "/") {
		switch seg {
		case "":
			return bad("empty segment")
		case ".":
			return bad("segment '.'")
		}
	}
	return nil
}

// validatePrefix checks a List prefix: empty (everything) or a key prefix
// free of NUL and "..".
func validatePrefix(prefix string) error {
	if strings.ContainsRune(prefix, 0) || strings.Contains(prefix, "..") || len(prefix) > MaxKeyLength {
		return fmt.Errorf("prefix %q: %w", prefix, ErrInvalidKey)
	}
	return nil
}

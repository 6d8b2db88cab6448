package safefile

// SetOpenedHook makes every lock attempt call f between opening the lock
// file and trying its flock, until the returned function restores it. Not
// safe to call while locks are being taken.
func SetOpenedHook(f func()) (restore func()) {
	old := openedHook
	openedHook = f
	return func() { openedHook = old }
}

package beacon

import (
	"cmp"
	"strings"
	"time"
)

// ConfigFor is the pass configuration of a host process publishing to the
// store storeURL names every interval, its beacons distrusted after
// staleAfter (0: 3 × interval). On etcd a dead host's beacon expires by
// itself after that bound (TTL); the file store keeps it.
func ConfigFor(storeURL string, interval, staleAfter time.Duration) Config {
	c := Config{Interval: interval, StaleAfter: staleAfter}
	if strings.HasPrefix(storeURL, "etcd://") {
		c.TTL = cmp.Or(max(staleAfter, 0), 3*interval)
	}
	return c
}

package declaration

import "strings"

// Charset is a set of bytes. Names are checked against charsets rather than
// regular expressions because validation runs over every declaration of a
// large fleet on every read-modify-write; registry checks its own names
// (hosts, users, alert channels) with the same tools.
type Charset [256]bool

// Chars builds a Charset from ranges such as "a-z0-9-" (a '-' that ends the
// spec is literal).
func Chars(spec string) *Charset {
	var c Charset
	for i := 0; i < len(spec); i++ {
		if i+2 < len(spec) && spec[i+1] == '-' {
			for b := int(spec[i]); b <= int(spec[i+2]); b++ {
				c[b] = true
			}
			i += 2
			continue
		}
		c[spec[i]] = true
	}
	return &c
}

// Grammar reports whether s is 1..max bytes, its first byte in first and
// every other byte in rest.
func Grammar(s string, first, rest *Charset, max int) bool {
	if len(s) == 0 || len(s) > max || !first[s[0]] {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !rest[s[i]] {
			return false
		}
	}
	return true
}

// Dotted calls ok on each '.'-separated part of s, without allocating, and
// reports whether every part passed.
func Dotted(s string, ok func(string) bool) bool {
	for {
		part, rest, more := strings.Cut(s, ".")
		if !ok(part) {
			return false
		}
		if !more {
			return true
		}
		s = rest
	}
}

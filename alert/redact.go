package alert

import (
	"encoding/base64"
	"errors"
	"net/url"
	"sort"
	"strings"
)

// minSecretLen is the shortest part of a webhook URL that redaction hunts
// for in text. A shorter part would blank ordinary words of a cause; the
// URL's path and query themselves are never printed (RedactedURL), so a
// short part can reach a cause only inside a message that spells it apart
// from the URL, which no cause carries (a webhook's answer is never
// recorded).
const minSecretLen = 4

// redacted replaces every spelling of a secret in a cause.
const redacted = "<redacted>"

// redactWebhookError says err without the webhook URL raw (which may hold
// a token in its user info, path or query). Every *url.Error in the chain
// is said with the redacted URL instead of the one net/http prints, which
// may be spelled differently from the registry's text (an upper-case
// scheme, an escaped space or non-ASCII path, a re-encoded query); what
// remains is stripped of every spelling of the URL and of its parts.
func redactWebhookError(err error, raw string) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return redactWebhookText(ue.Op, raw) + " " + RedactedURL(raw) + ": " + redactWebhookError(ue.Err, raw)
	}
	return redactWebhookText(err.Error(), raw)
}

// RedactedURL is what may be said of a webhook URL: its scheme and host,
// never its user info, path or query.
func RedactedURL(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" {
		return "<webhook url>"
	}
	return strings.ToLower(u.Scheme) + "://" + u.Host + "/<redacted>"
}

// secretParts returns, decoded, every part of the webhook URL raw that may
// hold a secret, longest first: the URL itself; its user info (the name,
// the password, name:password, and the Basic-auth base64 that net/http
// sends for them, in every base64 alphabet and padding); its path, every
// path segment (split before unescaping, so a token with an escaped slash
// is one segment), its query, every query key and value, its fragment and
// opaque part; and each of those lower- and upper-cased (the matcher folds
// ASCII case itself; this adds non-ASCII folding). Parts shorter than
// minSecretLen are left out. A part is hunted even where the host spells
// it (a path segment "hook" blanks part of hooks.example in a dial error):
// a cause may read worse, never say more.
func secretParts(raw string) []string {
	seen := map[string]bool{}
	var parts []string
	add := func(ss ...string) {
		for _, s := range ss {
			for _, v := range []string{s, strings.ToLower(s), strings.ToUpper(s)} {
				if len(v) >= minSecretLen && !seen[v] {
					seen[v] = true
					parts = append(parts, v)
				}
			}
		}
	}
	add(raw, strings.TrimSpace(raw))
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		// An unparsable URL is redacted whole and in its pieces between
		// the URL's delimiters.
		for _, f := range strings.FieldsFunc(raw, func(r rune) bool { return strings.ContainsRune(":/?#[]@&=;", r) }) {
			add(f)
		}
		return longestFirst(parts)
	}
	add(u.String(), u.Redacted(), u.Path, u.EscapedPath(), u.RawPath, u.RawQuery, u.Fragment, u.RawFragment, u.Opaque)
	if q, err := url.QueryUnescape(u.RawQuery); err == nil {
		add(q)
	}
	for k, vs := range u.Query() {
		add(k)
		add(vs...)
	}
	// Pieces of the query between its delimiters, raw: a value the query
	// parser refuses (a bad escape) is still a value.
	for _, f := range strings.FieldsFunc(u.RawQuery, func(r rune) bool { return r == '&' || r == ';' || r == '=' }) {
		add(f)
		if d, err := url.QueryUnescape(f); err == nil {
			add(d)
		}
	}
	for _, seg := range strings.Split(u.EscapedPath(), "/") {
		add(seg)
		if d, err := url.PathUnescape(seg); err == nil {
			add(d)
		}
	}
	if u.User != nil {
		name := u.User.Username()
		pass, hasPass := u.User.Password()
		add(u.User.String(), name, pass, name+":"+pass)
		basic := []string{name + ":" + pass}
		if hasPass {
			basic = append(basic, pass)
		}
		for _, s := range basic {
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
				add(enc.EncodeToString([]byte(s)))
			}
		}
	}
	return longestFirst(parts)
}

func longestFirst(parts []string) []string {
	sort.SliceStable(parts, func(i, j int) bool { return len(parts[i]) > len(parts[j]) })
	return parts
}

// redactWebhookText replaces in msg every spelling of every secret part of
// the webhook URL raw (secretParts) with <redacted>. A spelling is the part
// byte by byte, each byte written as itself in either ASCII case, as a
// percent escape (either hex case, once or twice encoded: %61, %2F, %2561),
// as + for a space, or as a backslash escape (\", \\, \x61, \u0061); so a
// part is found decoded, case-folded and percent- or quote-encoded, in any
// mix. At each position the longest spelling wins.
func redactWebhookText(msg, raw string) string {
	if raw == "" || msg == "" {
		return msg
	}
	parts := secretParts(raw)
	var b strings.Builder
	for i := 0; i < len(msg); {
		best := 0
		for _, p := range parts {
			if n := spelledAt(msg[i:], p); n > best {
				best = n
			}
		}
		if best > 0 {
			b.WriteString(redacted)
			i += best
			continue
		}
		b.WriteByte(msg[i])
		i++
	}
	return b.String()
}

// spelledAt returns the length of the prefix of s that spells secret, or 0.
func spelledAt(s, secret string) int {
	j := 0
	for k := 0; k < len(secret); k++ {
		n := byteAt(s[j:], secret[k])
		if n == 0 {
			return 0
		}
		j += n
	}
	return j
}

// byteAt returns the length of the prefix of s that spells the byte c, or 0.
func byteAt(s string, c byte) int {
	if s == "" {
		return 0
	}
	switch {
	case foldEqual(s[0], c):
		return 1
	case s[0] == '+' && c == ' ':
		return 1
	case s[0] == '%':
		if v, ok := hexByte(s[1:]); ok {
			if foldEqual(v, c) {
				return 3
			}
			// %25 is an escaped %: a twice-encoded byte, %2561.
			if v == '%' {
				if w, ok := hexByte(s[3:]); ok && foldEqual(w, c) {
					return 5
				}
			}
		}
	case s[0] == '\\' && len(s) >= 2:
		switch s[1] {
		case 'x':
			if v, ok := hexByte(s[2:]); ok && foldEqual(v, c) {
				return 4
			}
		case 'u':
			if len(s) >= 6 && s[2] == '0' && s[3] == '0' {
				if v, ok := hexByte(s[4:]); ok && foldEqual(v, c) {
					return 6
				}
			}
		default:
			if s[1] == c {
				return 2
			}
		}
	}
	return 0
}

// foldEqual says whether a and b are the same byte up to ASCII case.
func foldEqual(a, b byte) bool {
	return a == b || ('A' <= a && a <= 'Z' && a+'a'-'A' == b) || ('a' <= a && a <= 'z' && a-('a'-'A') == b)
}

// hexByte decodes the two hex digits that start s.
func hexByte(s string) (byte, bool) {
	if len(s) < 2 {
		return 0, false
	}
	hi, ok1 := unhex(s[0])
	lo, ok2 := unhex(s[1])
	return hi<<4 | lo, ok1 && ok2
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

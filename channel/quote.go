package channel

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds of one command line.
const (
	MaxCommandBytes = 64 << 10 // the whole SSH_ORIGINAL_COMMAND
	MaxWords        = 128      // words in one command
)

// plainByte reports whether c may appear in a word outside single quotes.
// The set holds no byte a POSIX shell treats specially, so a quoted command
// means the same to this grammar and to a shell (when a key is not
// restricted to the forced command, sshd hands the line to the login shell).
func plainByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("_./:@%+=,-", c) >= 0
}

// Quote joins argv into one command string the remote grammar splits back
// into exactly argv: a word made only of plain bytes is sent as it is, any
// other word inside single quotes. It returns a *Refusal (before anything is
// sent) for an empty argv or a word holding a single quote, a control byte
// or invalid UTF-8 — bytes the grammar cannot carry.
func Quote(argv []string) (string, error) {
	if len(argv) == 0 {
		return "", refusef(CodeEmptyCommand, "no command to send")
	}
	var b strings.Builder
	for i, w := range argv {
		if err := checkWordBytes(w); err != nil {
			return "", err
		}
		if strings.IndexByte(w, '\'') >= 0 {
			return "", refusef(CodeForbiddenCharacter, "word %d holds a single quote, which the channel grammar cannot carry", i+1)
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		if w != "" && isPlain(w) {
			b.WriteString(w)
			continue
		}
		b.WriteByte('\'')
		b.WriteString(w)
		b.WriteByte('\'')
	}
	return b.String(), nil
}

func isPlain(w string) bool {
	for i := 0; i < len(w); i++ {
		if !plainByte(w[i]) {
			return false
		}
	}
	return true
}

// checkWordBytes refuses bytes that are not allowed even inside quotes.
func checkWordBytes(w string) error {
	if !utf8.ValidString(w) {
		return refusef(CodeForbiddenCharacter, "invalid UTF-8")
	}
	for i := 0; i < len(w); i++ {
		if c := w[i]; c < 0x20 || c == 0x7f {
			return refusef(CodeForbiddenCharacter, "forbidden control character %s", strconv.QuoteRune(rune(c)))
		}
	}
	return nil
}

// splitWords splits a command line by the channel's quoting grammar: words
// separated by spaces, each a run of plain bytes and single-quoted segments.
// Everything else — double quotes, backslashes, shell operators, globs,
// control bytes — is refused, as is a word with a ".." path segment.
func splitWords(s string) ([]string, error) {
	if len(s) > MaxCommandBytes {
		return nil, refusef(CodeTooLong, "command is %d bytes, the bound is %d", len(s), MaxCommandBytes)
	}
	if err := checkWordBytes(s); err != nil {
		return nil, err
	}
	var words []string
	i := 0
	for {
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i == len(s) {
			break
		}
		var b strings.Builder
		for i < len(s) && s[i] != ' ' {
			c := s[i]
			switch {
			case c == '\'':
				j := strings.IndexByte(s[i+1:], '\'')
				if j < 0 {
					return nil, refusef(CodeUnbalancedQuote, "single quote at offset %d is never closed", i)
				}
				b.WriteString(s[i+1 : i+1+j])
				i += j + 2
			case plainByte(c):
				b.WriteByte(c)
				i++
			default:
				r, _ := utf8.DecodeRuneInString(s[i:])
				return nil, refusef(CodeForbiddenCharacter, "forbidden character %s at offset %d outside single quotes", strconv.QuoteRune(r), i)
			}
		}
		w := b.String()
		if hasDotDotSegment(w) {
			return nil, refusef(CodePathTraversal, "word %d %s holds a \"..\" segment", len(words)+1, strconv.Quote(w))
		}
		words = append(words, w)
		if len(words) > MaxWords {
			return nil, refusef(CodeTooLong, "more than %d words", MaxWords)
		}
	}
	if len(words) == 0 {
		return nil, refusef(CodeEmptyCommand, "no command: the channel runs one of its verbs, never a login shell")
	}
	return words, nil
}

// hasDotDotSegment reports a ".." between separators ('/' of a path, '=' of
// a KEY=VALUE pair) or at either end.
func hasDotDotSegment(w string) bool {
	for _, part := range strings.FieldsFunc(w, func(r rune) bool { return r == '/' || r == '=' }) {
		if part == ".." {
			return true
		}
	}
	return false
}

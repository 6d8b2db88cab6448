package sshclient

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// HostConfig is what ~/.ssh/config says about one host alias: the four
// keywords the channel honours. Zero values mean the config is silent.
type HostConfig struct {
	HostName      string
	Port          int
	User          string
	IdentityFiles []string // raw, before token expansion, in config order
}

// SSHConfig is a parsed ssh_config file. Only HostName, Port, User and
// IdentityFile are read (other keywords are skipped); Host blocks with
// '*', '?' and '!' patterns and Include (with globs, relative to ~/.ssh) are
// understood. A Match block other than "Match all" never applies: the
// channel cannot evaluate its criteria, and guessing would be worse.
//
// The parser is written here rather than taken from a library because the
// four keywords are all the channel needs, because a malformed line must be
// refused naming its file and line (not skipped), and because no ssh_config
// module is among the project's vetted dependencies.
type SSHConfig struct {
	blocks []configBlock
}

type configBlock struct {
	patterns []string // nil: applies to every host (before the first Host, or Match all)
	never    bool     // a Match block the channel cannot evaluate
	settings []configSetting
}

type configSetting struct {
	key, value string
	file       string
	line       int
}

// ConfigError is a malformed ssh_config line.
type ConfigError struct {
	File string
	Line int
	Msg  string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("ssh config %s:%d: %s", e.File, e.Line, e.Msg)
}

const maxIncludeDepth = 16

// LoadSSHConfig parses the ssh_config at path. A missing file is an empty
// config, not an error. Errors are *ConfigError or I/O errors naming the file.
func LoadSSHConfig(path string) (*SSHConfig, error) {
	c := &SSHConfig{blocks: []configBlock{{}}}
	if err := c.parseFile(path, filepath.Dir(path), 0, true); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *SSHConfig) parseFile(path, sshDir string, depth int, top bool) error {
	f, err := os.Open(path)
	if err != nil {
		if top && errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("read ssh config: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		key, args, err := splitConfigLine(line)
		if err != nil {
			return &ConfigError{File: path, Line: n, Msg: err.Error()}
		}
		bad := func(format string, a ...any) error {
			return &ConfigError{File: path, Line: n, Msg: fmt.Sprintf(format, a...)}
		}
		switch key {
		case "host":
			if len(args) == 0 {
				return bad("Host needs at least one pattern")
			}
			pats := make([]string, len(args))
			for i, a := range args {
				pats[i] = strings.ToLower(a)
			}
			c.blocks = append(c.blocks, configBlock{patterns: pats})
		case "match":
			if len(args) == 1 && strings.EqualFold(args[0], "all") {
				c.blocks = append(c.blocks, configBlock{})
			} else {
				c.blocks = append(c.blocks, configBlock{never: true})
			}
		case "include":
			if len(args) == 0 {
				return bad("Include needs a file")
			}
			if depth >= maxIncludeDepth {
				return bad("Include nested more than %d deep", maxIncludeDepth)
			}
			for _, a := range args {
				p := expandTilde(a)
				if !filepath.IsAbs(p) {
					p = filepath.Join(sshDir, p)
				}
				matches, err := filepath.Glob(p)
				if err != nil {
					return bad("Include pattern %q: %v", a, err)
				}
				for _, m := range matches {
					if err := c.parseFile(m, sshDir, depth+1, false); err != nil {
						return err
					}
				}
			}
		case "hostname", "user", "identityfile":
			if len(args) != 1 {
				return bad("%s takes one value, got %d", key, len(args))
			}
			c.add(configSetting{key: key, value: args[0], file: path, line: n})
		case "port":
			if len(args) != 1 {
				return bad("Port takes one value, got %d", len(args))
			}
			if p, err := strconv.Atoi(args[0]); err != nil || p < 1 || p > 65535 {
				return bad("Port %q is not a number from 1 to 65535", args[0])
			}
			c.add(configSetting{key: key, value: args[0], file: path, line: n})
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read ssh config %s: %w", path, err)
	}
	return nil
}

func (c *SSHConfig) add(s configSetting) {
	b := &c.blocks[len(c.blocks)-1]
	b.settings = append(b.settings, s)
}

// splitConfigLine splits "Keyword value..." or "Keyword=value" with double
// quoted arguments, as ssh_config(5) writes them.
func splitConfigLine(line string) (string, []string, error) {
	i := strings.IndexAny(line, " \t=")
	if i < 0 {
		return strings.ToLower(line), nil, nil
	}
	key := strings.ToLower(line[:i])
	rest := strings.TrimLeft(line[i:], " \t")
	if strings.HasPrefix(rest, "=") {
		rest = strings.TrimLeft(rest[1:], " \t")
	}
	var args []string
	for rest != "" {
		if rest[0] == '"' {
			j := strings.IndexByte(rest[1:], '"')
			if j < 0 {
				return "", nil, errors.New("unbalanced double quote")
			}
			args = append(args, rest[1:1+j])
			rest = rest[j+2:]
		} else {
			j := strings.IndexAny(rest, " \t")
			if j < 0 {
				j = len(rest)
			}
			args = append(args, rest[:j])
			rest = rest[j:]
		}
		rest = strings.TrimLeft(rest, " \t")
	}
	return key, args, nil
}

// Lookup returns what the config says for alias: the first HostName, Port
// and User of the blocks that apply, and every IdentityFile of them in order.
func (c *SSHConfig) Lookup(alias string) HostConfig {
	var hc HostConfig
	if c == nil {
		return hc
	}
	for _, b := range c.blocks {
		if !b.applies(strings.ToLower(alias)) {
			continue
		}
		for _, s := range b.settings {
			switch s.key {
			case "hostname":
				if hc.HostName == "" {
					hc.HostName = s.value
				}
			case "port":
				if hc.Port == 0 {
					hc.Port, _ = strconv.Atoi(s.value)
				}
			case "user":
				if hc.User == "" {
					hc.User = s.value
				}
			case "identityfile":
				hc.IdentityFiles = append(hc.IdentityFiles, s.value)
			}
		}
	}
	return hc
}

func (b configBlock) applies(host string) bool {
	if b.never {
		return false
	}
	if b.patterns == nil {
		return true
	}
	matched := false
	for _, p := range b.patterns {
		if neg, ok := strings.CutPrefix(p, "!"); ok {
			if globMatch(neg, host) {
				return false
			}
		} else if globMatch(p, host) {
			matched = true
		}
	}
	return matched
}

// globMatch matches ssh_config patterns: '*' any run, '?' one byte.
func globMatch(pattern, s string) bool {
	if pattern == "" {
		return s == ""
	}
	switch pattern[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if globMatch(pattern[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return s != "" && globMatch(pattern[1:], s[1:])
	default:
		return s != "" && s[0] == pattern[0] && globMatch(pattern[1:], s[1:])
	}
}

func expandTilde(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, p[1:])
		}
	}
	return p
}

// expandTokens expands ~ and the %-tokens ssh_config allows in IdentityFile:
// %d home, %u local user, %h host name, %r remote user, %n alias, %%.
func expandTokens(s, alias, hostName, remoteUser string) (string, error) {
	s = expandTilde(s)
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 == len(s) {
			return "", fmt.Errorf("%q ends in a lone %%", s)
		}
		i++
		switch s[i] {
		case '%':
			b.WriteByte('%')
		case 'd':
			home, err := os.UserHomeDir()
			if err != nil {
				return "", err
			}
			b.WriteString(home)
		case 'u':
			b.WriteString(localUser())
		case 'h':
			b.WriteString(hostName)
		case 'r':
			b.WriteString(remoteUser)
		case 'n':
			b.WriteString(alias)
		default:
			return "", fmt.Errorf("%q uses token %%%c, which the channel does not expand", s, s[i])
		}
	}
	return b.String(), nil
}

func localUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return strconv.Itoa(os.Getuid())
}

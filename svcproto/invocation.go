package svcproto

import (
	"runtime"

	"github.com/wisent/stado/declaration"
)

// Node is what the host running an operation says about itself.
type Node struct {
	// ID is the node's id: the registry target this host is.
	ID string
	// OS is the host's OS (declaration.OSLinux, OSDarwin).
	OS string
	// Path is the PATH operations get.
	Path string
	// ScopeUser is the account a user-scope unit belongs to on this host
	// (the target's SSH user).
	ScopeUser string
}

// Platform is the node's platform token for goos on this machine's
// architecture (linux-amd64, darwin-arm64).
func Platform(goos string) string { return goos + "-" + runtime.GOARCH }

// Invocation is how the agent would run s's protocol operations on node:
// the protocol's environment (Environment.Environ) with values from the
// declaration's protocol block and the node, cwd the bundle root, and the
// unit's account — the scope's user for a user-scope declaration, the
// declared user: of a system one, else this process's own. An account that
// cannot be looked up is an error naming it. s.Protocol must not be nil.
func Invocation(s declaration.Service, node Node) (env []string, opts Options, err error) {
	sp := s.Protocol
	settings, tools, limits := sp.Files(s.Name)
	e := Environment{Service: s.Name, Module: sp.ModuleName(s.Name), ModuleData: sp.DataDir(s.Name),
		NodeID: node.ID, Platform: Platform(node.OS), SettingsFile: settings, ToolsFile: tools, LimitsFile: limits}
	opts.Dir = sp.BundleRoot()
	account := s.User
	if s.EffectiveScope() == declaration.ScopeUser {
		account = node.ScopeUser
	}
	if account != "" {
		if opts.Credential, err = CredentialOf(account); err != nil {
			return nil, Options{}, err
		}
	}
	return e.Environ(node.Path, s.Env), opts, nil
}

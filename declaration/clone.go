package declaration

import (
	"maps"
	"slices"
)

// Clone returns a deep copy of s: changing the copy never changes s.
func (s Service) Clone() Service {
	s.Args = slices.Clone(s.Args)
	s.SecretArgs = slices.Clone(s.SecretArgs)
	if s.Env != nil {
		s.Env = maps.Clone(s.Env)
	}
	if s.KeepAlive != nil {
		k := *s.KeepAlive
		s.KeepAlive = &k
	}
	s.UnitSettings = s.UnitSettings.Clone()
	if s.Protocol != nil {
		sp := *s.Protocol
		sp.Exec = slices.Clone(sp.Exec)
		s.Protocol = &sp
	}
	return s
}

// Clone returns a deep copy of u: no slice, map or pointer is shared, so
// Update's function may change a declaration's settings without touching
// the document it was read from.
func (u UnitSettings) Clone() UnitSettings {
	c := u
	c.StadoDefaults = cloneBool(u.StadoDefaults)
	c.Delegate = cloneBool(u.Delegate)
	c.StartLimitBurst = cloneInt(u.StartLimitBurst)
	c.Nice = cloneInt(u.Nice)
	c.IOSchedulingPriority = cloneInt(u.IOSchedulingPriority)
	for _, s := range []*[]string{&c.ExecStartPre, &c.ExecStartPost, &c.ExecReload, &c.ExecStop, &c.ExecStopPost,
		&c.EnvironmentFiles, &c.After, &c.Before, &c.Wants, &c.Requires, &c.WantedBy, &c.RequiredBy} {
		*s = slices.Clone(*s)
	}
	c.SystemdKeys = slices.Clone(u.SystemdKeys)
	if u.Limits != nil {
		c.Limits = maps.Clone(u.Limits)
	}
	if u.LaunchdKeys != nil {
		c.LaunchdKeys = maps.Clone(u.LaunchdKeys)
	}
	return c
}

func cloneBool(b *bool) *bool {
	if b == nil {
		return nil
	}
	v := *b
	return &v
}

func cloneInt(i *int) *int {
	if i == nil {
		return nil
	}
	v := *i
	return &v
}

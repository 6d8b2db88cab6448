package declaration

import "strings"

// MaxEnvNameBytes bounds an environment variable name.
const MaxEnvNameBytes = 128

// CheckEnvName reports whether name is an environment variable name stado
// accepts anywhere (a declaration's env, a product's env, a repair step's
// needs and payload env, a channel KEY=VALUE): a letter or '_' first, then
// letters, digits and '_', at most MaxEnvNameBytes. Lower-case letters are
// allowed (http_proxy is a real name). The error is a *NameError.
func CheckEnvName(name string) error {
	if !Grammar(name, envFirst, envRest, MaxEnvNameBytes) {
		return nameErrorf(name, "%q is not an environment variable name (a letter or '_' first, then letters, digits and '_'; at most %d bytes)", name, MaxEnvNameBytes)
	}
	return nil
}

// reservedEnvNames are the names ReservedEnvName refuses outright.
var reservedEnvNames = map[string]bool{
	"PATH": true, "IFS": true, "ENV": true, "BASH_ENV": true, "SHELLOPTS": true, "HOME": true,
}

// ReservedEnvName reports whether name is one a caller may not hand to a
// program stado runs on a host: PATH, IFS, ENV, BASH_ENV, SHELLOPTS, HOME
// and every LD_* and DYLD_* name, which choose what code runs, how a shell
// parses, or where the program finds its files. It applies to values that
// cross the channel from a caller (a repair step's needs, sent as
// repair-step KEY=VALUE), not to the environment an operator declares for
// a service or a product in the registry or the catalog, which is written
// into the unit as declared (a declaration may well set HOME).
func ReservedEnvName(name string) bool {
	return reservedEnvNames[name] || strings.HasPrefix(name, "LD_") || strings.HasPrefix(name, "DYLD_")
}

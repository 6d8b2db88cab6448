// Package declaration owns what one service's declaration is and what it
// may say: the Service type with its unit settings, limits and protocol
// block; the grammar of unit names, launchd labels, unit paths and
// directories, environment variable names, time spans and limit values;
// and ValidateService, which checks one declaration for a target's OS and
// reports each violation at a path relative to the service
// ("exec_start_pre[0]", "env.FOO").
//
// registry validates every service of a document through it, prefixing the
// service's path; units validates the declaration it renders or adopts
// through it; catalog and channel check names and paths with its grammar.
//
// It is a leaf: it imports no stado package, only the standard library, so
// that every package that handles a declaration, registry included, may
// use it.
package declaration
